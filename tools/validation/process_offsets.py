"""How far two processes running identical code drift apart, with and without a framework.

Each trial starts two fresh worker processes that decode the same 20 JPEGs with PIL,
single-threaded, and alternates blocks of rounds between them (ABBA..., one process at
a time, as ``perfsuite ab`` does) for ``--pairs`` pairs. A trial's offset is the median
paired change of B over A: both run the same code, so anything but ~0 is a per-process
effect that interleaving cannot cancel. Run for each ``--imports`` mode (``none``, or a
framework the workers import first and never use: ``torch``, ``tensorflow``) and each
``--layouts`` mode, how the workers draw their memory layout with
:func:`perfsuite.ab.remote.shuffle_layout`:

* ``none``: never (both processes lay out their heaps alike);
* ``process``: once, at start (``perfsuite ab`` before it drew one per block);
* ``block``: before every block, as ``perfsuite ab`` does.

Each trial also prints the 10th, 50th and 90th percentiles of each process's block
medians, which show a layout-bound bench's speeds (modes). Usage::

    python tools/validation/process_offsets.py [--trials 8] [--pairs 60]
        [--imports none,torch,tensorflow] [--layouts none,process,block]
"""

from __future__ import annotations

import argparse
import io
import math
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IMAGES = 20


def make_images(folder: Path) -> list[Path]:
    """20 smooth 500x375 RGB JPEGs (quality 90) from a fixed seed."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    paths = []
    for i in range(IMAGES):
        small = rng.integers(0, 256, size=(24, 32, 3), dtype=np.uint8)
        image = Image.fromarray(small).resize((500, 375), Image.Resampling.BICUBIC)
        path = folder / f"{i:02d}.jpg"
        image.save(path, quality=90)
        paths.append(path)
    return paths


def worker(folder: Path, imports: str, layouts: str) -> None:
    """Read block sizes from stdin; per block, one untimed round, then the timed ones."""
    from perfsuite.ab.remote import shuffle_layout

    rng = random.Random()
    if layouts != "none":
        shuffle_layout(rng)
    if imports != "none":
        __import__(imports)
    from PIL import Image

    datas = [p.read_bytes() for p in sorted(folder.glob("*.jpg"))]

    def decode() -> None:
        for data in datas:
            with Image.open(io.BytesIO(data)) as image:
                image.load()

    for _ in range(5):
        decode()
    print("ready", flush=True)
    for line in sys.stdin:
        if layouts == "block":
            shuffle_layout(rng)
        decode()
        times = []
        for _ in range(int(line)):
            start = time.perf_counter()
            decode()
            times.append(time.perf_counter() - start)
        print(" ".join(map(repr, times)), flush=True)


def trial(
    folder: Path, imports: str, layouts: str, pairs: int, rounds: int
) -> tuple[float, list[list[float]]]:
    """One trial's offset (the median paired log-ratio of two fresh processes, B over A)
    and each process's block medians."""
    command = [
        sys.executable,
        __file__,
        "--worker",
        str(folder),
        "--imports",
        imports,
        "--layouts",
        layouts,
    ]
    procs = [
        subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise SystemExit(f"process_offsets: a worker importing {imports} failed")

        def block(i: int) -> float:
            stdin, stdout = procs[i].stdin, procs[i].stdout
            assert stdin is not None
            assert stdout is not None
            stdin.write(f"{rounds}\n")
            stdin.flush()
            return statistics.median(float(t) for t in stdout.readline().split())

        ratios = []
        blocks: list[list[float]] = [[], []]
        for p in range(pairs):
            order = (0, 1) if p % 2 == 0 else (1, 0)
            medians = {i: block(i) for i in order}
            ratios.append(math.log(medians[1] / medians[0]))
            for i in (0, 1):
                blocks[i].append(medians[i])
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    return math.expm1(statistics.median(ratios)), blocks


def _percentiles(values: list[float]) -> str:
    """The 10th/50th/90th percentiles of ``values`` in ms."""
    cuts = statistics.quantiles(values, n=10)
    return "/".join(f"{v * 1000:.1f}" for v in (cuts[0], statistics.median(values), cuts[-1]))


def _at_least_two(value: str) -> int:
    if not value.isdigit() or int(value) < 2:
        raise argparse.ArgumentTypeError(f"invalid pairs {value!r} (a whole number >= 2)")
    return int(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=8, help="process pairs per mode")
    parser.add_argument("--pairs", type=_at_least_two, default=60, help="block pairs per trial")
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds per block")
    parser.add_argument("--imports", default="none,torch,tensorflow")
    parser.add_argument(
        "--layouts", default="block", help="none, process, block (a list; default block, as ab)"
    )
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        worker(args.worker, args.imports, args.layouts)
        return 0
    with tempfile.TemporaryDirectory(prefix="process-offsets-") as tmp:
        folder = Path(tmp)
        make_images(folder)
        modes = [
            (imports.strip(), layouts.strip())
            for imports in args.imports.split(",")
            if imports.strip()
            for layouts in args.layouts.split(",")
            if layouts.strip()
        ]
        offsets: dict[tuple[str, str], list[float]] = {mode: [] for mode in modes}
        for t in range(args.trials):  # the modes interleaved, so a slow minute hits all
            for imports, layouts in modes:
                offset, blocks = trial(folder, imports, layouts, args.pairs, args.rounds)
                offsets[imports, layouts].append(offset)
                print(
                    f"trial {t} imports {imports} layouts {layouts}: {offset * 100:+.1f}%; "
                    f"block medians p10/p50/p90 ms A {_percentiles(blocks[0])}, "
                    f"B {_percentiles(blocks[1])}",
                    flush=True,
                )
        for (imports, layouts), found in offsets.items():
            cells = " ".join(f"{o * 100:+.1f}%" for o in found)
            spread = statistics.stdev(found) * 100 if len(found) > 1 else 0.0
            worst = max(abs(o) for o in found) * 100
            print(
                f"imports {imports} layouts {layouts}: {cells}  "
                f"(sd {spread:.1f}%, largest |offset| {worst:.1f}%)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
