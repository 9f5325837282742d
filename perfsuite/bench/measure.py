"""The one measuring path every bench uses: the ``perf`` fixture's :class:`Perf`.

:meth:`Perf.measure` runs a callable through pytest-benchmark's ``pedantic`` mode
with explicit warm-up rounds (warm-up is never timed), synchronizes with the GPU
around every timed round of a GPU bench, brings the GPU's clocks to a steady state
before the first and records them (:mod:`perfsuite.bench.clocks`), and records what a
verdict needs as one
:class:`~perfsuite.verdict.result.BenchResult` saved under ``extra_info["perfsuite"]``:
group, variant, role, items per call, items/s, dataset, scale, device, threshold,
exact counters, the bench's parameters and, on a GPU, its clocks, with ``perf.note``
figures kept apart.
Derived columns that need the whole session (speedup over the group's baseline,
efficiency against the roofline) are filled in by :class:`SessionResults` before
results are saved, after reading every result back through the same parser saved
runs go through.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from perfsuite.bench import cost
from perfsuite.bench.clocks import ClockWatch
from perfsuite.bench.gpu import GPU, device_kind
from perfsuite.config import BenchSettings, PerfConfig
from perfsuite.data.datasets import ImageDataset
from perfsuite.data.recipes import Recipe
from perfsuite.errors import PerfsuiteError
from perfsuite.verdict.result import RESULT_KEY, SCHEMA_VERSION, BenchResult, DatasetRef, Role

_T = TypeVar("_T")


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
    """One bench measured in this session: its result and the ``extra_info`` it is saved in."""

    nodeid: str
    result: BenchResult
    extra_info: dict[str, Any]
    rate: float | None = None  # items per second from the median call time, unrounded

    def __post_init__(self) -> None:
        self.extra_info.setdefault(RESULT_KEY, self.result.to_dict())

    @property
    def group(self) -> str:
        return self.result.group

    @property
    def variant(self) -> str:
        return self.result.variant

    @property
    def baseline(self) -> bool:
        return self.result.baseline

    @property
    def roofline(self) -> bool:
        return self.result.roofline

    @property
    def unit(self) -> str:
        return self.result.unit

    @property
    def dataset_hash(self) -> str | None:
        return self.result.dataset_hash

    @property
    def speedup(self) -> float | None:
        return self.result.speedup

    @property
    def efficiency(self) -> float | None:
        return self.result.efficiency

    def reload(self) -> None:
        """Read the result back from ``extra_info`` (counters and notes recorded after
        ``perf.measure``) with the parser saved runs go through."""
        where = f"this session: bench {self.nodeid}"
        self.result = BenchResult.from_dict(self.extra_info.get(RESULT_KEY), where)

    def save(self, result: BenchResult) -> None:
        self.result = result
        self.extra_info[RESULT_KEY] = result.to_dict()


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
        for record in self.records:
            record.reload()
        roofs = self.rooflines()
        baselines = {r.group: r.rate for r in self.records if r.baseline and r.rate}
        for record in self.records:
            if record.rate is None:
                continue
            derived: dict[str, float] = {}
            base = baselines.get(record.group)
            if base:
                derived["speedup"] = round(record.rate / base, 4)
            # The roofline is the host's decode limit: it bounds host (CPU) pipelines only.
            roof = roofs.get(record.dataset_hash or "")
            if roof and not record.roofline and record.result.device == "cpu":
                derived["efficiency"] = round(efficiency(record.rate, roof), 4)
            if derived:
                record.save(record.result.replace(**derived))


#: where a bench's rounds go in a side of ``perfsuite ab``: its plugin's
#: :meth:`perfsuite.ab.remote.LockstepSide.measure`, which warms up, then times blocks
#: of rounds when the controller says so and records them in ``benchmark``'s stats
Lockstep = Callable[..., Any]


class Perf:
    """What a bench gets from the ``perf`` fixture.

    Group, baseline and roofline are declared once per test with the ``perf`` marker,
    and the variant is the ``variant`` parameter (see :class:`perfsuite.config.PerfMarker`):

    Usage::

        @pytest.mark.perf(group="tfdata", baseline="baseline")
        @pytest.mark.parametrize("variant", ["baseline", "parallel_map"])
        def test_pipeline(perf: Perf, image_dataset: ImageDataset, variant: str) -> None:
            it = iter(build(variant, image_dataset))
            perf.measure(lambda: next(it), items=32, dataset=image_dataset,
                         params={"batch": 32})
    """

    def __init__(
        self,
        benchmark: Any,
        nodeid: str,
        cfg: PerfConfig,
        settings: BenchSettings,
        results: SessionResults,
        gpu: Callable[[], GPU] | None = None,
        lockstep: Lockstep | None = None,
    ) -> None:
        self.benchmark = benchmark
        self.nodeid = nodeid
        self.cfg = cfg
        self.settings = settings
        self._results = results
        self._gpu = gpu  # the session's GPU (the gpu fixture), asked for by GPU benches only
        self.lockstep = lockstep  # perfsuite ab: blocks of rounds alternate with a peer
        self._dataset: DatasetRef | None = None
        self.record: BenchRecord | None = None

    @property
    def scale(self) -> str:
        return self.cfg.scale.value

    def pick(self, *, smoke: _T, default: _T, full: _T) -> _T:
        """The value for this session's scale."""
        return self.cfg.pick(smoke=smoke, default=default, full=full)

    @property
    def extra_info(self) -> dict[str, Any]:
        info: dict[str, Any] = self.benchmark.extra_info
        return info

    def use_dataset(self, dataset: ImageDataset | Recipe) -> None:
        """Record the dataset (or recipe) this bench reads when it is not passed to
        :meth:`measure`: its hash decides which saved results this one is compared with."""
        if isinstance(dataset, ImageDataset):
            self._dataset = DatasetRef(
                dataset.name, dataset.recipe_hash, dataset.count, dataset.total_bytes
            )
        else:
            self._dataset = DatasetRef(dataset.name, dataset.hash)

    def measure(
        self,
        fn: Callable[..., Any],
        *,
        items: int,
        dataset: ImageDataset | None = None,
        unit: str = "images",
        device: object = "cpu",
        sync: Callable[[], None] | None = None,
        setup: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]] | None = None,
        params: dict[str, Any] | None = None,
    ) -> Any:
        """Time ``fn`` (one call = ``items`` items) and record throughput; returns fn's result.

        ``device`` says where the work runs: ``"cpu"``, ``"gpu"`` or a ``torch.device``
        (recorded as ``cpu`` or ``gpu``). ``sync`` runs inside the timed region after each
        call; on a GPU it defaults to the session GPU's synchronize, and also runs after
        each ``setup``, so no round starts with earlier GPU work queued. ``setup`` runs
        before each call outside the timed region (pytest-benchmark's pedantic ``setup``).
        On a GPU, the clocks are brought to a steady state just before the first timed
        round and recorded until the last (the result's ``gpu`` object). Rounds, warm-up
        rounds (run first, never timed), group, variant, baseline and roofline come from
        the ``perf`` marker and the session (:attr:`settings`).
        """
        if self.record is not None:
            raise RuntimeError(f"{self.nodeid}: perf.measure() may be called once per bench")
        if not isinstance(items, int) or items <= 0:
            raise ValueError(f"{self.nodeid}: items must be a positive int, got {items!r}")
        kind = device_kind(device)
        group, variant = self.settings.group, self.settings.variant
        baseline, roofline = self.settings.baseline, self.settings.roofline  # never both
        self.benchmark.group = group
        if dataset is not None:
            self.use_dataset(dataset)
        info = self.extra_info
        draft = info.get(RESULT_KEY)
        draft = draft if isinstance(draft, dict) else {}
        result = BenchResult(
            group=group,
            variant=variant,
            role=Role.BASELINE if baseline else Role.ROOFLINE if roofline else Role.NONE,
            items=items,
            unit=unit,
            scale=self.scale,
            device=kind,
            threshold=float(self.settings.threshold),
            dataset=self._dataset,
            counters=dict(draft.get("counters") or {}),
            params=dict(params or {}),
            notes=dict(draft.get("notes") or {}),
        )
        info[RESULT_KEY] = result.to_dict()

        watch = None
        if kind == "gpu" and self._gpu is not None:
            gpu = self._gpu()
            sync = sync if sync is not None else gpu.sync
            watch = gpu.clock_watch()
        rounds = _Rounds(fn, setup, sync, watch, self.settings.warmup_rounds)
        meter = cost.attach(self.benchmark)
        try:
            result_of_fn = self._run(rounds, finite=setup is not None)
        finally:
            clocks = watch.finish() if watch is not None else None
        if clocks is not None:
            result = result.replace(gpu=clocks)
        spent = cost.finish(meter, self.benchmark) if meter is not None else None
        if spent is not None:
            limit = self.settings.memory_threshold
            result = result.replace(cost=dataclasses.replace(spent, memory_threshold=limit))
        rate = None
        data = self.timings()
        if data:
            rate = items_per_second(items, statistics.median(data))
            result = result.replace(items_per_second=round(rate, 3) or rate)
        self.record = BenchRecord(self.nodeid, result, info, rate)
        self.record.save(result)
        self._results.add(self.record)
        return result_of_fn

    def _run(self, rounds: _Rounds, *, finite: bool) -> Any:
        """The warm-up and timed rounds, alone or in lockstep with ``perfsuite ab``'s peer."""
        if self.lockstep is not None:
            return self.lockstep(
                self.benchmark,
                self.nodeid,
                rounds.target,
                setup=rounds.setup,
                warmup_rounds=self.settings.warmup_rounds,
                # a bench with setup may have a fixed supply of fresh objects (processes)
                max_rounds=self.settings.rounds if finite else None,
                threshold=self.settings.threshold,
                memory_threshold=self.settings.memory_threshold,
            )
        return self.benchmark.pedantic(
            rounds.target,
            setup=rounds.setup,
            rounds=self.settings.rounds,
            warmup_rounds=self.settings.warmup_rounds,
            iterations=1,
        )

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

        They are saved apart from what a verdict reads (``notes`` in the result): a note
        named ``threshold`` or ``items`` changes nothing. The summary table shows them in
        its notes column (names starting with ``dataset`` excepted).
        """
        _draft(self.extra_info).setdefault("notes", {}).update(values)


class _Rounds:
    """What one round runs: ``setup`` (untimed, then synchronized) and ``fn`` followed by
    ``sync`` (timed). The setup before the first timed round (after ``warmup`` rounds)
    also starts the clock watch: settling the GPU and its first reading are never timed.
    Without sync or watch, the bench's own ``setup`` and ``fn`` are used unchanged."""

    def __init__(
        self,
        fn: Callable[..., Any],
        setup: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]] | None,
        sync: Callable[[], None] | None,
        watch: ClockWatch | None,
        warmup: int,
    ) -> None:
        self.fn = fn
        self.sync = sync
        self.watch = watch
        self.own_setup = setup
        self.warmup = warmup
        self.setups = 0
        self.target: Callable[..., Any] = fn if sync is None else self._synced
        self.setup = setup if sync is None and watch is None else self._prepare

    def _synced(self, *args: Any, **kwargs: Any) -> Any:
        value = self.fn(*args, **kwargs)
        assert self.sync is not None
        self.sync()
        return value

    def _prepare(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        made = self.own_setup() if self.own_setup is not None else None
        if self.sync is not None:
            self.sync()
        self.setups += 1
        if self.watch is not None and self.setups == self.warmup + 1:
            self.watch.start()
        return made if made else ((), {})


def _draft(extra_info: dict[str, Any]) -> dict[str, Any]:
    """The result being recorded in ``extra_info`` (counters and notes may come first)."""
    draft = extra_info.get(RESULT_KEY)
    if not isinstance(draft, dict):
        draft = extra_info[RESULT_KEY] = {"schema": SCHEMA_VERSION}
    return draft


def record_counter(extra_info: dict[str, Any], name: str, value: int) -> None:
    """Store an exact counter in the result saved in ``extra_info``: compared exactly."""
    _draft(extra_info).setdefault("counters", {})[name] = value
