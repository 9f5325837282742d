"""The cold-start runner: fresh child processes, driven step by step, failures with stderr."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from perfsuite.harness import coldstart
from perfsuite.harness.coldstart import ColdProcess, ColdStartError, ColdTimings, run_cold_sample

CASES = textwrap.dedent(
    """
    import json
    import sys
    import time


    class Case:
        def __init__(self, args):
            self.args = args
            self.calls = 0

        def load(self):
            if self.args and self.args[0] == "fail-load":
                print("some library noise", file=sys.stderr)
                raise RuntimeError("boom-at-load")
            if self.args and self.args[0] == "hang-load":
                time.sleep(120)

        def call(self):
            print("printed by the case, not part of the protocol")
            self.calls += 1
            return self.calls


    def case(args):
        return Case(args)


    def echo(args):
        # args[0]: where to write the arguments as received, verbatim
        with open(args[0], "w") as handle:
            json.dump(args[1:], handle)
        return Case([])


    def broken_factory(args):
        raise ValueError("factory-refused")
    """
)


@pytest.fixture
def cases_env(tmp_path: Path) -> dict[str, str]:
    """An environment whose PYTHONPATH holds the test case module ``coldcases``."""
    (tmp_path / "coldcases.py").write_text(CASES)
    paths = [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def test_success_parses_every_step(cases_env: dict[str, str]) -> None:
    timings = run_cold_sample("coldcases:case", steady=4, timeout=60, env=cases_env)
    assert isinstance(timings, ColdTimings)
    for value in (timings.import_s, timings.load_s, timings.first_s):
        assert isinstance(value, float)
        assert value >= 0
    assert len(timings.steady_s) == 4
    assert all(s >= 0 for s in timings.steady_s)


def test_steps_are_driven_one_at_a_time(cases_env: dict[str, str]) -> None:
    with ColdProcess("coldcases:case", steady=2, timeout=60, env=cases_env) as proc:
        assert set(proc.ready()) == {"import_s"}
        assert set(proc.load()) == {"load_s"}
        assert set(proc.first()) == {"first_s"}
        assert proc.running
        assert len(proc.steady()["steady_s"]) == 2
        assert not proc.running
        assert proc.timings().steady_s == proc.figures["steady_s"]


def test_arguments_reach_the_child_verbatim_without_a_shell(
    cases_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[dict[str, Any]] = []
    real_popen = subprocess.Popen

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append({"args": args, "kwargs": kwargs})
        return real_popen(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", spy)
    out = tmp_path / "args.json"
    tricky = ["$(echo injected)", "a b; echo c", "*", "`id`", "'quoted'"]
    run_cold_sample("coldcases:echo", [str(out), *tricky], steady=1, timeout=60, env=cases_env)
    assert json.loads(out.read_text()) == tricky  # a shell would expand, split or glob these
    assert len(seen) == 1
    assert seen[0]["kwargs"]["shell"] is False
    command = seen[0]["args"][0]
    assert isinstance(command, list)
    assert command[1:3] == ["-m", "perfsuite.harness.coldstart"]


def test_nonzero_exit_reports_code_and_stderr(cases_env: dict[str, str]) -> None:
    with pytest.raises(ColdStartError) as info:
        run_cold_sample("coldcases:case", ["fail-load"], timeout=60, env=cases_env)
    message = str(info.value)
    assert "coldcases:case" in message
    assert "exited with code 1 before load" in message
    assert "RuntimeError: boom-at-load" in message
    assert "\n" not in message


def test_failing_factory_reports_stderr(cases_env: dict[str, str]) -> None:
    with pytest.raises(ColdStartError, match=r"exited with code 1 before ready.*factory-refused"):
        run_cold_sample("coldcases:broken_factory", timeout=60, env=cases_env)


def test_missing_module_reports_stderr(cases_env: dict[str, str]) -> None:
    with pytest.raises(ColdStartError, match=r"ModuleNotFoundError.*no_such_module_here"):
        run_cold_sample("no_such_module_here:case", timeout=60, env=cases_env)


def test_timeout_kills_the_child_and_names_the_timeout(cases_env: dict[str, str]) -> None:
    proc = ColdProcess("coldcases:case", ["hang-load"], timeout=2, env=cases_env)
    try:
        proc.ready()
        with pytest.raises(ColdStartError, match=r"timed out after 2 s waiting for load"):
            proc.load()
        assert not proc.running
    finally:
        proc.close()


def test_start_many_gives_separate_ready_processes(cases_env: dict[str, str]) -> None:
    procs = coldstart.start_many(2, "coldcases:case", steady=1, timeout=60, env=cases_env)
    try:
        assert len({proc.pid for proc in procs}) == 2
        for proc in procs:
            proc.load()
            proc.first()
            proc.steady()
            assert len(proc.timings().steady_s) == 1
    finally:
        for proc in procs:
            proc.close()


def test_bad_target_is_rejected_before_starting() -> None:
    with pytest.raises(ValueError, match="must be 'module:function'"):
        ColdProcess("no_colon_here")


def test_cold_warm_ratio_uses_the_median_steady_call() -> None:
    timings = ColdTimings(import_s=1.0, load_s=0.5, first_s=1.0, steady_s=[0.3, 0.1, 0.2])
    assert timings.steady_median == 0.2
    assert timings.cold_warm_ratio == pytest.approx(5.0)
    assert ColdTimings(import_s=0, load_s=0, first_s=1.0).cold_warm_ratio is None
