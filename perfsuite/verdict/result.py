"""One bench's result: what a verdict needs, typed, and how it is saved.

A :class:`BenchResult` is written by the ``perf`` fixture into pytest-benchmark's
``extra_info`` under one key, ``extra_info["perfsuite"]``, with a schema version::

    {"schema": 1, "group": "tfdata", "variant": "parallel_map", "role": "none",
     "items": 32, "unit": "images", "scale": "smoke", "device": "cpu",
     "threshold": 0.05, "dataset": {"name": "imagenet-like", "hash": "9f2c...",
     "images": 256, "bytes": 31457280}, "counters": {"traces": 1},
     "params": {"batch": 32}, "items_per_second": 1234.5, "speedup": 2.1,
     "efficiency": 0.4, "notes": {"input_bound_share": 0.23}}

``notes`` holds the free-form figures a bench records with ``perf.note``: they are
shown, never judged, so a note named ``threshold`` or ``items`` cannot change a
verdict. A bench measured on a GPU may also have ``gpu``: its clocks before, during
and after the timed rounds and two flags, ``clocks_moved`` and ``throttled``
(:mod:`perfsuite.bench.clocks` writes it); runs without it read as ``gpu: None``.
``cost`` is what the measured rounds cost in CPU time and memory
(:mod:`perfsuite.verdict.cost`); runs saved without it read as ``cost: None``.
Everything else in ``extra_info`` (keys other plugins add) is left alone.

:meth:`BenchResult.from_dict` is strict: a missing or mistyped key, an unknown key or
a newer schema is a :class:`~perfsuite.errors.PerfsuiteError` of one line naming the
file and the bench. This module is pure: no pytest, nothing from the measuring side.

A bench may record counters or notes before ``perf.measure`` runs (the
``trace_counter`` fixture does), so ``extra_info["perfsuite"]`` starts as a draft of
``schema``, ``counters`` and ``notes`` only. A bench that never calls ``perf.measure``
(one using pytest-benchmark's ``benchmark`` directly) is saved with that draft:
:func:`is_draft` tells it apart, and such a bench is judged on its timings alone.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perfsuite.errors import PerfsuiteError
from perfsuite.verdict.cost import COST_KEY, Cost

#: the ``extra_info`` key a result is saved under
RESULT_KEY = "perfsuite"
#: the layout version of ``extra_info["perfsuite"]``; bumped when a key is added or
#: changes meaning (2: ``cost``). Every earlier version is read.
SCHEMA_VERSION = 2


#: the keys of a draft: what a bench can record before ``perf.measure`` runs, and the
#: cost of a bench that never calls it
DRAFT_KEYS = frozenset({"schema", "counters", "notes", COST_KEY})


def is_draft(data: Any) -> bool:
    """Whether ``extra_info["perfsuite"]`` is a draft: ``perf.measure`` never ran."""
    return isinstance(data, dict) and set(data) <= DRAFT_KEYS


class Role(enum.Enum):
    """A bench's part in its group: the baseline speedups are taken over, the roofline
    efficiencies are measured against (per dataset), or neither."""

    BASELINE = "baseline"
    ROOFLINE = "roofline"
    NONE = "none"


@dataclass(frozen=True)
class DatasetRef:
    """The dataset a bench read: its name, recipe hash and, when built, its size."""

    name: str
    hash: str
    images: int | None = None
    size_bytes: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "hash": self.hash}
        if self.images is not None:
            out["images"] = self.images
        if self.size_bytes is not None:
            out["bytes"] = self.size_bytes
        return out


@dataclass(frozen=True)
class BenchResult:
    """What one bench measured and what a verdict on it needs.

    >>> r = BenchResult(group="tfdata", variant="baseline", role=Role.BASELINE, items=32,
    ...                 unit="images", scale="smoke", device="cpu", threshold=0.05)
    >>> BenchResult.from_dict(r.to_dict(), "run.json: bench x") == r
    True

    ``scale``, ``device`` and ``threshold`` are ``None`` only for runs saved by the
    previous layout that lacked them.
    """

    group: str
    variant: str
    role: Role
    items: int
    unit: str
    scale: str | None
    device: str | None
    threshold: float | None
    dataset: DatasetRef | None = None
    counters: Mapping[str, int] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)
    items_per_second: float | None = None
    speedup: float | None = None
    efficiency: float | None = None
    notes: Mapping[str, Any] = field(default_factory=dict)
    gpu: Mapping[str, Any] | None = None
    cost: Cost | None = None

    @property
    def label(self) -> str:
        return f"{self.group}/{self.variant}"

    @property
    def clocks_moved(self) -> bool:
        """The GPU's clocks moved during the timed rounds (``gpu["clocks_moved"]``)."""
        return bool(self.gpu and self.gpu.get("clocks_moved"))

    @property
    def throttled(self) -> bool:
        """The GPU named a slowdown reason during the timed rounds (``gpu["throttled"]``)."""
        return bool(self.gpu and self.gpu.get("throttled"))

    @property
    def gpu_flags(self) -> list[str]:
        """``clocks moved`` and ``throttled``, for those that hold: what a table shows."""
        flags = (("clocks moved", self.clocks_moved), ("throttled", self.throttled))
        return [name for name, on in flags if on]

    @property
    def baseline(self) -> bool:
        return self.role is Role.BASELINE

    @property
    def roofline(self) -> bool:
        return self.role is Role.ROOFLINE

    @property
    def dataset_hash(self) -> str | None:
        return self.dataset.hash if self.dataset is not None else None

    def replace(self, **changes: Any) -> BenchResult:
        """A copy with some fields changed (e.g. the derived ``speedup``)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form saved under ``extra_info["perfsuite"]``."""
        return {
            "schema": SCHEMA_VERSION,
            "group": self.group,
            "variant": self.variant,
            "role": self.role.value,
            "items": self.items,
            "unit": self.unit,
            "scale": self.scale,
            "device": self.device,
            "threshold": self.threshold,
            "dataset": self.dataset.to_dict() if self.dataset is not None else None,
            "counters": dict(self.counters),
            "params": dict(self.params),
            "items_per_second": self.items_per_second,
            "speedup": self.speedup,
            "efficiency": self.efficiency,
            "notes": dict(self.notes),
            **({"gpu": dict(self.gpu)} if self.gpu is not None else {}),
            **({COST_KEY: self.cost.to_dict()} if self.cost is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: Any, where: str) -> BenchResult:
        """Parse ``extra_info["perfsuite"]``; ``where`` names the file and the bench."""
        return _Reader(data, where).result()


_REQUIRED = ("schema", "group", "variant", "role", "items", "unit", "scale", "device")
_OPTIONAL = (
    "threshold",
    "dataset",
    "counters",
    "params",
    "items_per_second",
    "speedup",
    "efficiency",
    "notes",
    "gpu",
    COST_KEY,
)
#: the flags of a ``gpu`` object, each true or false where present
GPU_FLAGS = ("clocks_moved", "throttled")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read_cost(data: Mapping[str, Any], where: str) -> Cost | None:
    """The ``cost`` of a result or draft, ``None`` where it has none."""
    value = data.get(COST_KEY)
    return None if value is None else Cost.from_dict(value, where)


class _Reader:
    """Checks one ``extra_info["perfsuite"]`` object key by key."""

    def __init__(self, data: Any, where: str) -> None:
        self.data = data
        self.where = where

    def fail(self, why: str) -> PerfsuiteError:
        return PerfsuiteError(f"{self.where}: extra_info['{RESULT_KEY}'] {why}")

    def result(self) -> BenchResult:
        data = self.data
        if not isinstance(data, dict):
            raise self.fail(f"is not an object (got {type(data).__name__})")
        schema: Any = data.get("schema")
        if not _is_int(schema) or schema < 1:
            raise self.fail(f"has no valid 'schema' version (got {schema!r})")
        if schema > SCHEMA_VERSION:
            raise self.fail(
                f"has schema {schema}, this perfsuite reads up to {SCHEMA_VERSION}: "
                "upgrade perfsuite to read this run"
            )
        missing = [k for k in _REQUIRED if k not in data]
        if missing:
            raise self.fail(f"lacks {', '.join(repr(k) for k in missing)}")
        unknown = sorted(set(data) - {*_REQUIRED, *_OPTIONAL})
        if unknown:
            raise self.fail(f"has unknown key(s) {', '.join(repr(k) for k in unknown)}")
        try:
            role = Role(data["role"])
        except ValueError:
            choices = ", ".join(r.value for r in Role)
            raise self.fail(f"role must be one of {choices}, got {data['role']!r}") from None
        return BenchResult(
            group=self.text("group"),
            variant=self.text("variant"),
            role=role,
            items=self.positive_int("items"),
            unit=self.text("unit"),
            scale=self.text("scale"),
            device=self.text("device"),
            threshold=self.positive_number("threshold"),
            dataset=self.dataset(),
            counters=self.counters(),
            params=self.mapping("params"),
            items_per_second=self.positive_number("items_per_second"),
            speedup=self.positive_number("speedup"),
            efficiency=self.positive_number("efficiency"),
            notes=self.mapping("notes"),
            gpu=self.gpu(),
            cost=read_cost(self.data, self.where),
        )

    def text(self, key: str) -> str:
        value = self.data.get(key)
        if not isinstance(value, str) or not value:
            raise self.fail(f"{key} must be a non-empty string, got {value!r}")
        return value

    def positive_int(self, key: str) -> int:
        value = self.data.get(key)
        if not _is_int(value) or value <= 0:
            raise self.fail(f"{key} must be a positive integer, got {value!r}")
        return int(value)

    def positive_number(self, key: str) -> float | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not _is_number(value) or value <= 0:
            raise self.fail(f"{key} must be a positive number or null, got {value!r}")
        return float(value)

    def mapping(self, key: str) -> dict[str, Any]:
        value = self.data.get(key, {})
        if not isinstance(value, dict):
            raise self.fail(f"{key} must be an object, got {value!r}")
        return dict(value)

    def gpu(self) -> dict[str, Any] | None:
        value = self.data.get("gpu")
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail(f"gpu must be an object or null, got {value!r}")
        for flag in GPU_FLAGS:
            if flag in value and not isinstance(value[flag], bool):
                raise self.fail(f"gpu {flag} must be true or false, got {value[flag]!r}")
        return dict(value)

    def counters(self) -> dict[str, int]:
        counters = self.mapping("counters")
        for name, value in counters.items():
            if not _is_int(value):
                raise self.fail(f"counter {name!r} must be an integer, got {value!r}")
        return counters

    def dataset(self) -> DatasetRef | None:
        value = self.data.get("dataset")
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail(f"dataset must be an object or null, got {value!r}")
        name, digest = value.get("name"), value.get("hash")
        images, size = value.get("images"), value.get("bytes")
        if not isinstance(name, str) or not isinstance(digest, str) or not digest:
            raise self.fail(f"dataset needs a 'name' and a 'hash' string, got {value!r}")
        for key, number in (("images", images), ("bytes", size)):
            if number is not None and not _is_int(number):
                raise self.fail(f"dataset {key} must be an integer, got {number!r}")
        unknown = sorted(set(value) - {"name", "hash", "images", "bytes"})
        if unknown:
            raise self.fail(f"dataset has unknown key(s) {', '.join(map(repr, unknown))}")
        return DatasetRef(name, digest, images, size)
