"""Runs: pytest-benchmark JSON documents, loaded and validated into :class:`Run`.

A run is a pytest-benchmark JSON document (``--benchmark-save``/``--benchmark-autosave``
into ``--benchmark-storage``, or ``--benchmark-json``). Each bench of it becomes a
:class:`Bench`: raw per-round seconds, their median and perfsuite's
:class:`~perfsuite.verdict.result.BenchResult` (read from ``extra_info["perfsuite"]``,
or from the previous flat layout). The session's own benches go through the same
:func:`parse_bench` as saved ones. Finding runs in a storage is
:mod:`perfsuite.verdict.storage`'s job.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from perfsuite.errors import PerfsuiteError
from perfsuite.verdict.cost import Cost
from perfsuite.verdict.legacy import is_legacy, legacy_result
from perfsuite.verdict.result import RESULT_KEY, BenchResult, is_draft, read_cost

#: the pytest-benchmark JSON major versions whose layout perfsuite reads
SUPPORTED_MAJOR_VERSIONS = frozenset({3, 4, 5})


@dataclass(frozen=True)
class Bench:
    """One bench of a run: its names, perfsuite's result, raw per-round seconds, median.

    ``result`` is ``None`` for a bench perfsuite did not measure (a plain
    pytest-benchmark bench): it is judged on its timings alone.
    """

    fullname: str
    name: str
    group: str | None
    result: BenchResult | None
    data: tuple[float, ...]
    median: float | None
    #: exact counters of a bench perfsuite did not measure (:func:`plain_counters`)
    plain: tuple[tuple[str, int], ...] = ()
    #: the threshold such a bench's ``perf`` marker gave (``THRESHOLD_KEY``)
    plain_threshold: float | None = None
    #: what its measured rounds cost (its result's, else its draft's); ``None`` if unknown
    cost: Cost | None = None
    #: the bench's full name, where another bench of its run has the same label
    ambiguous: bool = False
    #: the rounds pytest-benchmark's stats count (also where no raw data was saved)
    stats_rounds: int | None = None

    @property
    def rounds(self) -> int | None:
        """How many rounds were measured: the raw samples, else the stats' count."""
        return len(self.data) if self.data else self.stats_rounds

    @property
    def threshold(self) -> float | None:
        """The threshold this bench recorded (its result's, else its marker's), if any."""
        if self.result is not None:
            return self.result.threshold
        return self.plain_threshold

    @property
    def items(self) -> int | None:
        return self.result.items if self.result is not None else None

    @property
    def unit(self) -> str:
        """What one item is: perfsuite's declared unit, else ``calls`` (a bench of
        pytest-benchmark's ``benchmark`` fixture times calls)."""
        return self.result.unit if self.result is not None else "calls"

    @property
    def label(self) -> str:
        """``group/variant`` where perfsuite recorded them, else the bench's name; its
        full name (the node id) where that is shared with another bench of its run."""
        if self.ambiguous:
            return self.fullname
        return self.result.label if self.result is not None else self.name

    def rates(self) -> list[float]:
        """Per-round items/s (empty without ``items`` or raw samples)."""
        items = self.items
        if items is None:
            return []
        return [items / t for t in self.data if t > 0]

    def median_rate(self) -> float | None:
        """items/s at the median call time."""
        items = self.items
        if items is None or not self.median:
            return None
        return items / self.median

    def counters(self) -> dict[str, int]:
        """The exact counters this bench recorded."""
        return dict(self.result.counters) if self.result is not None else dict(self.plain)

    @property
    def memory_threshold(self) -> float | None:
        """The peak-memory threshold this bench recorded with its cost, if any."""
        return self.cost.memory_threshold if self.cost is not None else None

    def cpu_samples(self) -> list[float]:
        """CPU seconds per item, one a measured round (empty where cost is unknown)."""
        return self.cost.round_samples(self.items) if self.cost is not None else []


@dataclass(frozen=True)
class Run:
    """One saved (or the session's own) run."""

    source: str
    benches: dict[str, Bench]
    machine_info: dict[str, Any] = field(default_factory=dict)
    commit_info: dict[str, Any] = field(default_factory=dict)
    datetime: str | None = None
    version: str | None = None

    @property
    def facts(self) -> dict[str, Any]:
        """perfsuite's machine facts (``machine_info['perfsuite']``), empty if absent."""
        facts = self.machine_info.get("perfsuite")
        return facts if isinstance(facts, dict) else {}

    @property
    def name(self) -> str:
        return Path(self.source).stem if self.source.endswith(".json") else self.source


def _fail(source: str, why: str) -> PerfsuiteError:
    return PerfsuiteError(f"{source}: {why}")


def parse_run(document: Any, source: str) -> Run:
    """Validate a pytest-benchmark JSON document and build a :class:`Run` from it."""
    hint = "save a new baseline with --benchmark-autosave"
    if not isinstance(document, dict):
        raise _fail(source, f"not a pytest-benchmark run (top level is not an object); {hint}")
    version = document.get("version")
    if not isinstance(version, str) or not version.split(".")[0].isdigit():
        raise _fail(source, f"not a pytest-benchmark run (no 'version' field); {hint}")
    major = int(version.split(".")[0])
    if major not in SUPPORTED_MAJOR_VERSIONS:
        supported = ", ".join(f"{v}.x" for v in sorted(SUPPORTED_MAJOR_VERSIONS))
        raise _fail(
            source, f"saved by pytest-benchmark {version}, perfsuite reads {supported}; {hint}"
        )
    raw = document.get("benchmarks")
    if not isinstance(raw, list):
        raise _fail(source, f"not a pytest-benchmark run (no 'benchmarks' list); {hint}")
    benches: dict[str, Bench] = {}
    for index, entry in enumerate(raw):
        bench = parse_bench(entry, source, index)
        benches[bench.fullname] = bench
    benches = named_apart(benches)
    machine = document.get("machine_info")
    commit = document.get("commit_info")
    stamp = document.get("datetime")
    return Run(
        source=source,
        benches=benches,
        machine_info=machine if isinstance(machine, dict) else {},
        commit_info=commit if isinstance(commit, dict) else {},
        datetime=stamp if isinstance(stamp, str) else None,
        version=version,
    )


def named_apart(benches: dict[str, Bench]) -> dict[str, Bench]:
    """``benches`` (by full name), each whose label another shares shown by its full
    name: two files' ``test_same`` are told apart wherever a bench is named."""
    shared = Counter(bench.label for bench in benches.values())
    return {
        name: replace(bench, ambiguous=True) if shared[bench.label] > 1 else bench
        for name, bench in benches.items()
    }


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def read_result(extra_info: dict[str, Any], where: str) -> BenchResult | None:
    """perfsuite's result in a bench's ``extra_info``: the current layout, else the
    previous flat one; ``None`` for a bench perfsuite did not measure (a draft)."""
    if RESULT_KEY in extra_info and is_draft(extra_info[RESULT_KEY]):
        return None
    if RESULT_KEY in extra_info:
        return BenchResult.from_dict(extra_info[RESULT_KEY], where)
    if is_legacy(extra_info):
        return legacy_result(extra_info, where)
    return None


#: integers under these ``extra_info`` keys are exact counters of a plain bench
COUNTER_NAMES = ("traces", "recompiles")
#: the ``extra_info`` key listing more counter names (the ``perf`` marker's ``counters``)
COUNTERS_KEY = "perfsuite_counters"
#: the ``extra_info`` key of a plain bench's threshold (the ``perf`` marker's ``threshold``)
THRESHOLD_KEY = "perfsuite_threshold"


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def plain_counters(extra_info: dict[str, Any]) -> tuple[tuple[str, int], ...]:
    """The exact counters of a bench perfsuite did not measure (a ``benchmark``-fixture
    bench): its draft's ``counters`` (the ``trace_counter`` fixture), then the integers
    under ``COUNTER_NAMES`` and the names listed under ``COUNTERS_KEY``.

    >>> plain_counters({"traces": 2, "label": "x", "perfsuite_counters": ["hits"], "hits": 5})
    (('traces', 2), ('hits', 5))
    """
    found: dict[str, int] = {}
    draft = extra_info.get(RESULT_KEY)
    counted = draft.get("counters") if isinstance(draft, dict) and is_draft(draft) else None
    if isinstance(counted, dict):
        found.update((str(k), v) for k, v in counted.items() if _integer(v))
    declared = extra_info.get(COUNTERS_KEY)
    names = [*COUNTER_NAMES, *(declared if isinstance(declared, list) else [])]
    for name in names:
        if isinstance(name, str) and _integer(extra_info.get(name)):
            found.setdefault(name, extra_info[name])
    return tuple(found.items())


def parse_bench(entry: Any, source: str, index: int) -> Bench:
    """One entry of a run's ``benchmarks`` list (pytest-benchmark's ``as_dict`` form)."""
    where = f"benchmark #{index + 1}"
    if not isinstance(entry, dict) or not isinstance(entry.get("fullname"), str):
        raise _fail(source, f"{where} has no 'fullname'; the file is damaged")
    stats = entry.get("stats")
    if not isinstance(stats, dict):
        raise _fail(source, f"{where} ({entry['fullname']}) has no 'stats'; the file is damaged")
    raw_data = stats.get("data")
    data: tuple[float, ...] = ()
    if isinstance(raw_data, list) and all(_number(x) for x in raw_data):
        data = tuple(float(x) for x in raw_data)
    median: Any = stats.get("median")
    extra = entry.get("extra_info")
    extra = extra if isinstance(extra, dict) else {}
    group = entry.get("group")
    where = f"{source}: bench {entry['fullname']}"
    result = read_result(extra, where)
    draft = extra.get(RESULT_KEY)
    cost = result.cost if result is not None else None
    if result is None and isinstance(draft, dict) and is_draft(draft):
        cost = read_cost(draft, where)
    return Bench(
        fullname=entry["fullname"],
        name=str(entry.get("name") or entry["fullname"]),
        group=group if isinstance(group, str) else None,
        result=result,
        data=data,
        median=float(median) if _number(median) and float(median) > 0 else None,
        plain=plain_counters(extra) if result is None else (),
        plain_threshold=_threshold_of(extra) if result is None else None,
        cost=cost,
        stats_rounds=_count(stats.get("rounds")),
    )


def _count(value: Any) -> int | None:
    return value if _integer(value) and value > 0 else None


def _threshold_of(extra_info: dict[str, Any]) -> float | None:
    value = extra_info.get(THRESHOLD_KEY)
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    return float(value) if 0 < value < 1 else None


def load_run(path: Path) -> Run:
    """Read and validate one run file; errors name the file and say what to do."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PerfsuiteError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PerfsuiteError(f"{path}: cannot be read ({exc})") from None
    if not text.strip():
        raise _fail(str(path), "empty file, not a pytest-benchmark run")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        truncated = exc.pos >= len(text.rstrip()) - 1 or exc.msg.startswith("Unterminated")
        what = "truncated JSON" if truncated else "not valid JSON"
        where = f"{exc.msg.removesuffix(' at')} at line {exc.lineno}, column {exc.colno}"
        if path.suffix != ".json":  # not a saved run at all: never ask to delete it
            raise _fail(
                str(path),
                f"not a pytest-benchmark run ({what}: {where}); name a run id or a .json "
                "file pytest-benchmark saved",
            ) from None
        raise _fail(
            str(path),
            f"{what} ({where}); delete it or save a new baseline with --benchmark-autosave",
        ) from None
    return parse_run(document, str(path))


def bench_from_record(record: Any, source: str, index: int) -> Bench | None:
    """A bench pytest-benchmark measured in this session (its ``Metadata``), read the way
    a saved one is: its ``as_dict`` through :func:`parse_bench`; None when it has no
    rounds (an error, or nothing timed)."""
    if getattr(record, "has_error", False):
        return None
    stats = getattr(record, "stats", None)
    if not getattr(stats, "data", None):
        return None
    return parse_bench(record.as_dict(include_data=True), source, index)


def session_benches(records: Iterable[Any], source: str) -> tuple[dict[str, Bench], list[str]]:
    """The benches pytest-benchmark measured in a session (:func:`bench_from_record`), by
    full name, and a note for each record that does not parse."""
    benches: dict[str, Bench] = {}
    notes: list[str] = []
    for index, record in enumerate(records):
        try:
            bench = bench_from_record(record, source, index)
        except PerfsuiteError as exc:  # a hook left a result that does not parse
            notes.append(f"not judged: {exc}")
            continue
        if bench is not None:
            benches[bench.fullname] = bench
    return named_apart(benches), notes
