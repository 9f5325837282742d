"""Measure ``perfsuite ab`` across an upgrade of perfsuite's own stack: each side in its
own environment. How long a cold build and a warm reuse take, how much disk the two
environments use, and the A/B's verdict.

It clones this repository's HEAD into a temporary folder, commits a change of one pin in
``constraints.txt`` there (``--package pillow --to 12.3.0``), and then:

1. resolves and builds both sides' environments into an empty environment cache (cold;
   uv's own cache is the machine's), timing each;
2. resolves and gets them again (warm: reused), timing each;
3. measures the disk: each environment, both together (a file hard-linked into both
   counts once), and what they add to uv's cache when counted with it;
4. runs ``perfsuite ab BASE CANDIDATE --report DIR -- BENCH_ARGS`` in the clone, with
   the environments warm, and records its exit status, its verdict lines and the
   stack versions each side's saved run records.

Usage::

    python tools/validation/upgrade_check.py [--package pillow] [--to 12.3.0]
        [--bench-args "benches/bench_dali.py -k torch_dataloader"] [--out upgrade_check.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tools/ has no __init__.py
from perfsuite.ab.revisions import tree_files
from perfsuite.envs.build import changes, ensure, resolve
from perfsuite.envs.pins import read_pins
from tests.ab_repo import uv_cache as uv_cache_dir
from tools.validation.user_suite import provenance, provenance_line

REPO = Path(__file__).resolve().parents[2]


def _git(root: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return out.stdout.strip()


def du_bytes(*paths: Path) -> int:
    """Disk used by ``paths`` together, a hard-linked file counted once (``du -s -c``)."""
    out = subprocess.run(
        ["du", "-s", "-c", "-B1", *map(str, paths)], check=True, capture_output=True, text=True
    )
    return int(out.stdout.strip().splitlines()[-1].split()[0])


def bumped_clone(folder: Path, package: str, version: str) -> tuple[Path, str, str]:
    """A clone of HEAD whose next commit pins ``package`` at ``version`` in constraints.txt."""
    clone = folder / "repo"
    _git(REPO, "clone", "--quiet", str(REPO), str(clone))
    _git(clone, "config", "user.email", "check@perfsuite.invalid")
    _git(clone, "config", "user.name", "upgrade check")
    base = _git(clone, "rev-parse", "HEAD")
    path = clone / "constraints.txt"
    text, count = re.subn(
        rf"^{re.escape(package)}==\S+", f"{package}=={version}", path.read_text(), flags=re.M
    )
    if count == 0:
        raise SystemExit(f"constraints.txt pins no {package}: name a pinned package")
    path.write_text(text)
    _git(clone, "commit", "--quiet", "-am", f"bump {package} to {version}")
    return clone, base, _git(clone, "rev-parse", "HEAD")


def environments(clone: Path, shas: list[str], scratch: Path, cache: Path) -> dict[str, Any]:
    """Resolve and get both sides' environments; their seconds and folders."""
    found: dict[str, Any] = {"sides": []}
    resolved = []
    for name, sha in zip("AB", shas, strict=True):
        start = time.monotonic()
        pins = read_pins(tree_files(clone, sha), sha[:10])
        done = resolve(pins, clone, scratch / f"{name}-{time.monotonic_ns()}", sha[:10])
        resolved_s = time.monotonic() - start
        env = ensure(done, clone, sha[:10], root=cache)
        found["sides"].append(
            {
                "side": name,
                "resolve_s": round(resolved_s, 2),
                "get_s": round(time.monotonic() - start, 2),
                "built": env.built,
                "path": str(env.path),
                "pins": len(done.lines),
            }
        )
        resolved.append(done)
    found["changes"] = changes(resolved[0], resolved[1])
    return found


def side_stacks(report: Path) -> dict[str, Any]:
    """The stack versions each side's saved run records (``A.json``, ``B.json``)."""
    found: dict[str, Any] = {}
    for side in "AB":
        path = report / f"{side}.json"
        if path.is_file():
            machine = json.loads(path.read_text()).get("machine_info", {})
            found[side] = machine.get("perfsuite", {}).get("versions")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default="pillow")
    parser.add_argument("--to", default="12.3.0")
    parser.add_argument("--bench-args", default="benches/bench_dali.py -k torch_dataloader")
    parser.add_argument("--out", type=Path, default=Path("upgrade_check.json"))
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"provenance": provenance(REPO), "package": args.package}
    print(provenance_line(result["provenance"]), flush=True)
    with tempfile.TemporaryDirectory(prefix="upgrade-check-") as tmp:
        folder = Path(tmp)
        clone, base, candidate = bumped_clone(folder, args.package, args.to)
        cache = folder / "xdg" / "perfsuite" / "envs"
        for phase in ("cold", "warm"):
            result[phase] = environments(clone, [base, candidate], folder / "scratch", cache)
            for side in result[phase]["sides"]:
                how = "built" if side["built"] else "reused"
                print(
                    f"{phase} side {side['side']}: {how}, {side['get_s']:.1f} s "
                    f"(resolve {side['resolve_s']:.1f} s, {side['pins']} pins)",
                    flush=True,
                )
        paths = [Path(side["path"]) for side in result["warm"]["sides"]]
        uv_cache = uv_cache_dir()
        disk = {
            "a_bytes": du_bytes(paths[0]),
            "b_bytes": du_bytes(paths[1]),
            "both_bytes": du_bytes(*paths),
            "uv_cache_bytes": du_bytes(uv_cache),
            "uv_cache_and_both_bytes": du_bytes(uv_cache, *paths),
        }
        result["disk"] = disk
        gib = {k: round(v / 2**30, 2) for k, v in disk.items()}
        print(f"disk (GiB): {gib}; changes: {result['warm']['changes']}", flush=True)
        env = dict(os.environ, XDG_CACHE_HOME=str(folder / "xdg"))
        env["UV_CACHE_DIR"] = str(uv_cache)
        command = [
            str(Path(sys.executable).parent / "perfsuite"),
            "ab",
            base,
            candidate,
            "--report",
            str(folder / "report"),
            "--",
            *shlex.split(args.bench_args),
        ]
        start = time.monotonic()
        proc = subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True)
        result["ab"] = {
            "command": shlex.join(
                ["perfsuite", "ab", base[:10], candidate[:10], "--", *shlex.split(args.bench_args)]
            ),
            "exit": proc.returncode,
            "seconds": round(time.monotonic() - start, 1),
            "stdout": proc.stdout.splitlines(),
            "stderr": proc.stderr.splitlines()[-5:],
        }
        print(proc.stdout + proc.stderr[-2000:], flush=True)
        result["stacks"] = side_stacks(folder / "report")
        print(f"each side's saved stack: {result['stacks']}", flush=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
