"""The public fixtures, exercised through pytest: datasets, recipes, settings and trace counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsuite.bench.traces import TraceCounter, tracing_count
from perfsuite.data.recipes import load_recipe
from perfsuite.errors import PerfsuiteError
from perfsuite.verdict.result import SCHEMA_VERSION

pytest_plugins = ("pytester",)

#: a small stand-in for the built-in imagenet-like recipe, found first through --perf-recipes
TINY_IMAGENET = """\
[recipe]
classes = 3
width = [40, 56]
height = [32, 48]
seed = 11

[scale.smoke]
count = 6
"""

DATASET_TESTS = """
from pathlib import Path

import pytest

DATA = Path({data!r})
SEEN = []


def test_perf_settings(perf_settings):
    assert perf_settings.scale.value == "smoke"
    assert perf_settings.device.value == "cpu"
    assert perf_settings.data_dir == DATA
    assert perf_settings.recipes == Path({recipes!r})
    assert perf_settings.images is None


def test_image_dataset_is_the_default_recipe(image_dataset, dataset_recipe):
    recipe = dataset_recipe("imagenet-like")
    assert recipe.source.endswith("recipes/imagenet-like.toml")
    assert image_dataset.recipe == recipe
    assert image_dataset.count == recipe.count == 6
    assert image_dataset.root == DATA / recipe.dirname
    assert image_dataset.class_names == ("class_000", "class_001", "class_002")
    assert image_dataset.labels == (0, 1, 2, 0, 1, 2)
    assert image_dataset.total_bytes == sum(p.stat().st_size for p in image_dataset.files)
    assert image_dataset.file_list.read_text().splitlines()[4] == "class_001/000004.jpg 1"
    SEEN.append(image_dataset)


def test_image_dataset_is_built_once_per_session(image_dataset, make_image_dataset):
    assert SEEN == [image_dataset]
    assert make_image_dataset("imagenet-like") is image_dataset


def test_make_image_dataset_with_overrides(make_image_dataset, dataset_recipe):
    from PIL import Image

    ds = make_image_dataset("fixed-224", count=3, width=32, height=24, quality=70)
    assert ds.count == 3
    assert ds.recipe == dataset_recipe("fixed-224", count=3, width=32, height=24, quality=70)
    assert ds.recipe.scale == "smoke"
    assert ds.recipe_hash != dataset_recipe("fixed-224").hash
    assert ds.root.parent == DATA
    assert make_image_dataset("fixed-224", count=3, width=32, height=24, quality=70) is ds
    with Image.open(ds.files[0]) as image:
        assert image.size == (32, 24)
    again = make_image_dataset(ds.recipe, count=2)  # a Recipe works too
    assert again.count == 2
    assert again.root != ds.root


def test_make_image_dataset_unknown_recipe(make_image_dataset):
    make_image_dataset("imagenet_like")


def test_make_image_dataset_bad_override(make_image_dataset):
    make_image_dataset("fixed-224", count=0)
"""


def test_dataset_fixtures(pytester: pytest.Pytester, perf_data_dir: Path) -> None:
    recipes = pytester.mkdir("recipes")
    (recipes / "imagenet-like.toml").write_text(TINY_IMAGENET)
    pytester.makepyfile(
        test_inner=DATASET_TESTS.format(data=str(perf_data_dir), recipes=str(recipes))
    )
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--strict-markers",
        f"--perf-data-dir={perf_data_dir}",
        f"--perf-recipes={recipes}",
        "--perf-scale=smoke",
        "--perf-device=cpu",
        timeout=180,
    )
    result.assert_outcomes(passed=4, failed=2)
    out = str(result.stdout)
    assert "unknown recipe 'imagenet_like'; known recipes: fixed-224, imagenet-like, " in out
    assert "overrides for recipe 'fixed-224': key 'count' is 0" in out
    assert "Traceback" not in out
    built = sorted(p.name for p in perf_data_dir.iterdir() if not p.name.startswith("."))
    assert len(built) == 3  # the default recipe and the two override sets, nothing else


def test_unwritable_cache_through_the_fixture(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = pytester.path / "blocker"
    blocker.write_text("a file where the cache folder should be")
    data = blocker / "perfsuite" / "datasets"
    pytester.makepyfile(
        test_inner="""
        def test_needs_data(make_image_dataset):
            make_image_dataset("fixed-224", count=1)

        def test_needs_none():
            pass
    """
    )
    # The default cache ($XDG_CACHE_HOME) is checked when a dataset is first needed.
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    # in-process: the cache is checked before anything heavy is imported
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*dataset cache {data} is not writable (*); choose another with --perf-data-dir "
            "or the perf_data_dir ini key*"
        ]
    )
    # A cache given with --perf-data-dir is checked at startup, before any test runs.
    result = pytester.runpytest("-p", "no:cacheprovider", f"--perf-data-dir={data}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: --perf-data-dir {data}: is under {blocker}, which is a file, not a folder*"]
    )


# -- trace_counter ---------------------------------------------------------------------------

TRACE_TESTS = """
import pytest

tf = pytest.importorskip("tensorflow")


@pytest.mark.tf
@pytest.mark.perf(rounds=2, warmup_rounds=1)
def test_counts_retraces(perf, trace_counter):
    double = tf.function(lambda x: x * 2)
    with trace_counter.track(double) as tally:
        for n in (2, 3, 2, 4, 3):
            double(tf.zeros((n,)))
    assert tally.value == 3  # one trace per new shape
    step = tf.function(lambda x: x + 1)
    perf.measure(lambda: step(tf.zeros((2,))), items=1)
    with trace_counter.track(step) as again:
        step(tf.zeros((5,)))
        step(tf.zeros((5,)))
    assert again.value == 1
    assert trace_counter.totals == {"traces": 4}
    assert perf.extra_info["perfsuite"]["counters"] == {"traces": 4}


@pytest.mark.tf
def test_without_a_bench(trace_counter):
    f = tf.function(lambda x: x - 1)
    with trace_counter.track(f, name="warm_traces") as tally:
        f(tf.constant(1.0))
    assert tally.value == 1
    assert trace_counter.totals == {"warm_traces": 1}
"""


@pytest.mark.tf
def test_trace_counter_with_a_real_tf_function(
    pytester: pytest.Pytester, inner_args: list[str]
) -> None:
    pytester.makepyfile(test_inner=TRACE_TESTS)
    result = pytester.runpytest_subprocess(*inner_args, "--perf-scale=smoke", "-rs", timeout=300)
    result.assert_outcomes(passed=2)
    # the summary table shows the exact count beside the throughput
    result.stdout.fnmatch_lines(
        ["*perfsuite summary*", "*variant*traces*", "*test_counts_retraces*4"]
    )


def test_trace_counter_needs_a_tf_function() -> None:
    with pytest.raises(TypeError, match=r"not a tf\.function"):
        tracing_count(lambda: 0)
    counter = TraceCounter(None)
    with pytest.raises(TypeError, match="experimental_get_tracing_count"), counter.track(lambda: 0):
        pass


def test_trace_counter_adds_up_and_records() -> None:
    info: dict[str, object] = {}
    counter = TraceCounter(info)
    counter.add("traces", 2)
    counter.add("traces", 3)
    counter.add("recompiles", 0)
    assert counter.totals == {"traces": 5, "recompiles": 0}
    draft = {"schema": SCHEMA_VERSION, "counters": {"traces": 5, "recompiles": 0}}
    assert info == {"perfsuite": draft}


def test_recipe_errors_are_perfsuite_errors() -> None:
    with pytest.raises(PerfsuiteError):
        load_recipe("no-such-recipe")
