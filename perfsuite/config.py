"""perfsuite's settings, built once per session as a frozen dataclass.

Precedence: ``@pytest.mark.perf(...)`` keyword > command line > ini > default.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from perfsuite.data.fsutil import cache_home
from perfsuite.options import OPTIONS, Device, Scale, ServiceAddress

#: measured rounds per scale. Mann-Whitney U, two-sided, needs at least 7 samples on
#: each side before p < 0.002 is reachable at all (with 6 the smallest p is 2/924;
#: ``perfsuite.verdict.stats.MIN_RANK_SAMPLES``): every scale meets that, and default
#: and full leave room for power on noisy runners.
ROUNDS: dict[Scale, int] = {Scale.SMOKE: 7, Scale.DEFAULT: 12, Scale.FULL: 20}
WARMUP_ROUNDS: dict[Scale, int] = {Scale.SMOKE: 1, Scale.DEFAULT: 2, Scale.FULL: 3}
#: the fewest rounds a bench's own default gives on a GPU (a ``gpu``-marked bench, or any
#: bench under ``--perf-device gpu``) at default and full scale. Benches lower their
#: default where a round costs seconds of a 2-core CPU (a fresh compile, a fresh
#: process); on a GPU runner those rounds are cheap enough, and below 7 a rank test
#: cannot decide at all (see ROUNDS). 10 leaves the test room for a few overlapping
#: rounds (at 10 against 10 it still reaches p < 0.002 with up to 10 of the 100 pairs
#: out of order). ``--perf-rounds`` and ``perf(rounds=...)`` are taken as given.
GPU_MIN_ROUNDS: dict[Scale, int] = {Scale.SMOKE: 1, Scale.DEFAULT: 10, Scale.FULL: 12}

_T = TypeVar("_T")


def default_data_dir() -> Path:
    """``$XDG_CACHE_HOME/perfsuite/datasets``, else ``~/.cache/perfsuite/datasets``."""
    return cache_home("datasets")


@dataclass(frozen=True)
class PerfConfig:
    """The session's perfsuite settings (see ``pytest --help``, group perfsuite)."""

    scale: Scale = Scale.DEFAULT
    data_dir: Path = dataclasses.field(default_factory=default_data_dir)
    images: Path | None = None
    device: Device = Device.AUTO
    recipes: Path | None = None
    rounds: int | None = None
    threshold: float = 0.05
    memory_threshold: float = 0.25
    gate: bool = False
    ab_args: tuple[str, ...] = ()  # perfsuite ab options for the gate's confirmation
    allow_machine_mismatch: bool = False
    report: Path | None = None
    tfdata_service: ServiceAddress | None = None
    rootdir: Path = dataclasses.field(default_factory=Path.cwd)

    @classmethod
    def from_pytest_config(cls, config: pytest.Config) -> PerfConfig:
        """Read every option, command line first, then ini; a bad ini value is a usage error."""
        values: dict[str, Any] = {}
        for spec in OPTIONS:
            value = config.getoption(spec.dest)
            if value is None:
                try:
                    raw = config.getini(spec.ini)
                except (ValueError, pytest.UsageError) as exc:  # a bool key that is not one
                    raise pytest.UsageError(
                        f"ini option {spec.ini}: {exc} (true or false)"
                    ) from None
                if spec.is_flag:
                    value = bool(raw)
                elif raw not in ("", None):
                    assert spec.parse is not None
                    try:
                        value = spec.parse(str(raw))
                    except argparse.ArgumentTypeError as exc:
                        raise pytest.UsageError(f"ini option {spec.ini}: {exc}") from None
            if value is not None:
                values[spec.dest.removeprefix("perf_")] = value
        rootdir = Path(config.rootpath)
        for key in ("data_dir", "images", "recipes", "report"):
            if key in values and not values[key].is_absolute():
                values[key] = Path(config.invocation_params.dir) / values[key]
        recipes = values.get("recipes")
        if recipes is not None and not recipes.is_dir():
            raise pytest.UsageError(
                f"--perf-recipes {recipes}: not a folder; pass a folder of recipe .toml files"
            )
        return cls(rootdir=rootdir, **values)

    def pick(self, *, smoke: _T, default: _T, full: _T) -> _T:
        """The value for this session's scale: ``cfg.pick(smoke=2, default=10, full=100)``."""
        return {Scale.SMOKE: smoke, Scale.DEFAULT: default, Scale.FULL: full}[self.scale]

    @property
    def default_rounds(self) -> int:
        return self.rounds if self.rounds is not None else ROUNDS[self.scale]

    @property
    def default_warmup_rounds(self) -> int:
        return WARMUP_ROUNDS[self.scale]


CONFIG_KEY = pytest.StashKey[PerfConfig]()


def perf_config(config: pytest.Config) -> PerfConfig:
    """The session's :class:`PerfConfig` (built once in ``pytest_configure``)."""
    return config.stash[CONFIG_KEY]


#: ``@pytest.mark.perf(rounds=...)``: one count, or one per scale (scales left out fall back)
Rounds = int | Mapping[str, int]


@dataclass(frozen=True)
class PerfMarker:
    """The keywords of ``@pytest.mark.perf(...)``; per keyword, the closest marker wins.

    >>> @pytest.mark.perf(group="tfdata", baseline="baseline", roofline="decode_roofline")
    ... @pytest.mark.parametrize("variant", ["decode_roofline", "baseline", "parallel_map"])
    ... def test_tfdata(perf: Perf, variant: str) -> None:
    ...     perf.measure(step, items=32)

    ``group`` defaults to the module's name without ``bench_``; ``{name}`` fields in it are
    filled from the bench's parameters (``group="retracing_{kind}_{shapes}"``). ``variant``
    defaults to the value of the parameter named ``variant``, else the parametrize id, else
    the test's name. ``baseline`` and ``roofline`` name the variant that is the group's
    baseline and the variant that is the limit the others on its dataset are measured
    against. Rounds: ``rounds`` > ``--perf-rounds`` > ``default_rounds`` (the bench's own
    default) > the scale's default; both take one count or a mapping of scale to count,
    ``rounds={"smoke": 3, "full": 10}``, where a scale left out falls back to the next.
    On a GPU, the bench's own default is raised to at least ``GPU_MIN_ROUNDS``.
    On a bench written with pytest-benchmark's ``benchmark`` fixture, ``threshold`` and
    ``counters`` (names of integers it records in ``extra_info``) reach the verdict.
    ``memory_threshold`` (a fraction above 0; ``--perf-memory-threshold`` otherwise) is
    the rise of peak memory that is a regression, on either kind of bench.
    """

    group: str | None = None
    variant: str | None = None
    baseline: str | None = None
    roofline: str | None = None
    threshold: float | None = None
    rounds: Rounds | None = None
    default_rounds: Rounds | None = None
    warmup_rounds: int | None = None
    #: more ``extra_info`` names a ``benchmark``-fixture bench records exact counters under
    counters: tuple[str, ...] | list[str] | None = None
    #: the peak-memory rise that is a regression, as a fraction of the baseline's peak
    memory_threshold: float | None = None

    @classmethod
    def from_item(cls, item: pytest.Item) -> PerfMarker:
        """Merge the item's ``perf`` markers, closest last; unknown keywords are usage errors."""
        known = [f.name for f in dataclasses.fields(cls)]
        values: dict[str, Any] = {}
        for marker in reversed(list(item.iter_markers("perf"))):
            if marker.args:
                raise pytest.UsageError(
                    f"{item.nodeid}: perf marker takes keywords only ({', '.join(sorted(known))})"
                )
            unknown = set(marker.kwargs) - set(known)
            if unknown:
                raise pytest.UsageError(
                    f"{item.nodeid}: unknown perf marker keyword(s) {', '.join(sorted(unknown))}"
                    f" (known: {', '.join(sorted(known))})"
                )
            values.update(marker.kwargs)
        return cls(**values)


def _for_scale(value: Rounds | None, scale: Scale, where: str, key: str) -> int | None:
    """The count ``value`` gives at ``scale``, None where it gives none; checks its shape."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        names = {s.value for s in Scale}
        if not set(value) <= names or not all(_is_count(v, 1) for v in value.values()):
            raise pytest.UsageError(
                f"{where}: perf({key}={value!r}) must map scales ({', '.join(sorted(names))}) "
                "to ints >= 1"
            )
        count = value.get(scale.value)
        return int(count) if count is not None else None
    if not _is_count(value, 1):
        raise pytest.UsageError(f"{where}: perf({key}={value!r}) must be an int >= 1")
    return int(value)


def _is_count(value: object, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _text(value: object, where: str, key: str) -> str | None:
    if value is not None and not (isinstance(value, str) and value):
        raise pytest.UsageError(f"{where}: perf({key}={value!r}) must be a non-empty string")
    return value


@dataclass(frozen=True)
class BenchSettings:
    """One bench's settings, resolved from its markers, the session and its parametrization."""

    threshold: float
    rounds: int
    warmup_rounds: int
    group: str
    variant: str
    baseline: bool
    roofline: bool
    memory_threshold: float = 0.25

    @classmethod
    def for_item(cls, cfg: PerfConfig, item: pytest.Item) -> BenchSettings:
        """Resolve the item's ``perf`` markers over the session settings (see PerfMarker)."""
        where = item.nodeid
        marker = PerfMarker.from_item(item)
        rounds = _for_scale(marker.rounds, cfg.scale, where, "rounds")
        own = _for_scale(marker.default_rounds, cfg.scale, where, "default_rounds")
        if rounds is None and cfg.rounds is not None:
            rounds = cfg.rounds
        elif rounds is None:
            rounds = own or cfg.default_rounds
            if cfg.device is Device.GPU or item.get_closest_marker("gpu") is not None:
                rounds = max(rounds, GPU_MIN_ROUNDS[cfg.scale])
        warmup = marker.warmup_rounds
        if warmup is not None and not _is_count(warmup, 0):
            raise pytest.UsageError(f"{where}: perf(warmup_rounds={warmup!r}) must be an int >= 0")
        threshold = marker.threshold if marker.threshold is not None else cfg.threshold
        if not (
            isinstance(threshold, int | float)
            and not isinstance(threshold, bool)
            and 0 < threshold < 1
        ):
            hint = (
                f": did you mean {threshold:g}% ({threshold / 100:g})?"
                if isinstance(threshold, int | float) and 1 <= threshold < 100
                else ""
            )
            raise pytest.UsageError(
                f"{where}: perf(threshold={threshold!r}) must be a fraction in (0, 1){hint}"
            )
        callspec = getattr(item, "callspec", None)
        params: dict[str, Any] = dict(callspec.params) if callspec is not None else {}
        variant = _text(marker.variant, where, "variant")
        if variant is not None:
            variant = _fill(variant, params, where, "variant")
        elif "variant" in params:
            variant = str(params["variant"])
        else:
            variant = callspec.id if callspec is not None else item.name
        if marker.baseline is not None and marker.baseline == marker.roofline:
            raise pytest.UsageError(
                f"{where}: perf(baseline={marker.baseline!r}, roofline={marker.roofline!r}) name "
                "one variant; a bench is the baseline or the roofline, not both"
            )
        group = _text(marker.group, where, "group")
        if group is None:
            module = item.path.stem if item.path is not None else "bench"
            group = module.removeprefix("bench_").removeprefix("test_")
        else:
            group = _fill(group, params, where, "group")
        return cls(
            threshold=float(threshold),
            rounds=rounds,
            warmup_rounds=warmup if warmup is not None else cfg.default_warmup_rounds,
            group=group,
            variant=variant,
            baseline=variant == _text(marker.baseline, where, "baseline"),
            roofline=variant == _text(marker.roofline, where, "roofline"),
            memory_threshold=memory_threshold(cfg, item),
        )


def _fill(template: str, params: Mapping[str, Any], where: str, key: str) -> str:
    """``template`` with its ``{name}`` fields filled from the bench's parameters."""
    try:
        return template.format_map({name: str(value) for name, value in params.items()})
    except (KeyError, IndexError, ValueError) as exc:
        known = ", ".join(sorted(params)) or "none"
        raise pytest.UsageError(
            f"{where}: perf({key}={template!r}) names a field that is not a parameter of this "
            f"bench ({exc}; parameters: {known})"
        ) from None


def memory_threshold(cfg: PerfConfig, item: pytest.Item) -> float:
    """The bench's peak-memory threshold: its ``perf`` marker's, else the session's."""
    value = PerfMarker.from_item(item).memory_threshold
    if value is None:
        return cfg.memory_threshold
    if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
        raise pytest.UsageError(
            f"{item.nodeid}: perf(memory_threshold={value!r}) must be a fraction above 0"
        )
    return float(value)


def check_marker(cfg: PerfConfig, item: pytest.Item) -> None:
    """Raise ``pytest.UsageError`` naming ``item`` where its ``perf`` marker holds an
    unknown keyword or a value of the wrong shape, whichever fixture it uses."""
    BenchSettings.for_item(cfg, item)
    memory_threshold(cfg, item)
    counters = PerfMarker.from_item(item).counters
    if counters is not None and (
        not isinstance(counters, list | tuple)
        or not all(isinstance(name, str) and name for name in counters)
    ):
        raise pytest.UsageError(
            f"{item.nodeid}: perf(counters={counters!r}) must be a list of counter names"
        )


def record_plain_marker(item: pytest.Item, extra_info: Any) -> None:
    """A ``benchmark``-fixture bench's ``perf`` marker: its ``threshold`` and ``counters``
    saved in ``extra_info`` (:mod:`perfsuite.verdict.runs` reads them), where
    ``perf.measure`` did not record a result of its own."""
    if not isinstance(extra_info, dict) or item.get_closest_marker("perf") is None:
        return
    from perfsuite.verdict.result import RESULT_KEY, is_draft
    from perfsuite.verdict.runs import COUNTERS_KEY, THRESHOLD_KEY

    if RESULT_KEY in extra_info and not is_draft(extra_info[RESULT_KEY]):
        return
    marker = PerfMarker.from_item(item)
    if marker.threshold is not None:
        extra_info[THRESHOLD_KEY] = marker.threshold
    if marker.counters:
        extra_info[COUNTERS_KEY] = list(marker.counters)
