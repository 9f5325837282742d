"""Reading results saved by the previous layout: flat keys in ``extra_info``.

Before ``extra_info["perfsuite"]`` existed, ``Perf.measure`` wrote ``group``,
``variant``, ``baseline``, ``roofline``, ``unit``, ``items``, ``scale``, ``device``,
``threshold``, ``params``, the dataset's ``dataset``/``dataset_hash``/
``dataset_images``/``dataset_bytes``, ``items_per_second``, ``speedup`` and
``efficiency`` side by side with the bench's counters (listed in ``exact_counters``)
and notes (listed in ``notes``). Those runs are read into the same
:class:`~perfsuite.verdict.result.BenchResult` as new ones, as the old code read them:
a value of the wrong type counted as absent. Only a result without a positive
``items`` is refused, since throughput cannot be judged without it.
"""

from __future__ import annotations

from typing import Any

from perfsuite.errors import PerfsuiteError
from perfsuite.verdict.result import BenchResult, DatasetRef, Role


def is_legacy(extra_info: dict[str, Any]) -> bool:
    """Whether ``extra_info`` holds a result in the previous (flat) layout."""
    return isinstance(extra_info.get("group"), str) and isinstance(extra_info.get("variant"), str)


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def legacy_result(info: dict[str, Any], where: str) -> BenchResult:
    """The result a flat ``extra_info`` describes (see the module docstring)."""
    items = _number(info.get("items"))
    if items is None or items != int(items):
        raise PerfsuiteError(
            f"{where}: saved by the previous perfsuite layout without a positive integer "
            f"'items' (got {info.get('items')!r}); save a new run with --benchmark-autosave"
        )
    role = Role.NONE
    if info.get("baseline"):
        role = Role.BASELINE
    elif info.get("roofline"):
        role = Role.ROOFLINE
    dataset = None
    digest = _text(info.get("dataset_hash"))
    if digest is not None:
        dataset = DatasetRef(
            name=_text(info.get("dataset")) or "unnamed",
            hash=digest,
            images=_int(info.get("dataset_images")),
            size_bytes=_int(info.get("dataset_bytes")),
        )
    counter_names = info.get("exact_counters")
    counters = {
        str(name): value
        for name in (counter_names if isinstance(counter_names, list) else [])
        if (value := _int(info.get(name))) is not None
    }
    note_names = info.get("notes")
    notes = {
        str(name): info[name]
        for name in (note_names if isinstance(note_names, list) else [])
        if isinstance(name, str) and name in info
    }
    params = info.get("params")
    return BenchResult(
        group=info["group"],
        variant=info["variant"],
        role=role,
        items=int(items),
        unit=_text(info.get("unit")) or "items",
        scale=_text(info.get("scale")),
        device=_text(info.get("device")),
        threshold=_number(info.get("threshold")),
        dataset=dataset,
        counters=counters,
        params=dict(params) if isinstance(params, dict) else {},
        items_per_second=_number(info.get("items_per_second")),
        speedup=_number(info.get("speedup")),
        efficiency=_number(info.get("efficiency")),
        notes=notes,
    )
