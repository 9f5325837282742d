"""Every perfsuite option, on the command line and as an ini key; bad values are usage errors."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from perfsuite.config import PerfConfig, default_data_dir, perf_config
from perfsuite.options import (
    OPTIONS,
    Device,
    Scale,
    ServiceAddress,
    parse_device,
    parse_path,
    parse_rounds,
    parse_scale,
    parse_service_address,
    parse_threshold,
)

pytest_plugins = ("pytester",)


class _NoCollectionAtUnconfigure:
    """Plugin for the configs these tests build: like pytester's inline runs, no full
    garbage collection when one is unconfigured (recent pytest runs one there). In a
    session that has imported TensorFlow and torch, each took 1-6 s of teardown."""

    @staticmethod
    def pytest_configure(config: pytest.Config) -> None:
        try:
            from _pytest.unraisableexception import gc_collect_iterations_key
        except ImportError:  # an older pytest collects no garbage there
            return
        config.stash[gc_collect_iterations_key] = 0


@pytest.fixture
def pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.plugins.append(_NoCollectionAtUnconfigure())
    return pytester


FLAGS = {
    "--perf-scale",
    "--perf-data-dir",
    "--perf-images",
    "--perf-device",
    "--perf-recipes",
    "--perf-rounds",
    "--perf-threshold",
    "--perf-memory-threshold",
    "--perf-gate",
    "--perf-ab-args",
    "--perf-allow-machine-mismatch",
    "--perf-report",
    "--perf-tfdata-service",
}


# -- the parsers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("smoke", Scale.SMOKE),
        ("default", Scale.DEFAULT),
        ("full", Scale.FULL),
        (" FULL ", Scale.FULL),
    ],
)
def test_parse_scale(text: str, expected: Scale) -> None:
    assert parse_scale(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"), [("auto", Device.AUTO), ("cpu", Device.CPU), ("GPU", Device.GPU)]
)
def test_parse_device(text: str, expected: Device) -> None:
    assert parse_device(text) is expected


@pytest.mark.parametrize(
    ("parse", "bad", "allowed"),
    [(parse_scale, "huge", "smoke, default, full"), (parse_device, "tpu", "auto, cpu, gpu")],
)
def test_enum_parsers_name_the_allowed_values(parse: Any, bad: str, allowed: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=f"'{bad}'.*{allowed}"):
        parse(bad)


@pytest.mark.parametrize(
    ("text", "expected"), [("0.05", 0.05), ("5%", 0.05), ("12.5%", 0.125), ("0.999", 0.999)]
)
def test_parse_threshold(text: str, expected: float) -> None:
    assert parse_threshold(text) == pytest.approx(expected)


@pytest.mark.parametrize("bad", ["abc", "0", "-0.1", "10", "%", "2000%", "1", "1.5", "100%"])
def test_parse_threshold_rejects(bad: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="threshold"):
        parse_threshold(bad)


def test_parse_rounds() -> None:
    assert parse_rounds("1") == 1
    assert parse_rounds("20") == 20


@pytest.mark.parametrize("bad", ["0", "-3", "2.5", "x", ""])
def test_parse_rounds_rejects(bad: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r">= 1"):
        parse_rounds(bad)


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [
        ("grpc://localhost:5050", "localhost", 5050),
        ("grpc://10.0.0.7:1", "10.0.0.7", 1),
        ("grpc://[::1]:65535", "[::1]", 65535),
        ("grpc://dispatcher.svc:8080 ", "dispatcher.svc", 8080),
    ],
)
def test_parse_service_address(text: str, host: str, port: int) -> None:
    address = parse_service_address(text)
    assert address == ServiceAddress(host, port)
    assert address.target == f"grpc://{host}:{port}"
    assert str(address) == address.target


@pytest.mark.parametrize(
    "bad",
    [
        "localhost:5050",
        "grpc://host:0",
        "grpc://host:70000",
        "http://host:1",
        "grpc://host",
        "grpc://:5050",
        "",
    ],
)
def test_parse_service_address_rejects(bad: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"grpc://HOST:PORT"):
        parse_service_address(bad)


def test_parse_path_expands_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert parse_path("~/data") == tmp_path / "data"
    with pytest.raises(argparse.ArgumentTypeError, match="empty"):
        parse_path("  ")


def test_every_option_has_one_prefix_and_an_ini_key() -> None:
    assert {spec.flag for spec in OPTIONS} == FLAGS
    for spec in OPTIONS:
        assert spec.ini == spec.flag.removeprefix("--").replace("-", "_")
        assert spec.help


def test_default_data_dir_honours_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_data_dir() == tmp_path / "xdg" / "perfsuite" / "datasets"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_data_dir() == tmp_path / "home" / ".cache" / "perfsuite" / "datasets"


# -- through pytest: command line and ini ------------------------------------------------


def _good_values(root: Path) -> list[tuple[str, str, str, Any]]:
    """(flag, command-line value, PerfConfig field, expected) for every option."""
    (root / "recipes").mkdir(exist_ok=True)
    return [
        ("--perf-scale", "smoke", "scale", Scale.SMOKE),
        ("--perf-device", "cpu", "device", Device.CPU),
        ("--perf-rounds", "9", "rounds", 9),
        ("--perf-threshold", "7%", "threshold", pytest.approx(0.07)),
        ("--perf-memory-threshold", "150%", "memory_threshold", pytest.approx(1.5)),
        (
            "--perf-tfdata-service",
            "grpc://dispatcher:5000",
            "tfdata_service",
            ServiceAddress("dispatcher", 5000),
        ),
        ("--perf-data-dir", "cache", "data_dir", root / "cache"),
        ("--perf-images", "photos", "images", root / "photos"),
        ("--perf-recipes", str(root / "recipes"), "recipes", root / "recipes"),
        ("--perf-report", "out", "report", root / "out"),
        ("--perf-gate", "true", "gate", True),
        (
            "--perf-ab-args",
            "--max-pairs 40 --max-seconds 30",
            "ab_args",
            ("--max-pairs", "40", "--max-seconds", "30"),
        ),
        ("--perf-allow-machine-mismatch", "true", "allow_machine_mismatch", True),
    ]


def test_defaults(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(pytester.path / "xdg"))
    cfg = perf_config(pytester.parseconfigure())
    assert cfg == PerfConfig(
        rootdir=cfg.rootdir, data_dir=pytester.path / "xdg" / "perfsuite" / "datasets"
    )
    assert cfg.scale is Scale.DEFAULT
    assert cfg.device is Device.AUTO
    assert cfg.threshold == 0.05
    assert cfg.rounds is None
    assert cfg.images is None
    assert cfg.gate is False
    assert cfg.tfdata_service is None


@pytest.mark.parametrize("index", range(len(FLAGS)))
def test_each_option_on_the_command_line(pytester: pytest.Pytester, index: int) -> None:
    flag, value, field, expected = _good_values(pytester.path)[index]
    args = [flag] if field in {"gate", "allow_machine_mismatch"} else [f"{flag}={value}"]
    cfg = perf_config(pytester.parseconfigure(*args))
    assert getattr(cfg, field) == expected


@pytest.mark.parametrize("index", range(len(FLAGS)))
def test_each_option_as_an_ini_key(pytester: pytest.Pytester, index: int) -> None:
    flag, value, field, expected = _good_values(pytester.path)[index]
    pytester.makeini(f"[pytest]\n{flag.removeprefix('--').replace('-', '_')} = {value}\n")
    cfg = perf_config(pytester.parseconfigure())
    assert getattr(cfg, field) == expected


def test_recipes_option_must_be_a_folder(pytester: pytest.Pytester) -> None:
    with pytest.raises(pytest.UsageError, match=r"--perf-recipes .*missing: not a folder"):
        pytester.parseconfigure(f"--perf-recipes={pytester.path / 'missing'}")


def test_command_line_wins_over_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nperf_scale = full\nperf_rounds = 3\n")
    cfg = perf_config(pytester.parseconfigure("--perf-scale=smoke"))
    assert cfg.scale is Scale.SMOKE
    assert cfg.rounds == 3
    assert cfg.default_rounds == 3


def test_rounds_default_per_scale(pytester: pytest.Pytester) -> None:
    assert perf_config(pytester.parseconfigure("--perf-scale=smoke")).default_rounds >= 7
    cfg = perf_config(pytester.parseconfigure("--perf-scale=full"))
    assert cfg.pick(smoke=1, default=2, full=3) == 3


BAD_COMMAND_LINE = [
    ("--perf-scale", "huge", ["smoke, default, full"]),
    ("--perf-device", "tpu", ["auto, cpu, gpu"]),
    ("--perf-rounds", "0", [">= 1"]),
    ("--perf-threshold", "abc", ["0.05", "5%"]),
    ("--perf-threshold", "0", ["above 0"]),
    ("--perf-tfdata-service", "localhost:5000", ["grpc://HOST:PORT"]),
    ("--perf-data-dir", "", ["expected a path"]),
]


@pytest.mark.parametrize(("flag", "value", "fragments"), BAD_COMMAND_LINE)
def test_bad_command_line_value_is_a_usage_error(
    pytester: pytest.Pytester, flag: str, value: str, fragments: list[str]
) -> None:
    pytester.makepyfile("def test_never(): raise AssertionError('must not run')")
    result = pytester.runpytest("-p", "no:cacheprovider", f"{flag}={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = str(result.stderr)
    assert f"argument {flag}" in err
    if value:
        assert repr(value) in err
    for fragment in fragments:
        assert fragment in err
    assert "Traceback" not in err + str(result.stdout)


BAD_INI = [
    ("perf_scale", "huge", ["smoke, default, full"]),
    ("perf_device", "tpu", ["auto, cpu, gpu"]),
    ("perf_rounds", "-1", [">= 1"]),
    ("perf_threshold", "50", ["did you mean 50% (0.5)?"]),
    ("perf_tfdata_service", "grpc://host:99999", ["grpc://HOST:PORT"]),
    ("perf_gate", "maybe", ["true or false"]),
    ("perf_allow_machine_mismatch", "sometimes", ["true or false"]),
]


@pytest.mark.parametrize(("key", "value", "fragments"), BAD_INI)
def test_bad_ini_value_is_a_usage_error(
    pytester: pytest.Pytester, key: str, value: str, fragments: list[str]
) -> None:
    pytester.makeini(f"[pytest]\n{key} = {value}\n")
    pytester.makepyfile("def test_never(): raise AssertionError('must not run')")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = str(result.stderr)
    assert f"ini option {key}:" in err
    assert repr(value) in err
    for fragment in fragments:
        assert fragment in err
    assert "Traceback" not in err + str(result.stdout)


def test_help_lists_the_perfsuite_group(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    assert result.ret == pytest.ExitCode.OK
    out = str(result.stdout)
    assert "perfsuite: ML pipeline benchmarks and regression gate:" in out
    for flag in FLAGS:
        assert flag in out
    for spec in OPTIONS:
        assert f"{spec.ini} (" in out  # the ini-options section lists every key
    assert "{smoke,default,full}" in out
    assert "{auto,cpu,gpu}" in out
