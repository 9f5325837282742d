"""Synthetic JPEG datasets: determinism, cache reuse and repair, concurrency."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

# numpy and PIL are imported here, before any in-process inner pytest run, so those runs
# find them loaded instead of importing (and later unloading) them.
import numpy as np
import pytest
from PIL import Image, JpegImagePlugin

from perfsuite.data.datasets import (
    FILE_LIST,
    MANIFEST,
    ImageDataset,
    ensure_writable,
    load_verified,
    materialize,
)
from perfsuite.data.imagegen import render_jpeg
from perfsuite.data.recipes import Recipe, load_recipe
from perfsuite.errors import PerfsuiteError
from tests.snapshots import snapshot

pytest_plugins = ("pytester",)

LINE = re.compile(r"^class_(\d{3})/(\d{6})\.jpg (\d+)$")


def tiny(**overrides: object) -> Recipe:
    """A fast recipe: a few small photo-like JPEGs in three classes."""
    values: dict[str, object] = {"count": 8, "width": [48, 64], "height": [40, 56], "classes": 3}
    values.update(overrides)
    return load_recipe("imagenet-like", "smoke").with_overrides(**values)


def leftovers(data_dir: Path) -> list[str]:
    return sorted(
        p.name for p in data_dir.iterdir() if ".build-" in p.name or p.name.startswith(".trash-")
    )


def dataset_dirs(data_dir: Path) -> list[str]:
    return sorted(p.name for p in data_dir.iterdir() if p.is_dir() and not p.name.startswith("."))


@pytest.fixture
def built(tmp_path: Path) -> ImageDataset:
    return materialize(tiny(), tmp_path / "data")


# -- what a generated dataset holds ------------------------------------------------------


def test_fields(built: ImageDataset) -> None:
    recipe = tiny()
    assert built.recipe == recipe
    assert built.name == "imagenet-like"
    assert built.synthetic
    assert built.count == recipe.count == len(built.files) == len(built.labels)
    assert built.root.name == recipe.dirname
    assert built.recipe_hash == recipe.hash
    assert built.class_names == ("class_000", "class_001", "class_002")
    assert built.num_classes == 3
    assert built.labels == tuple(recipe.label(i) for i in range(recipe.count))
    assert built.files == tuple(built.root / recipe.relpath(i) for i in range(recipe.count))
    assert built.total_bytes == sum(p.stat().st_size for p in built.files)
    assert built.file_list == built.root / FILE_LIST
    assert built.extra_info() == {
        "dataset": "imagenet-like",
        "dataset_hash": recipe.hash,
        "dataset_images": recipe.count,
        "dataset_bytes": built.total_bytes,
    }


def test_file_list_matches_the_files_and_labels(built: ImageDataset) -> None:
    lines = built.file_list.read_text().splitlines()
    assert len(lines) == built.count
    for line, path, label in zip(lines, built.files, built.labels, strict=True):
        match = LINE.match(line)
        assert match, line
        assert int(match[1]) == label == int(match[3])
        assert built.root / line.split(" ")[0] == path
        assert path.parent.name == built.class_names[label]


def test_manifest_records_recipe_and_every_file(built: ImageDataset) -> None:
    manifest = json.loads((built.root / MANIFEST).read_text())
    assert manifest["recipe"] == json.loads(json.dumps(tiny().to_dict()))
    assert manifest["total_bytes"] == built.total_bytes
    assert [e["path"] for e in manifest["files"]] == [
        str(p.relative_to(built.root)) for p in built.files
    ]
    for entry in manifest["files"]:
        data = (built.root / entry["path"]).read_bytes()
        assert entry["bytes"] == len(data)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()


def test_images_decode_to_the_recipe_shapes(built: ImageDataset) -> None:
    recipe = tiny()
    for index, path in enumerate(built.files):
        with Image.open(path) as image:
            assert image.format == "JPEG"
            assert image.mode == "RGB"
            height, width = recipe.shape(index)
            assert image.size == (width, height)
            assert JpegImagePlugin.get_sampling(image) == 2  # 4:2:0
            image.load()


def test_subsampling_and_quality_reach_the_files(tmp_path: Path) -> None:
    recipe = tiny(count=1, subsampling="4:4:4", quality=50)
    data = render_jpeg(recipe, 0)
    with Image.open(io.BytesIO(data)) as image:
        assert JpegImagePlugin.get_sampling(image) == 0
    assert len(data) < len(render_jpeg(tiny(count=1, subsampling="4:4:4", quality=95), 0))


def test_photo_like_sizes() -> None:
    """Imagenet-like items are sized like photos (tens of KB), far below white noise."""
    recipe = load_recipe("imagenet-like", "smoke").with_overrides(count=12)
    sizes = [len(render_jpeg(recipe, i)) for i in range(recipe.count)]
    mean_kb = sum(sizes) / len(sizes) / 1024
    assert 25 <= mean_kb <= 120, mean_kb
    assert min(sizes) > 8 * 1024  # not flat colour either
    noise = np.random.default_rng(0).integers(0, 256, (400, 400, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(noise).save(out, format="JPEG", quality=recipe.quality, subsampling=2)
    noise_kb_at_mean_area = (
        len(out.getvalue())
        / 1024
        * (sum(h * w for h, w in recipe.shapes()) / len(sizes) / (400 * 400))
    )
    assert mean_kb < 0.5 * noise_kb_at_mean_area


# -- determinism ----------------------------------------------------------------------------


def test_two_generations_are_byte_identical(tmp_path: Path) -> None:
    first = materialize(tiny(), tmp_path / "a")
    second = materialize(tiny(), tmp_path / "b")
    assert snapshot(first.root) == snapshot(second.root)
    assert first.root != second.root
    manifests = [json.loads((d.root / MANIFEST).read_text()) for d in (first, second)]
    assert [e["sha256"] for e in manifests[0]["files"]] == [
        e["sha256"] for e in manifests[1]["files"]
    ]


def test_parallel_and_serial_generation_agree(tmp_path: Path) -> None:
    recipe = tiny(count=32, width=[24, 40], height=[24, 40])
    serial = materialize(recipe, tmp_path / "serial", workers=1)
    parallel = materialize(recipe, tmp_path / "parallel", workers=2)
    assert snapshot(serial.root) == snapshot(parallel.root)


def test_render_is_a_pure_function() -> None:
    recipe = tiny()
    assert render_jpeg(recipe, 3) == render_jpeg(recipe, 3)
    assert render_jpeg(recipe, 3) != render_jpeg(recipe, 4)
    assert render_jpeg(recipe, 3) != render_jpeg(recipe.with_overrides(seed=1), 3)


# -- the cache ---------------------------------------------------------------------------------


def _stats(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_ino, p.stat().st_mtime_ns) for p in root.rglob("*")
    }


def test_reuse_does_not_rewrite(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = materialize(tiny(), data)
    before, listing = _stats(first.root), sorted(os.listdir(data))
    second = materialize(tiny(), data)
    assert second == first
    assert _stats(second.root) == before
    assert sorted(os.listdir(data)) == listing


def test_verification_matches_only_its_recipe(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = materialize(tiny(), data)
    assert materialize(tiny(), data) == first
    assert load_verified(first.root, tiny()) == first
    assert load_verified(first.root, tiny(seed=99)) is None  # another recipe's data


def test_another_recipe_gets_its_own_folder(tmp_path: Path) -> None:
    data = tmp_path / "data"
    one = materialize(tiny(), data)
    two = materialize(tiny(quality=70), data)
    assert one.root != two.root
    assert dataset_dirs(data) == sorted([one.root.name, two.root.name])
    assert load_verified(one.root, tiny()) == one


def _delete(ds: ImageDataset) -> None:
    ds.files[3].unlink()


def _truncate(ds: ImageDataset) -> None:
    path = ds.files[3]
    path.write_bytes(path.read_bytes()[:-100])


def _modify(ds: ImageDataset) -> None:
    path = ds.files[5]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, different content
    path.write_bytes(bytes(data))


def _drop_manifest(ds: ImageDataset) -> None:
    (ds.root / MANIFEST).unlink()


def _corrupt_manifest(ds: ImageDataset) -> None:
    (ds.root / MANIFEST).write_text("{not json")


def _edit_file_list(ds: ImageDataset) -> None:
    lines = ds.file_list.read_text().splitlines()
    ds.file_list.write_text("\n".join(lines[:-1]) + "\n")


def _empty_folder(ds: ImageDataset) -> None:
    for path in ds.files:
        path.unlink()


DAMAGE = {
    "file-deleted": _delete,
    "file-truncated": _truncate,
    "file-modified": _modify,
    "manifest-deleted": _drop_manifest,
    "manifest-corrupt": _corrupt_manifest,
    "file-list-edited": _edit_file_list,
    "images-deleted": _empty_folder,
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_cache_is_rebuilt(tmp_path: Path, damage: str) -> None:
    data = tmp_path / "data"
    original = materialize(tiny(), data)
    good = snapshot(original.root)
    DAMAGE[damage](original)
    assert load_verified(original.root, tiny()) is None
    rebuilt = materialize(tiny(), data)
    assert rebuilt == original
    assert snapshot(rebuilt.root) == good
    assert leftovers(data) == []
    assert dataset_dirs(data) == [original.root.name]


def test_stale_build_folder_is_cleaned_up(tmp_path: Path) -> None:
    data = tmp_path / "data"
    stale = data / f".{tiny().dirname}.build-killed"
    (stale / "class_000").mkdir(parents=True)
    (stale / "class_000" / "000000.jpg").write_bytes(b"half")
    materialize(tiny(), data)
    assert leftovers(data) == []


CONCURRENT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import numpy, PIL.Image  # loaded before the start line, so both start together
    from perfsuite.data.datasets import materialize
    from perfsuite.data.recipes import load_recipe

    data, me, peer = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    recipe = load_recipe("imagenet-like", "smoke").with_overrides(
        count=16, width=[120, 200], height=[120, 200], classes=4)
    me.touch()
    deadline = time.monotonic() + 120
    while not peer.exists():
        if time.monotonic() > deadline:
            sys.exit("the other process never started")
        time.sleep(0.001)
    ds = materialize(recipe, data)
    print(ds.root, ds.recipe_hash, ds.count, ds.total_bytes)
""")


def test_concurrent_generation_ends_with_one_good_copy(tmp_path: Path) -> None:
    data = tmp_path / "data"
    flags = [tmp_path / "ready-0", tmp_path / "ready-1"]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT, str(data), str(flags[i]), str(flags[1 - i])],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    outputs = [p.communicate(timeout=180) for p in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    assert outputs[0][0] == outputs[1][0]
    recipe = load_recipe("imagenet-like", "smoke").with_overrides(
        count=16, width=[120, 200], height=[120, 200], classes=4
    )
    assert dataset_dirs(data) == [recipe.dirname]
    assert leftovers(data) == []
    dataset = load_verified(data / recipe.dirname, recipe)
    assert dataset is not None
    assert outputs[0][0].split() == [str(dataset.root), recipe.hash, "16", str(dataset.total_bytes)]


# -- unwritable cache -------------------------------------------------------------------------


def test_cache_under_a_file_names_it_and_the_option(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder is expected")
    for data in (blocker / "datasets", blocker):
        with pytest.raises(PerfsuiteError) as info:
            materialize(tiny(), data)
        message = str(info.value)
        assert f"dataset cache {data} is not writable" in message
        assert "--perf-data-dir" in message
        assert "perf_data_dir" in message


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_cache_names_it(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        with pytest.raises(PerfsuiteError, match=r"not writable.*--perf-data-dir"):
            ensure_writable(locked / "datasets")
    finally:
        locked.chmod(0o755)


def test_spawned_worker_refuses_to_build(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import multiprocessing

    monkeypatch.setattr(multiprocessing.current_process(), "_inheriting", True, raising=False)
    with pytest.raises(PerfsuiteError, match="__main__"):
        materialize(tiny(), tmp_path)


# -- reuse renders nothing; a repair rebuilds ---------------------------------------------


def test_reuse_never_renders_and_repair_rebuilds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import perfsuite.data.imagegen as imagegen

    data = tmp_path / "data"
    first = materialize(tiny(), data)
    calls: list[int] = []
    original = imagegen.render_jpeg

    def counting(recipe: Recipe, index: int) -> bytes:
        calls.append(index)
        return original(recipe, index)

    monkeypatch.setattr(imagegen, "render_jpeg", counting)
    materialize(tiny(), data)
    assert calls == []
    _delete(first)
    materialize(tiny(), data, workers=1)
    assert sorted(calls) == list(range(tiny().count))  # a repair rebuilds the whole dataset
