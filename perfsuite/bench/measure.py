"""The one measuring path every bench uses: the ``perf`` fixture's :class:`Perf`.

:meth:`Perf.measure` runs a callable through pytest-benchmark's ``pedantic`` mode
with explicit warm-up rounds (warm-up is never timed), synchronizes with the GPU
inside the timed region when asked, and records what a verdict needs in
``extra_info``: group, variant, items per call, items/s, dataset, scale, device and
the bench's parameters. Derived columns that need the whole session (speedup over
the group's baseline, efficiency against the roofline) are filled in by
:class:`SessionResults` before results are saved.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from perfsuite.config import BenchSettings, PerfConfig
from perfsuite.data.datasets import ImageDataset
from perfsuite.errors import PerfsuiteError

#: extra_info keys perfsuite owns; ``params`` holds the bench's own parameters
EXACT_COUNTERS_KEY = "exact_counters"
NOTES_KEY = "notes"


def items_per_second(items: float, seconds: float) -> float:
    """Throughput of one call that processed ``items`` in ``seconds``."""
    if items <= 0:
        raise ValueError(f"items must be positive, got {items}")
    if seconds <= 0:
        raise ValueError(f"seconds must be positive, got {seconds}")
    return items / seconds


def efficiency(rate: float, roofline_rate: float) -> float:
    """A variant's share of the machine's limit: its items/s over the roofline's items/s."""
    if roofline_rate <= 0:
        raise ValueError(f"roofline rate must be positive, got {roofline_rate}")
    return rate / roofline_rate


@dataclass
class BenchRecord:
    """One measured bench, as the summary and the derived columns see it."""

    nodeid: str
    group: str
    variant: str
    extra_info: dict[str, Any]
    baseline: bool = False
    roofline: bool = False
    unit: str = "images"
    rate: float | None = None  # items per second, from the median call time
    dataset_hash: str | None = None

    @property
    def speedup(self) -> float | None:
        value = self.extra_info.get("speedup")
        return float(value) if value is not None else None

    @property
    def efficiency(self) -> float | None:
        value = self.extra_info.get("efficiency")
        return float(value) if value is not None else None


@dataclass
class SessionResults:
    """Every bench measured in this session, in order; owner of the derived columns."""

    records: list[BenchRecord] = field(default_factory=list)

    def add(self, record: BenchRecord) -> None:
        """Add a measured bench; a second baseline in one group is a mistake in the bench."""
        for other in self.records:
            if other.group != record.group or other.variant == record.variant:
                continue
            for role in ("baseline", "roofline"):
                if getattr(record, role) and getattr(other, role):
                    raise PerfsuiteError(
                        f"{record.nodeid}: group {record.group!r} already has a {role}, "
                        f"{other.variant!r} ({other.nodeid}); mark one variant per group"
                    )
        self.records.append(record)

    def rooflines(self) -> dict[str, float]:
        """dataset hash -> the roofline bench's items/s on that dataset."""
        return {
            r.dataset_hash: r.rate
            for r in self.records
            if r.roofline and r.rate is not None and r.dataset_hash is not None
        }

    def finalize(self) -> None:
        """Fill ``speedup`` (over the group's baseline) and ``efficiency`` (over the roofline)."""
        roofs = self.rooflines()
        baselines = {r.group: r.rate for r in self.records if r.baseline and r.rate}
        for record in self.records:
            if record.rate is None:
                continue
            base = baselines.get(record.group)
            if base:
                record.extra_info["speedup"] = round(record.rate / base, 4)
            # The roofline is the host's decode limit: it bounds host (CPU) pipelines only.
            roof = roofs.get(record.dataset_hash or "")
            if roof and not record.roofline and record.extra_info.get("device") == "cpu":
                record.extra_info["efficiency"] = round(efficiency(record.rate, roof), 4)


class Perf:
    """What a bench gets from the ``perf`` fixture.

    >>> @pytest.mark.parametrize("variant", ["baseline", "parallel_map"])
    ... def test_pipeline(perf, image_dataset, variant):
    ...     it = iter(build(variant, image_dataset))
    ...     perf.measure(lambda: next(it), items=32, group="tfdata", variant=variant,
    ...                  baseline=variant == "baseline", dataset=image_dataset,
    ...                  params={"batch": 32})
    """

    def __init__(
        self,
        benchmark: Any,
        nodeid: str,
        default_variant: str,
        default_group: str,
        cfg: PerfConfig,
        settings: BenchSettings,
        results: SessionResults,
    ) -> None:
        self.benchmark = benchmark
        self.nodeid = nodeid
        self.cfg = cfg
        self.settings = settings
        self._results = results
        self._default_variant = default_variant
        self._default_group = default_group
        self.record: BenchRecord | None = None

    @property
    def scale(self) -> str:
        return self.cfg.scale.value

    def pick(self, *, smoke: Any, default: Any, full: Any) -> Any:
        """The value for this session's scale."""
        return self.cfg.pick(smoke=smoke, default=default, full=full)

    @property
    def extra_info(self) -> dict[str, Any]:
        info: dict[str, Any] = self.benchmark.extra_info
        return info

    def measure(
        self,
        fn: Callable[..., Any],
        *,
        items: int,
        group: str | None = None,
        variant: str | None = None,
        baseline: bool = False,
        roofline: bool = False,
        dataset: ImageDataset | None = None,
        unit: str = "images",
        device: str = "cpu",
        sync: Callable[[], None] | None = None,
        setup: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]] | None = None,
        params: dict[str, Any] | None = None,
        rounds: int | None = None,
        warmup_rounds: int | None = None,
    ) -> Any:
        """Time ``fn`` (one call = ``items`` items) and record throughput; returns fn's result.

        ``device`` says where the work ran (``cpu`` or ``gpu``). ``sync`` runs inside the
        timed region after each call (pass ``gpu.sync``), ``setup`` runs before each call
        outside it (pytest-benchmark's pedantic ``setup``), and ``roofline=True`` marks this
        bench as the limit other benches on the same dataset are measured against. Warm-up
        rounds run first and are never timed.
        """
        if self.record is not None:
            raise RuntimeError(f"{self.nodeid}: perf.measure() may be called once per bench")
        if not isinstance(items, int) or items <= 0:
            raise ValueError(f"{self.nodeid}: items must be a positive int, got {items!r}")
        group = group or self._default_group
        variant = variant or self._default_variant
        self.benchmark.group = group
        info = self.extra_info
        info.update(
            {
                "group": group,
                "variant": variant,
                "baseline": baseline,
                "roofline": roofline,
                "unit": unit,
                "items": items,
                "scale": self.scale,
                "device": device,
                "threshold": self.settings.threshold,
                "params": dict(params or {}),
            }
        )
        if dataset is not None:
            info.update(dataset.extra_info())

        target = fn
        if sync is not None:

            def target(*args: Any, **kwargs: Any) -> Any:
                result = fn(*args, **kwargs)
                sync()
                return result

        from perfsuite.ab import side as ab_side

        lockstep = ab_side.current()  # perfsuite ab: blocks of rounds alternate with a peer
        if lockstep is not None:
            result = lockstep.measure(
                self.benchmark,
                self.nodeid,
                target,
                setup=setup,
                warmup_rounds=(
                    warmup_rounds if warmup_rounds is not None else self.settings.warmup_rounds
                ),
                max_rounds=rounds if setup is not None else None,
                threshold=self.settings.threshold,
            )
        else:
            result = self.benchmark.pedantic(
                target,
                setup=setup,
                rounds=rounds if rounds is not None else self.settings.rounds,
                warmup_rounds=(
                    warmup_rounds if warmup_rounds is not None else self.settings.warmup_rounds
                ),
                iterations=1,
            )
        rate = None
        data = self.timings()
        if data:
            rate = items_per_second(items, statistics.median(data))
            info["items_per_second"] = round(rate, 3)
        self.record = BenchRecord(
            nodeid=self.nodeid,
            group=group,
            variant=variant,
            extra_info=info,
            baseline=baseline,
            roofline=roofline,
            unit=unit,
            rate=rate,
            dataset_hash=info.get("dataset_hash"),
        )
        self._results.add(self.record)
        return result

    def timings(self) -> list[float]:
        """The raw per-round seconds of the measured calls (empty when benchmarks are disabled)."""
        stats = getattr(self.benchmark, "stats", None)
        inner = getattr(stats, "stats", None)
        return list(getattr(inner, "data", []) or [])

    def count(self, name: str, value: int) -> None:
        """Record an exact integer counter (traces, recompiles): compared without statistics."""
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"counter {name!r} must be an int, got {value!r}")
        record_counter(self.extra_info, name, value)

    def note(self, **values: Any) -> None:
        """Record extra figures beside the timing (e.g. ``input_bound_share=0.4``).

        Their names are listed under ``extra_info["notes"]``, and the summary table
        shows them in its notes column (names starting with ``dataset`` excepted).
        """
        self.extra_info.update(values)
        names = self.extra_info.setdefault(NOTES_KEY, [])
        names.extend(name for name in values if name not in names)


def record_counter(extra_info: dict[str, Any], name: str, value: int) -> None:
    """Store an exact counter in ``extra_info`` and list its name under ``exact_counters``."""
    extra_info[name] = value
    names = extra_info.setdefault(EXACT_COUNTERS_KEY, [])
    if name not in names:
        names.append(name)
