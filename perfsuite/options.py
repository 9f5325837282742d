"""The ``perfsuite`` option group: every option is also an ini key, and is parsed where it enters.

Each ``parse_*`` callable turns a string into a domain value or raises
``argparse.ArgumentTypeError`` with a message naming the allowed values, so a
bad value on the command line is a pytest usage error, and the same callable
checks the ini value in :mod:`perfsuite.config`.
"""

from __future__ import annotations

import argparse
import enum
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


class Scale(enum.Enum):
    """How big the benches' datasets and step counts are."""

    SMOKE = "smoke"  # seconds per bench, for CI
    DEFAULT = "default"  # the whole suite in a few minutes on a 2-core CPU
    FULL = "full"  # the studies' own sizes, for nightly GPU runners


class Device(enum.Enum):
    """Which accelerator the session may use."""

    AUTO = "auto"  # a GPU if one is found, else CPU only
    CPU = "cpu"  # never a GPU: GPU benches skip even where one exists
    GPU = "gpu"  # a GPU is required: GPU benches error where none is found


def _enum_parser(kind: type[enum.Enum]) -> Callable[[str], Any]:
    allowed = ", ".join(m.value for m in kind)

    def parse(value: str) -> Any:
        try:
            return kind(value.strip().lower())
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"invalid choice {value!r} (choose from {allowed})"
            ) from None

    parse.__name__ = kind.__name__.lower()
    return parse


parse_scale: Callable[[str], Scale] = _enum_parser(Scale)
parse_device: Callable[[str], Device] = _enum_parser(Device)


def parse_path(value: str) -> Path:
    """A non-empty path, with ``~`` expanded."""
    if not value.strip():
        raise argparse.ArgumentTypeError("expected a path, got an empty string")
    return Path(value).expanduser()


def parse_threshold(value: str) -> float:
    """A minimum effect size as a fraction below 1: ``0.05`` or ``5%`` mean five percent.

    A bare number of 1 or more is refused with the fraction it most likely meant
    (``2`` -> "did you mean 2% (0.02)?"), never taken as 200%.
    """
    text = value.strip()
    percent = text.endswith("%")
    try:
        number = float(text[:-1]) / 100 if percent else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid threshold {value!r} (a fraction like 0.05 or a percentage like 5%)"
        ) from None
    if not percent and 1 <= number < 100:
        raise argparse.ArgumentTypeError(
            f"invalid threshold {value!r} (a fraction below 1): "
            f"did you mean {text}% ({number / 100:g})?"
        )
    if not 0 < number < 1:
        raise argparse.ArgumentTypeError(
            f"invalid threshold {value!r} (must be above 0 and below 1, e.g. 0.05 or 5%)"
        )
    return number


def parse_memory_threshold(value: str) -> float:
    """A peak-memory rise that counts as a regression, as a fraction of the baseline's
    peak: ``0.25`` or ``25%``; above 1 is allowed (``1.5`` is half as much again)."""
    text = value.strip()
    percent = text.endswith("%")
    try:
        number = float(text[:-1]) / 100 if percent else float(text)
    except ValueError:
        number = -1.0
    if not number > 0 or number != number or number == float("inf"):
        raise argparse.ArgumentTypeError(
            f"invalid memory threshold {value!r} (a fraction above 0 like 0.25, or 25%)"
        )
    return number


def parse_count(value: str, least: int = 1, noun: str = "count") -> int:
    """``value``, ASCII digits alone (no sign, space or ``_``), as a whole number of at
    least ``least``; otherwise an argparse type error naming the ``noun`` and ``value``."""
    if not (value.isascii() and value.isdigit()) or int(value) < least:
        raise argparse.ArgumentTypeError(f"invalid {noun} {value!r} (a whole number >= {least})")
    return int(value)


def parse_seconds(value: str) -> float:
    """A number of seconds above 0."""
    try:
        number = float(value)
    except ValueError:
        number = 0.0
    if not number > 0:
        raise argparse.ArgumentTypeError(f"invalid seconds {value!r} (a number > 0)")
    return number


def parse_rounds(value: str) -> int:
    """A number of measured rounds, at least 1."""
    return parse_count(value, 1, "rounds")


#: a bench's log-ratio spread across unchanged runs, and the log-ratio of its time that
#: the gate's or the nightly's run read against the A/B's base, slower positive (None:
#: no reading)
Spread = tuple[float, float | None]


def parse_spreads(value: str) -> dict[str, Spread]:
    """The JSON file ``value``: an object of node ids, each with a spread above 0, alone
    or as ``[spread, screen]`` (:data:`Spread`)."""
    try:
        found = json.loads(Path(value).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"cannot read {value}: {exc}") from None

    def number(x: object) -> float | None:
        """``x`` as a finite float, or None where it is none."""
        if not isinstance(x, (int, float)) or isinstance(x, bool):
            return None
        try:
            value = float(x)
        except OverflowError:  # an integer beyond a float's range
            return None
        return value if math.isfinite(value) else None

    def spread(v: object) -> Spread | None:
        """``v`` as a spread, or None where it is none."""
        both = v if isinstance(v, list) else [v, None]
        if len(both) != 2:
            return None
        across, screen = number(both[0]), None if both[1] is None else number(both[1])
        if across is None or across <= 0 or (both[1] is not None and screen is None):
            return None
        return across, screen

    bad = f"{value} is not an object of node ids to spreads > 0 (or [spread, screen])"
    if not isinstance(found, dict):
        raise argparse.ArgumentTypeError(bad)
    spreads = {}
    for nodeid, given in found.items():
        read = spread(given)
        if read is None:
            raise argparse.ArgumentTypeError(bad)
        spreads[str(nodeid)] = read
    return spreads


_ADDRESS = re.compile(r"^grpc://(?P<host>[A-Za-z0-9.\-]+|\[[0-9A-Fa-f:]+\]):(?P<port>\d{1,5})$")


@dataclass(frozen=True)
class ServiceAddress:
    """The address of a running tf.data service dispatcher."""

    host: str
    port: int

    @property
    def target(self) -> str:
        """The ``grpc://host:port`` form tf.data takes."""
        return f"grpc://{self.host}:{self.port}"

    def __str__(self) -> str:
        return self.target


def parse_ab_args(value: str) -> tuple[str, ...]:
    """``perfsuite ab`` options, as one shell-quoted string (``"--max-pairs 40"``)."""
    import shlex

    try:
        words = tuple(shlex.split(value))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"invalid perfsuite ab options {value!r}: {exc}") from None
    if "--" in words:
        raise argparse.ArgumentTypeError(
            f"invalid perfsuite ab options {value!r}: the pytest arguments come from the "
            "gated run; give perfsuite ab's own options only"
        )
    return words


def parse_service_address(value: str) -> ServiceAddress:
    """``grpc://HOST:PORT`` with a port in 1..65535."""
    match = _ADDRESS.match(value.strip())
    port = int(match["port"]) if match else 0
    if not match or not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(
            f"invalid dispatcher address {value!r} (expected grpc://HOST:PORT, port 1-65535)"
        )
    return ServiceAddress(match["host"], port)


@dataclass(frozen=True)
class OptionSpec:
    """One option: its flag, its ini key, how its value is parsed, and its help."""

    flag: str
    parse: Callable[[str], Any] | None
    help: str
    default: str = ""
    metavar: str | None = None

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def ini(self) -> str:
        return self.dest

    @property
    def is_flag(self) -> bool:
        return self.parse is None


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "--perf-scale",
        parse_scale,
        "smoke (seconds per bench, CI), default "
        "(the suite in minutes on 2 CPU cores) or full (the studies' sizes, GPU nightly)",
        "default",
        "{smoke,default,full}",
    ),
    OptionSpec(
        "--perf-data-dir",
        parse_path,
        "where generated datasets are cached "
        "(default: $XDG_CACHE_HOME/perfsuite/datasets or ~/.cache/perfsuite/datasets)",
        metavar="PATH",
    ),
    OptionSpec(
        "--perf-images",
        parse_path,
        "bench on this folder of JPEGs (labels from "
        "subfolder names) instead of the synthetic imagenet-like dataset",
        metavar="PATH",
    ),
    OptionSpec(
        "--perf-device",
        parse_device,
        "auto (a GPU where found), cpu (skip GPU benches) "
        "or gpu (GPU benches fail where none is found)",
        "auto",
        "{auto,cpu,gpu}",
    ),
    OptionSpec(
        "--perf-recipes",
        parse_path,
        "an extra folder of dataset recipe files "
        "(*.toml), searched before the built-in fixtures/recipes",
        metavar="DIR",
    ),
    OptionSpec(
        "--perf-rounds",
        parse_rounds,
        "measured rounds per bench (default: 7 at smoke, "
        "12 at default, 20 at full scale; a perf marker's rounds wins)",
        metavar="N",
    ),
    OptionSpec(
        "--perf-threshold",
        parse_threshold,
        "minimum change of the median that counts "
        "as slower or faster, e.g. 0.05 or 5% (a perf marker's threshold wins)",
        "0.05",
        "FRACTION",
    ),
    OptionSpec(
        "--perf-memory-threshold",
        parse_memory_threshold,
        "peak-memory rise that counts as a regression, as a fraction of the "
        "baseline's peak (and at least 64 MB), e.g. 0.25 or 25% (a perf marker's "
        "memory_threshold wins)",
        "0.25",
        "FRACTION",
    ),
    OptionSpec(
        "--perf-gate",
        None,
        "exit non-zero when a compared bench is slower, an exact "
        "counter rose, the baseline's machine differs, or nothing could be judged "
        "(needs --benchmark-compare)",
    ),
    OptionSpec(
        "--perf-ab-args",
        parse_ab_args,
        "perfsuite ab options for the A/B that confirms a gate's suspects "
        '(e.g. "--max-pairs 40 --max-seconds 30"; default: its budget at --perf-scale)',
        metavar="ARGS",
    ),
    OptionSpec(
        "--perf-allow-machine-mismatch",
        None,
        "compare and gate against a baseline saved on a different machine or stack",
    ),
    OptionSpec(
        "--perf-report",
        parse_path,
        "write a Markdown summary and PNG plots into DIR",
        metavar="DIR",
    ),
    OptionSpec(
        "--perf-tfdata-service",
        parse_service_address,
        "use this running tf.data "
        "service dispatcher (grpc://HOST:PORT) instead of starting local processes",
        metavar="grpc://HOST:PORT",
    ),
)


def add_options(parser: pytest.Parser) -> None:
    """Register the perfsuite option group and its ini keys."""
    group = parser.getgroup("perfsuite", "perfsuite: ML pipeline benchmarks and regression gate")
    for spec in OPTIONS:
        if spec.is_flag:
            group.addoption(
                spec.flag,
                action="store_true",
                default=None,
                dest=spec.dest,
                help=spec.help.replace("%", "%%"),
            )
            parser.addini(spec.ini, f"default for {spec.flag}", type="bool", default=False)
        else:
            group.addoption(
                spec.flag,
                type=spec.parse,
                default=None,
                dest=spec.dest,
                metavar=spec.metavar,
                help=spec.help.replace("%", "%%"),
            )
            parser.addini(spec.ini, f"default for {spec.flag}", type="string", default=spec.default)
