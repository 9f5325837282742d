"""The TensorFlow benches' helpers: TFRecord shards, pipeline builders, trace checks, shares.

TensorFlow-free helpers are tested here directly; what loads TensorFlow runs in one
pytest subprocess (TensorFlow cannot be imported twice in one process).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from perfsuite.data.datasets import ImageDataset
from perfsuite.data.recipes import load_recipe
from perfsuite.data.tfrecords import (
    MANIFEST,
    SHARD_FORMAT,
    load_verified_shards,
    materialize_shards,
    shard_name,
    shard_ranges,
    shards_dirname,
)
from perfsuite.errors import PerfsuiteError

pytest_plugins = ("pytester",)


def test_shard_ranges_split_contiguously_and_evenly() -> None:
    assert shard_ranges(10, 3) == [range(0, 4), range(4, 7), range(7, 10)]
    assert shard_ranges(4, 4) == [range(i, i + 1) for i in range(4)]
    assert shard_ranges(5, 1) == [range(0, 5)]


@pytest.mark.parametrize("shards", [0, 11, -1, True, 2.0])
def test_shard_ranges_reject_bad_counts(shards: object) -> None:
    with pytest.raises(PerfsuiteError, match=r"tfrecord shards=.*from 1 to the dataset's image"):
        shard_ranges(10, shards)  # type: ignore[arg-type]


def _fake_dataset(root: Path, count: int = 4, synthetic: bool = True) -> ImageDataset:
    recipe = load_recipe("imagenet-like", "smoke").with_overrides(count=count)
    files = []
    for i in range(count):
        path = root / f"class_000/{i:06d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"not really a jpeg %d" % i)
        files.append(path)
    return ImageDataset(
        name="imagenet-like",
        root=root,
        files=tuple(files),
        labels=tuple(i % 2 for i in range(count)),
        class_names=("class_000", "class_001"),
        file_list=root / "file_list.txt",
        total_bytes=sum(p.stat().st_size for p in files),
        recipe_hash=recipe.hash if synthetic else "f" * 64,
        recipe=recipe if synthetic else None,
    )


def test_shards_dirname_names_the_dataset_and_the_count(tmp_path: Path) -> None:
    synthetic = _fake_dataset(tmp_path / "a")
    assert synthetic.recipe is not None
    assert shards_dirname(synthetic, 4) == f"{synthetic.recipe.dirname}.tfrecords-4"
    user = _fake_dataset(tmp_path / "b", synthetic=False)
    assert shards_dirname(user, 2) == "user-ffffffffffff.tfrecords-2"


def _write_fake_shards(root: Path, dataset: ImageDataset, shards: int) -> None:
    """Shard files and a manifest as the writer lays them out (contents are opaque here)."""
    root.mkdir(parents=True)
    entries = []
    for index, part in enumerate(shard_ranges(dataset.count, shards)):
        name = shard_name(index, shards)
        data = b"".join(dataset.files[i].read_bytes() for i in part)
        (root / name).write_bytes(data)
        entries.append(
            {
                "path": name,
                "records": len(part),
                "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        )
    manifest = {
        "format": SHARD_FORMAT,
        "dataset": dataset.name,
        "dataset_hash": dataset.recipe_hash,
        "images": dataset.count,
        "shards": entries,
    }
    (root / MANIFEST).write_text(json.dumps(manifest))


def test_verified_shards_are_reused_without_loading_tensorflow(tmp_path: Path) -> None:
    dataset = _fake_dataset(tmp_path / "data")
    root = tmp_path / "cache" / shards_dirname(dataset, 2)
    _write_fake_shards(root, dataset, 2)
    found = load_verified_shards(root, dataset, 2)
    assert found is not None
    assert found.records == (2, 2)
    assert found.count == 4
    assert [p.name for p in found.paths] == [shard_name(0, 2), shard_name(1, 2)]
    had_tf = "tensorflow" in sys.modules
    again = materialize_shards(dataset, tmp_path / "cache", 2)
    assert again == found
    assert ("tensorflow" in sys.modules) == had_tf


@pytest.mark.parametrize(
    "damage", ["truncate", "alter", "delete", "manifest", "other_dataset", "shard_count"]
)
def test_damaged_or_foreign_shards_fail_verification(tmp_path: Path, damage: str) -> None:
    dataset = _fake_dataset(tmp_path / "data")
    root = tmp_path / "shards"
    _write_fake_shards(root, dataset, 2)
    shard = root / shard_name(1, 2)
    shards = 2
    if damage == "truncate":
        shard.write_bytes(shard.read_bytes()[:-1])
    elif damage == "alter":
        data = bytearray(shard.read_bytes())
        data[0] ^= 0xFF
        shard.write_bytes(bytes(data))
    elif damage == "delete":
        shard.unlink()
    elif damage == "manifest":
        (root / MANIFEST).write_text("{not json")
    elif damage == "other_dataset":
        dataset = _fake_dataset(tmp_path / "other", synthetic=False)
    else:
        shards = 3
    assert load_verified_shards(root, dataset, shards) is None


TF_TESTS = r"""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from perfsuite.data.datasets import materialize
from perfsuite.errors import PerfsuiteError
from perfsuite.data.recipes import load_recipe
from perfsuite.data.tfrecords import materialize_shards
from perfsuite.workloads import tf_models
from perfsuite.workloads import tfdata_pipelines as pipes
from perfsuite.bench.traces import tracing_count

pytestmark = pytest.mark.tf


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    recipe = load_recipe("imagenet-like", "smoke").with_overrides(
        count=6, width=[226, 240], height=[224, 236], classes=3)
    return materialize(recipe, tmp_path_factory.mktemp("data"))


def test_tfrecord_shards_round_trip_and_are_reused(tiny, tmp_path):
    shards = materialize_shards(tiny, tmp_path, 4)
    assert shards.records == (2, 2, 1, 1)
    read = [pipes.parse_record(r) for r in tf.data.TFRecordDataset([str(p) for p in shards.paths])]
    assert [bytes(image.numpy()) for image, _ in read] == [p.read_bytes() for p in tiny.files]
    assert [int(label) for _, label in read] == list(tiny.labels)
    stamp = shards.paths[0].stat().st_mtime_ns
    assert materialize_shards(tiny, tmp_path, 4) == shards
    assert shards.paths[0].stat().st_mtime_ns == stamp
    shards.paths[2].write_bytes(b"damaged")
    rebuilt = materialize_shards(tiny, tmp_path, 4)
    assert rebuilt == shards
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f".{shards.root.name}.lock", shards.root.name]


@pytest.mark.parametrize("variant", pipes.VARIANTS)
def test_every_variant_yields_batches_of_crops_in_0_1(tiny, tmp_path, variant):
    spec = pipes.PipelineSpec(batch=4, shuffle_buffer=tiny.count, seed=1,
                              cache_batches=pipes.cache_bound(2, 2, 2),
                              shards=materialize_shards(tiny, tmp_path, 2))
    pipeline = pipes.build(variant, tiny, spec)
    assert pipeline.variant == variant
    assert pipeline.params["tfdata_default_optimizations"] is True
    assert pipeline.params["tfdata_map_parallelization"] is False
    assert pipeline.dataset.options().experimental_optimization.map_parallelization is False
    iterator = pipeline.warm(min_seconds=60.0, max_batches=3)
    assert pipeline.warmed == 3
    batch = pipes.take_batches(iterator, 2)
    if variant == "decode_roofline":
        assert pipeline.dataset.element_spec == tf.TensorSpec([None, 3], tf.int32)
        shapes = {tuple(int(v) for v in row) for row in batch.numpy()}
        expected = {(h, w, 3) for h, w in tiny.recipe.shapes()}
        assert batch.shape == (4, 3) and shapes <= expected
        return
    images, labels = batch
    assert pipeline.dataset.element_spec == (
        tf.TensorSpec([None, 224, 224, 3], tf.float32), tf.TensorSpec([None], tf.float32))
    assert images.shape == (4, 224, 224, 3)
    values = images.numpy()
    assert 0.0 <= values.min() and values.max() <= 1.0 and values.max() > 0.0
    assert set(labels.numpy().tolist()) <= {0.0, 1.0, 2.0}


def test_builders_refuse_what_would_time_the_wrong_thing(tiny):
    with pytest.raises(PerfsuiteError, match="unknown tf.data variant 'nope'"):
        pipes.build("nope", tiny, pipes.PipelineSpec(batch=4, shuffle_buffer=6))
    with pytest.raises(PerfsuiteError, match="cache_batches"):
        pipes.build("cache_after_batch", tiny, pipes.PipelineSpec(batch=4, shuffle_buffer=6))
    with pytest.raises(PerfsuiteError, match="needs PipelineSpec.shards"):
        pipes.build("tfrecord", tiny, pipes.PipelineSpec(batch=4, shuffle_buffer=6))
    with pytest.raises(PerfsuiteError, match="batch must be >= 1"):
        pipes.build("baseline", tiny, pipes.PipelineSpec(batch=0, shuffle_buffer=6))


def test_cache_bound_exceeds_every_batch_a_bench_pulls():
    assert pipes.cache_bound(2, 14, 4) == 2 + 56 + 1
    with pytest.raises(ValueError):
        pipes.cache_bound(2, 0, 4)


def test_input_bound_share_is_total_wait_over_total_call_time():
    assert tf_models.input_bound_share([0.1, 0.2], [0.5, 0.5]) == pytest.approx(0.3)
    assert tf_models.input_bound_share([0.0], [2.0]) == 0.0
    with pytest.raises(ValueError, match="one wait per timed call"):
        tf_models.input_bound_share([0.1], [0.5, 0.5])
    with pytest.raises(ValueError, match="one wait per timed call"):
        tf_models.input_bound_share([], [])
    with pytest.raises(ValueError, match="cannot belong"):
        tf_models.input_bound_share([0.6], [0.5])


def test_trace_problem_flags_counts_that_time_the_wrong_thing():
    variable = [(64, 64), (80, 96), (64, 64), (100, 70)]
    assert tf_models.trace_problem("eager", 0, variable) is None
    assert "expected 0" in tf_models.trace_problem("eager", 1, variable)
    assert tf_models.trace_problem("input_signature", 2, variable) is None
    assert "at most 2" in tf_models.trace_problem("input_signature", 3, variable)
    assert tf_models.trace_problem("tf_function", 3, variable) is None
    assert "at least one trace per distinct" in tf_models.trace_problem("tf_function", 2,
                                                                          variable)
    assert "never traced" in tf_models.trace_problem("reduce_retracing", 0, variable)
    assert tf_models.trace_problem("reduce_retracing", 2, variable) is None
    assert "only 1 distinct" in tf_models.trace_problem("tf_function", 3, [(224, 224)] * 4)


@pytest.mark.parametrize(("mode", "kind", "expected"), [
    ("eager", "forward", [0, 0]),
    ("tf_function", "forward", [2, 2]),
    ("tf_function", "train", [2, 2]),
    ("input_signature", "train", [1, 1]),
    ("reduce_retracing", "forward", None),
])
def test_retracing_run_builds_a_fresh_function_per_call(mode, kind, expected):
    shapes = [(32, 32), (40, 48), (32, 32)]
    run = tf_models.RetracingRun("cnn-1", kind, mode, shapes, batch=2, seed=3)
    assert run.params["distinct_shapes"] == 2 and run.params["steps"] == 3
    traces = []
    for _ in range(2):
        args, kwargs = run.setup()
        out = run.run(*args, **kwargs)
        traces.append(tracing_count(args[0]) if mode != "eager" else 0)
    assert isinstance(out, np.ndarray)
    if expected is not None:
        assert traces == expected
    else:
        assert len(traces) == 2 and 1 <= traces[0] <= 2 and traces[0] == traces[1]
    assert tf_models.trace_problem(mode, traces[-1], shapes) is None


def test_retracing_run_targets_match_the_model_output():
    run = tf_models.RetracingRun("cnn-2", "train", "eager", [(33, 50)], batch=2)
    x, target = run.inputs[0]
    assert x.shape == (2, 33, 50, 3)
    assert target.shape == (2, 9, 13, 16)
    with pytest.raises(PerfsuiteError, match="unknown retracing mode 'jit'"):
        tf_models.RetracingRun("cnn-1", "forward", "jit", [(32, 32)], batch=1)
    with pytest.raises(PerfsuiteError, match="unknown backbone 'cnn-0'"):
        tf_models.RetracingRun("cnn-0", "forward", "eager", [(32, 32)], batch=1)


def test_train_loop_times_each_wait_inside_the_call(tiny):
    loop = tf_models.TrainLoop(tf_models.classifier("small_cnn", tiny.num_classes), 2, 3)
    assert loop.traces == 1
    with pytest.raises(PerfsuiteError, match="iterator is not set"):
        loop()
    spec = pipes.PipelineSpec(batch=2, shuffle_buffer=tiny.count)
    loop.iterator = pipes.build("parallel_map", tiny, spec).warm()
    assert np.isfinite(loop()) and np.isfinite(loop())
    assert len(loop.waits) == 2 and all(w >= 0 for w in loop.waits)
    assert loop.traces == 1
"""


@pytest.mark.tf
def test_tensorflow_helpers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_tf_helpers_inner=TF_TESTS)
    result = pytester.runpytest_subprocess(
        "-q", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning"
    )
    result.assert_outcomes(passed=20)
    assert result.ret == 0
