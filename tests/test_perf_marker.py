"""The perf marker: its settings, defaults per scale and errors, as the perf fixture sees them."""

from __future__ import annotations

import pytest

pytest_plugins = ("pytester",)


PERF_MARKER_TESTS = """
import pytest

pytestmark = pytest.mark.perf(threshold=0.2, rounds=9)


def test_session_defaults_and_module_marker(perf):
    assert perf.settings.threshold == 0.2
    assert perf.settings.rounds == 9
    assert perf.settings.warmup_rounds == 1  # smoke scale


@pytest.mark.perf(rounds=3, warmup_rounds=0)
def test_closest_marker_wins(perf):
    assert perf.settings.rounds == 3
    assert perf.settings.threshold == 0.2
    calls = []
    perf.measure(lambda: calls.append(1), items=4)
    assert len(calls) == 3
    assert len(perf.timings()) == 3


@pytest.mark.perf(roundz=3)
def test_unknown_keyword(perf):
    pass


@pytest.mark.perf(3)
def test_positional(perf):
    pass


@pytest.mark.perf(rounds=0)
def test_bad_rounds(perf):
    pass


@pytest.mark.perf(threshold=-1)
def test_bad_threshold(perf):
    pass


@pytest.mark.perf(threshold=2)
def test_threshold_as_percent(perf):
    pass


@pytest.mark.perf(rounds={"smoke": 4, "full": 10})
def test_rounds_per_scale_beat_the_command_line(perf):
    assert perf.settings.rounds == 4


@pytest.mark.perf(rounds={"fast": 3})
def test_bad_rounds_scale(perf):
    pass


@pytest.mark.perf(group="g_{kind}", baseline="b", roofline="r")
@pytest.mark.parametrize("kind", ["x"])
@pytest.mark.parametrize("variant", ["b", "r", pytest.param("c", marks=pytest.mark.perf(rounds=2))])
def test_group_variant_baseline_roofline(perf, kind, variant):
    assert perf.settings.group == f"g_{kind}"
    assert perf.settings.variant == variant
    assert perf.settings.baseline is (variant == "b")
    assert perf.settings.roofline is (variant == "r")
    assert perf.settings.rounds == (2 if variant == "c" else 9)


@pytest.mark.parametrize("n", [1], ids=["one"])
def test_variant_is_the_parametrize_id(perf, n):
    assert perf.settings.variant == "one"
    assert perf.settings.group == "inner"


@pytest.mark.perf(group="g_{nope}")
def test_group_naming_an_unknown_parameter(perf):
    pass


@pytest.mark.perf(baseline="same", roofline="same")
def test_baseline_and_roofline_alike(perf):
    pass
"""


#: no module marker: a bench's own default rounds, under --perf-rounds and a marker
BENCH_DEFAULT_TESTS = """
import pytest

OWN = pytest.mark.perf(default_rounds={"smoke": 2, "default": 3})


@OWN
def test_the_command_line_beats_a_bench_default(perf):
    assert perf.settings.rounds == 5


@pytest.mark.perf(rounds=6)
@OWN
def test_a_marker_beats_both(perf):
    assert perf.settings.rounds == 6
"""


def test_perf_marker_settings(pytester: pytest.Pytester, inner_args: list[str]) -> None:
    pytester.makepyfile(test_inner=PERF_MARKER_TESTS, test_defaults=BENCH_DEFAULT_TESTS)
    result = pytester.runpytest(*inner_args, "--perf-scale=smoke", "--perf-rounds=5")
    result.assert_outcomes(passed=9, errors=8)
    result.stdout.fnmatch_lines_random(
        [
            "*test_bad_rounds_scale: perf(rounds={'fast': 3}) must map scales "
            "(default, full, smoke) to ints >= 1",
            "*test_group_naming_an_unknown_parameter: perf(group='g_{nope}') names a field that "
            "is not a parameter of this bench ('nope'; parameters: none)",
            "*test_baseline_and_roofline_alike: perf(baseline='same', roofline='same') name one "
            "variant; a bench is the baseline or the roofline, not both",
            "*test_unknown_keyword: unknown perf marker keyword(s) roundz "
            "(known: baseline, counters, default_rounds, group, memory_threshold, roofline, "
            "rounds, threshold, variant, warmup_rounds)",
            "*test_positional: perf marker takes keywords only*",
            "*test_bad_rounds: perf(rounds=0) must be an int >= 1",
            "*test_bad_threshold: perf(threshold=-1) must be a fraction in (0, 1)",
            "*test_threshold_as_percent: perf(threshold=2) must be a fraction in (0, 1): "
            "did you mean 2% (0.02)?",
        ]
    )


def test_a_wrong_keyword_on_a_benchmark_fixture_bench_errors_that_bench_alone(
    pytester: pytest.Pytester, inner_args: list[str]
) -> None:
    pytester.makepyfile(
        test_plain="""
import pytest

@pytest.mark.perf(bar=1)
def test_marked(benchmark):
    benchmark(sum, range(10))

@pytest.mark.perf(threshold=5)
def test_percent(benchmark):
    benchmark(sum, range(10))

@pytest.mark.perf(counters="misses")
def test_counters(benchmark):
    benchmark(sum, range(10))

def test_plain(benchmark):
    benchmark(sum, range(10))
"""
    )
    for extra in ([], ["--perf-gate", "--benchmark-compare"]):
        result = pytester.runpytest(*inner_args, *extra)
        result.assert_outcomes(passed=1, errors=3)
        result.stdout.fnmatch_lines_random(
            [
                "*test_marked: unknown perf marker keyword(s) bar (known: baseline, *",
                "*test_percent: perf(threshold=5) must be a fraction in (0, 1): did you mean "
                "5% (0.05)?",
                "*test_counters: perf(counters='misses') must be a list of counter names",
            ]
        )
        result.stdout.no_fnmatch_line("*Traceback*")
        result.stdout.no_fnmatch_line("*PluggyTeardownRaisedWarning*")


def test_a_bench_default_applies_without_the_command_line(
    pytester: pytest.Pytester, inner_args: list[str]
) -> None:
    pytester.makepyfile(
        test_own="""
import pytest


@pytest.mark.perf(default_rounds={"smoke": 2, "full": 9}, warmup_rounds=0)
def test_own_default(perf):
    assert perf.settings.rounds == 2
    assert perf.settings.warmup_rounds == 0
    calls = []
    perf.measure(lambda: calls.append(1), items=1)
    assert len(calls) == 2


@pytest.mark.perf(default_rounds={"full": 9})
def test_a_scale_left_out_falls_back_to_the_scale(perf):
    assert perf.settings.rounds == 7
"""
    )
    result = pytester.runpytest(*inner_args, "--perf-scale=smoke")
    result.assert_outcomes(passed=2)
