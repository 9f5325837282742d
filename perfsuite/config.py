"""perfsuite's settings, built once per session as a frozen dataclass.

Precedence: ``@pytest.mark.perf(...)`` keyword > command line > ini > default.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from perfsuite.options import OPTIONS, Device, Scale, ServiceAddress

#: measured rounds per scale. Mann-Whitney U, two-sided, needs at least 7 samples on
#: each side before p < 0.002 is reachable at all (with 6 the smallest p is 2/924;
#: ``perfsuite.verdict.stats.MIN_RANK_SAMPLES``): every scale meets that, and default
#: and full leave room for power on noisy runners.
ROUNDS: dict[Scale, int] = {Scale.SMOKE: 7, Scale.DEFAULT: 12, Scale.FULL: 20}
WARMUP_ROUNDS: dict[Scale, int] = {Scale.SMOKE: 1, Scale.DEFAULT: 2, Scale.FULL: 3}


def default_data_dir() -> Path:
    """``$XDG_CACHE_HOME/perfsuite/datasets``, else ``~/.cache/perfsuite/datasets``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "perfsuite" / "datasets"


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
    gate: bool = False
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

    def pick(self, *, smoke: Any, default: Any, full: Any) -> Any:
        """The value for this session's scale: ``cfg.pick(smoke=2, default=10, full=100)``."""
        return {Scale.SMOKE: smoke, Scale.DEFAULT: default, Scale.FULL: full}[self.scale]

    @property
    def default_rounds(self) -> int:
        return self.rounds if self.rounds is not None else ROUNDS[self.scale]

    @property
    def default_warmup_rounds(self) -> int:
        return WARMUP_ROUNDS[self.scale]


@dataclass(frozen=True)
class BenchSettings:
    """Per-bench settings: ``@pytest.mark.perf(threshold=0.10, rounds=20, warmup_rounds=3)``."""

    threshold: float
    rounds: int
    warmup_rounds: int

    @classmethod
    def for_item(cls, cfg: PerfConfig, item: pytest.Item) -> BenchSettings:
        """Merge the item's ``perf`` markers over the session settings; reject unknown keys."""
        values: dict[str, Any] = {
            "threshold": cfg.threshold,
            "rounds": cfg.default_rounds,
            "warmup_rounds": cfg.default_warmup_rounds,
        }
        known = {f.name for f in dataclasses.fields(cls)}
        for marker in reversed(list(item.iter_markers("perf"))):
            if marker.args:
                raise pytest.UsageError(
                    f"{item.nodeid}: perf marker takes keywords only ({', '.join(sorted(known))})"
                )
            unknown = set(marker.kwargs) - known
            if unknown:
                raise pytest.UsageError(
                    f"{item.nodeid}: unknown perf marker keyword(s) {', '.join(sorted(unknown))}"
                    f" (known: {', '.join(sorted(known))})"
                )
            values.update(marker.kwargs)
        settings = cls(**values)
        settings.check(item.nodeid)
        return settings

    def check(self, where: str) -> None:
        if not (isinstance(self.threshold, int | float) and 0 < self.threshold < 10):
            raise pytest.UsageError(
                f"{where}: perf(threshold={self.threshold!r}) must be in (0, 10)"
            )
        if not (isinstance(self.rounds, int) and self.rounds >= 1):
            raise pytest.UsageError(f"{where}: perf(rounds={self.rounds!r}) must be an int >= 1")
        if not (isinstance(self.warmup_rounds, int) and self.warmup_rounds >= 0):
            raise pytest.UsageError(
                f"{where}: perf(warmup_rounds={self.warmup_rounds!r}) must be an int >= 0"
            )
