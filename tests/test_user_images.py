"""Users' own image folders (`--perf-images`): labels, hashes, bad files named."""

from __future__ import annotations

import re
from pathlib import Path

# numpy and PIL are imported here, before any in-process inner pytest run, so those runs
# find them loaded instead of importing (and later unloading) them.
import numpy as np
import pytest
from PIL import Image

from perfsuite.data.datasets import describe_folder
from perfsuite.errors import PerfsuiteError
from tests.snapshots import snapshot

pytest_plugins = ("pytester",)


# -- a user's own folder ---------------------------------------------------------------------


def make_jpeg(path: Path, value: int = 0, size: tuple[int, int] = (232, 224)) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    ramp = np.linspace(0, 255, size[0] * size[1] * 3).reshape(size[1], size[0], 3)
    Image.fromarray(((ramp + value) % 256).astype(np.uint8)).save(path, quality=90)


def user_folder(root: Path) -> Path:
    folder = root / "photos"
    make_jpeg(folder / "dog" / "b.jpg", 1)
    make_jpeg(folder / "cat" / "a.jpg", 2)
    make_jpeg(folder / "cat" / "c.JPEG", 3)
    make_jpeg(folder / "dog" / "nested" / "d.jpeg", 4)
    (folder / "README.txt").write_text("not an image: ignored")
    return folder


def test_user_folder_labels_from_subfolders(tmp_path: Path) -> None:
    folder = user_folder(tmp_path)
    before = snapshot(folder)
    ds = describe_folder(folder, tmp_path / "data")
    assert ds.root == folder.resolve()
    assert ds.name == "user:photos"
    assert not ds.synthetic
    assert ds.recipe is None
    assert ds.class_names == ("cat", "dog")
    rel = [str(p.relative_to(ds.root)) for p in ds.files]
    assert rel == ["cat/a.jpg", "cat/c.JPEG", "dog/b.jpg", "dog/nested/d.jpeg"]
    assert ds.labels == (0, 0, 1, 1)
    assert ds.total_bytes == sum(p.stat().st_size for p in ds.files)
    assert ds.file_list.read_text() == "".join(
        f"{r} {label}\n" for r, label in zip(rel, ds.labels, strict=True)
    )
    assert ds.file_list.is_relative_to(tmp_path / "data")
    assert snapshot(folder) == before  # nothing written into the user's folder
    assert len(ds.recipe_hash) == 64


def test_user_folder_hash_follows_the_content(tmp_path: Path) -> None:
    folder = user_folder(tmp_path)
    first = describe_folder(folder, tmp_path / "data")
    assert describe_folder(folder, tmp_path / "data").recipe_hash == first.recipe_hash
    make_jpeg(folder / "cat" / "a.jpg", 99)
    assert describe_folder(folder, tmp_path / "data").recipe_hash != first.recipe_hash


def test_user_folder_top_level_files_get_one_class(tmp_path: Path) -> None:
    make_jpeg(tmp_path / "flat" / "x.jpg")
    ds = describe_folder(tmp_path / "flat", tmp_path / "data")
    assert ds.class_names == (".",)
    assert ds.labels == (0,)


def _truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garbage(path: Path) -> None:
    path.write_bytes(b"this is not a JPEG at all")


def _png(path: Path) -> None:
    Image.new("RGB", (8, 8)).save(path, format="PNG")


@pytest.mark.parametrize(
    ("spoil", "fragment"),
    [
        (_truncated, "corrupt or truncated JPEG"),
        (_garbage, "corrupt or truncated JPEG"),
        (_png, "is PNG, not a JPEG"),
    ],
)
def test_bad_file_in_user_folder_is_named(tmp_path: Path, spoil: object, fragment: str) -> None:
    folder = user_folder(tmp_path)
    bad = folder / "dog" / "b.jpg"
    assert callable(spoil)
    spoil(bad)
    with pytest.raises(PerfsuiteError) as info:
        describe_folder(folder, tmp_path / "data")
    message = str(info.value)
    assert message.startswith(f"{bad.resolve()}: {fragment}")
    assert "fix or remove it" in message or "remove it" in message


@pytest.mark.parametrize(
    ("setup", "fragment"),
    [
        ("missing", "folder does not exist"),
        ("empty", "no .jpg or .jpeg files found"),
        ("file", "not a folder"),
        ("text-only", "no .jpg or .jpeg files found"),
    ],
)
def test_unusable_user_folder_is_named(tmp_path: Path, setup: str, fragment: str) -> None:
    folder = tmp_path / "photos"
    if setup == "empty":
        folder.mkdir()
    elif setup == "file":
        folder.write_text("x")
    elif setup == "text-only":
        folder.mkdir()
        (folder / "notes.txt").write_text("x")
    with pytest.raises(PerfsuiteError, match=re.escape(f"--perf-images {folder}: {fragment}")):
        describe_folder(folder, tmp_path / "data")


def test_too_small_image_in_user_folder_is_named(tmp_path: Path) -> None:
    make_jpeg(tmp_path / "photos" / "cat" / "a.jpg")
    make_jpeg(tmp_path / "photos" / "cat" / "tiny.jpg", size=(300, 200))
    with pytest.raises(PerfsuiteError, match=r"tiny\.jpg: 300x200 px is smaller than the 224x224"):
        describe_folder(tmp_path / "photos", tmp_path / "cache")


def test_whitespace_in_user_path_is_named(tmp_path: Path) -> None:
    make_jpeg(tmp_path / "photos" / "my cat" / "a.jpg")
    with pytest.raises(PerfsuiteError, match="whitespace in the path"):
        describe_folder(tmp_path / "photos", tmp_path / "data")


# -- --perf-images through pytest ----------------------------------------------------------

SENTINEL_TEST = """
from pathlib import Path

def test_uses_the_folder(image_dataset):
    Path("ran").write_text(str(image_dataset.count))
"""


def test_perf_images_happy_path(
    pytester: pytest.Pytester, inner_args: list[str], perf_data_dir: Path
) -> None:
    folder = user_folder(pytester.path)
    pytester.makepyfile(
        test_inner=f"""
        from pathlib import Path

        def test_user_dataset(image_dataset, make_image_dataset):
            folder = Path({str(folder)!r}).resolve()
            assert image_dataset.root == folder
            assert image_dataset.class_names == ("cat", "dog")
            assert image_dataset.labels == (0, 0, 1, 1)
            assert image_dataset.count == 4
            assert image_dataset.recipe is None
            assert image_dataset.file_list.is_relative_to(Path({str(perf_data_dir)!r}))
            assert not (folder / "file_list.txt").exists()
            assert image_dataset.file_list.read_text().splitlines()[0] == "cat/a.jpg 0"
            assert image_dataset.extra_info()["dataset"] == "user:photos"
            # other recipes are still synthetic
            assert make_image_dataset("fixed-224", count=2, width=16, height=16).count == 2
    """
    )
    result = pytester.runpytest_subprocess(
        *inner_args, f"--perf-images={folder}", "--perf-scale=smoke", timeout=120
    )
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("problem", ["corrupt", "truncated", "empty", "missing"])
def test_bad_perf_images_is_a_usage_error_before_any_test(
    pytester: pytest.Pytester, inner_args: list[str], problem: str
) -> None:
    folder = pytester.path / "photos"
    bad = folder / "dog" / "b.jpg"
    if problem in {"corrupt", "truncated"}:
        user_folder(pytester.path)
        (_garbage if problem == "corrupt" else _truncated)(bad)
        expected = f"{bad}: corrupt or truncated JPEG"
    elif problem == "empty":
        folder.mkdir()
        expected = f"--perf-images {folder}: no .jpg or .jpeg files found"
    else:
        expected = f"--perf-images {folder}: folder does not exist"
    pytester.makepyfile(test_inner=SENTINEL_TEST)
    # in-process is safe here: numpy and PIL are already loaded by this module
    result = pytester.runpytest(*inner_args, f"--perf-images={folder}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {expected}" in str(result.stderr)
    assert "Traceback" not in str(result.stderr) + str(result.stdout)
    assert not (pytester.path / "ran").exists()
