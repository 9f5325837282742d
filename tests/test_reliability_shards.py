"""The TFRecord shard count follows the dataset: never more shards than images."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfsuite.data.tfrecords import shard_count
from perfsuite.errors import PerfsuiteError

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("images", "wanted", "expected"), [(1, 2, 1), (3, 4, 3), (4, 4, 4), (100, 16, 16), (1, 1, 1)]
)
def test_shard_count_never_exceeds_the_images(images: int, wanted: int, expected: int) -> None:
    assert shard_count(images, wanted) == expected


@pytest.mark.parametrize("wanted", [0, -1, True, 2.0])
def test_shard_count_refuses_a_bad_request(wanted: object) -> None:
    with pytest.raises(PerfsuiteError, match=r"tfrecord shards=.*whole number >= 1"):
        shard_count(5, wanted)  # type: ignore[arg-type]


def test_one_image_folder_runs_the_tfrecord_bench(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    from PIL import Image

    images = tmp_path / "images" / "cats"
    images.mkdir(parents=True)
    Image.new("RGB", (256, 240), (120, 30, 60)).save(images / "a.jpg")
    cache = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTEST_ADDOPTS", None)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "benches/bench_tfdata.py",
            "-k",
            "test_tfdata and tfrecord",
            "--perf-scale=smoke",
            f"--perf-images={images.parent}",
            f"--perf-data-dir={cache}",
            "-p",
            "no:cacheprovider",
            "-q",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "1 passed" in result.stdout
    (folder,) = cache.glob("user-*.tfrecords-*")
    assert folder.name.endswith(".tfrecords-1")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert [entry["records"] for entry in manifest["shards"]] == [1]
