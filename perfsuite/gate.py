"""The pytest side of verdicts: compare with ``--benchmark-compare``, gate with ``--perf-gate``.

:class:`VerdictPlugin` is registered by perfsuite's ``pytest_configure`` and fetched
with ``config.pluginmanager.get_plugin(PLUGIN_NAME)``. It

* resolves the baseline at configure time the way ``--benchmark-compare`` does (the
  newest saved run of this machine, or the given run id/glob), asking
  :class:`~perfsuite.verdict.storage.Storage`, as it does for the runs saved before
  this session (the noise band's history and the report's plots); under ``--perf-gate`` a
  broken or missing baseline is a usage error naming the file, otherwise
  pytest-benchmark's own handling stands and perfsuite adds one note (the closest
  run ids), as it does when there is no baseline yet;
* keeps each bench's raw per-round timings as the bench finishes, so the current run
  is judged whether or not it is saved;
* judges every bench at session end, sets a non-zero exit status under
  ``--perf-gate`` when one is slower, an exact counter rose, the baseline's machine
  differs (unless ``--perf-allow-machine-mismatch``), or nothing could be judged (no
  bench comparable: another ``--perf-scale`` or ``--perf-images``, an empty baseline,
  timings all zero), writes ``--perf-report``, and prints the "perfsuite verdict"
  section.

``--perf-gate`` without ``--benchmark-compare``, or with ``--benchmark-disable`` or
``--benchmark-skip``, is a usage error at startup (exit 4): such a gate could only pass.

Nothing heavy is imported until a comparison or report is asked for.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from perfsuite.config import PerfConfig
from perfsuite.errors import PerfsuiteError

if TYPE_CHECKING:
    from perfsuite.verdict.compare import RunComparison
    from perfsuite.verdict.gate_rules import GateDecision
    from perfsuite.verdict.runs import Run
    from perfsuite.verdict.storage import Storage

PLUGIN_NAME = "perfsuite-verdict"
CURRENT_SOURCE = "this session"
#: pytest exit statuses the gate's own replaces: all passed, or no test was collected
UNDECIDED_STATUS = (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)


class VerdictPlugin:
    """Per-session verdict state and the hooks that fill it."""

    def __init__(self, config: pytest.Config, settings: PerfConfig) -> None:
        self.config = config
        self.settings = settings
        self.baseline: Run | None = None
        self.notes: list[str] = []
        self.comparison: RunComparison | None = None
        self.decision: GateDecision | None = None
        self.report_files: list[Path] = []
        self._measured: dict[str, Any] = {}
        self._saved_datetime: str | None = None
        self._machine_info: dict[str, Any] | None = None
        # Runs saved before this moment are this session's history (Storage's one order).
        self._started = dt.datetime.now(dt.timezone.utc)
        self._storage: Storage | None = None
        self._saved_commit: dict[str, Any] | None = None
        self._confirmation_dir: Path | None = None  # the confirming A/B's report
        self._deselected: set[str] = set()  # node ids -k or -m left out of this session
        # The baseline now, before pytest-benchmark loads it: a broken or unknown one is a
        # usage error naming the file, raised here so it comes before pytest-benchmark's
        # own loading (which fails on some broken files).
        self.resolve_baseline()

    # -- options ---------------------------------------------------------------------

    def _option(self, name: str) -> Any:
        return self.config.getoption(name, None)

    @property
    def compare_spec(self) -> bool | str | None:
        """``True`` (newest saved run), a run id/glob, or ``None`` when not comparing."""
        value = self._option("benchmark_compare")
        return value if value else None

    @property
    def saving(self) -> bool:
        return bool(self._option("benchmark_save") or self._option("benchmark_autosave"))

    @property
    def storage(self) -> Storage:
        """This machine's runs in ``--benchmark-storage`` (a path or ``file://`` URI)."""
        if self._storage is None:
            from perfsuite.verdict.storage import Storage

            self._storage = Storage.for_session(
                str(self._option("benchmark_storage") or "file://./.benchmarks")
            )
        return self._storage

    @property
    def active(self) -> bool:
        """Off in xdist workers and where benchmarks are disabled or skipped."""
        if os.environ.get("PYTEST_XDIST_WORKER"):
            return False
        return not (self._option("benchmark_disable") or self._option("benchmark_skip"))

    # -- hooks -----------------------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """``--perf-gate`` that could judge nothing is a usage error at session start.

        Raised here, before anything is collected or measured (exit 4, one line), not
        while the configuration is parsed, so tools that only parse it (``pytest --help``,
        plugins reading ``PerfConfig``) are unaffected.
        """
        if not self.settings.gate or os.environ.get("PYTEST_XDIST_WORKER"):
            return
        from perfsuite.verdict.gate_rules import unmeasured

        problem = unmeasured(self._option)
        if problem is not None:
            raise pytest.UsageError(problem)
        if self.compare_spec is None:
            raise pytest.UsageError(
                "--perf-gate has nothing to judge: add --benchmark-compare "
                "(the newest saved run) or --benchmark-compare=RUN_ID"
            )

    def resolve_baseline(self) -> None:
        """Load the ``--benchmark-compare`` baseline, or note that there is none yet."""
        spec = self.compare_spec
        if not self.active or spec is None:
            return
        root = self.storage.root
        try:
            if root.exists() and not root.is_dir():
                raise PerfsuiteError(
                    f"--benchmark-storage {root}: is a file, not a folder of saved runs; "
                    "pass a folder (--benchmark-compare reads its runs from there)"
                )
            self.baseline = self._load_baseline(spec)
        except PerfsuiteError as exc:
            said = str(exc) if str(exc).startswith("--") else f"baseline {exc}"
            if self.settings.gate:
                raise pytest.UsageError(f"perfsuite: {said}") from None
            # Not gating: pytest-benchmark's own handling (a warning) stands, plus one line.
            self.notes.append(f"perfsuite: {said}")

    def _load_baseline(self, spec: bool | str) -> Run | None:
        from perfsuite.verdict.storage import gate_skip_note

        storage = self.storage
        if spec is True:
            path, failed = storage.gate_baseline() if self.settings.gate else (storage.latest(), [])
            if failed:
                self.notes.append(gate_skip_note(storage, failed, path))
            if path is None:
                where = storage.where
                self.notes.append(
                    f"no baseline in {where} yet: this run becomes the first baseline"
                    if self.saving
                    else f"no baseline in {where} yet: save this run with --benchmark-autosave "
                    "to make it the first baseline"
                )
                return None
        else:
            path = storage.resolve(str(spec))
        return storage.load(path)

    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> None:
        """Keep the bench's pytest-benchmark record (raw timings, extra_info) once it ran."""
        if call.when != "call":
            return
        funcargs = getattr(item, "funcargs", None) or {}
        fixture = funcargs.get("benchmark")
        record = getattr(fixture, "stats", None)
        if record is not None and getattr(record, "fullname", None):
            self._measured[record.fullname] = record
            from perfsuite.config import record_plain_marker

            record_plain_marker(item, getattr(fixture, "extra_info", None))

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        self._deselected.update(item.nodeid for item in items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_benchmark_update_json(
        self, config: pytest.Config, benchmarks: Any, output_json: dict[str, Any]
    ) -> None:
        # The saved run's timestamp, shown with the session's run in the report.
        stamp = output_json.get("datetime")
        self._saved_datetime = stamp if isinstance(stamp, str) else None
        machine_info = output_json.get("machine_info")
        if isinstance(machine_info, dict):
            self._machine_info = machine_info
        commit_info = output_json.get("commit_info")
        if isinstance(commit_info, dict):
            self._saved_commit = commit_info

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.active:
            return
        if self.baseline is None and self.settings.gate:
            from perfsuite.verdict.gate_rules import no_baseline

            self.decision = no_baseline(self.saving)
            if session.exitstatus in UNDECIDED_STATUS:
                session.exitstatus = self.decision.exit_status
        if self.baseline is None and self.settings.report is None:
            return
        current = self.current_run()
        if self.baseline is not None:
            from perfsuite.verdict.compare import compare_runs, within_selection
            from perfsuite.verdict.gate_rules import gate_decision

            compared = compare_runs(
                self.baseline, current, self.settings.threshold, self._history()
            )
            params, option = self.config.invocation_params, self.config.option
            args = [] if getattr(option, "pyargs", False) else self.config.args
            self.comparison = within_selection(
                compared, args, params.dir, self.config.rootpath, self._deselected
            )
            if self.settings.gate:
                allow = self.settings.allow_machine_mismatch
                if allow or not self.comparison.mismatch:
                    self.comparison = self._confirm(self.comparison)
                self.decision = gate_decision(self.comparison, allow, bounds=True)
                if not self.decision.passed and session.exitstatus in UNDECIDED_STATUS:
                    session.exitstatus = self.decision.exit_status
                self._mark(self.decision.outcome.value, self.decision.message)
        if self.settings.report is not None:
            self._write_report(self.settings.report, current)
            if self._confirmation_dir is not None:
                from perfsuite.suspects import keep_confirmations
                from perfsuite.verdict.report import CONFIRMATION

                keep_confirmations(self._confirmation_dir, self.settings.report / CONFIRMATION)
        if self._confirmation_dir is not None:
            shutil.rmtree(self._confirmation_dir.parent, ignore_errors=True)

    def _mark(self, outcome: str, line: str) -> None:
        """Mark this session's saved run with its gate's ``outcome``, where it keeps the
        run from being a baseline (:meth:`perfsuite.verdict.storage.Storage.mark_gate`)."""
        from perfsuite.verdict.storage import NOT_A_BASELINE

        if self._saved_datetime is not None and outcome in NOT_A_BASELINE:
            self.notes.extend(self.storage.mark_gate(self._saved_datetime, outcome, line))

    def _confirm(self, comparison: RunComparison) -> RunComparison:
        """Each time suspect of ``comparison`` decided
        (:func:`perfsuite.suspects.confirm_suspects`)."""
        import tempfile

        from perfsuite.suspects import CONFIRM, UNDECIDED, Why, confirm_suspects, passed_options

        def scratch(name: str) -> Path:
            if self._confirmation_dir is None:
                self._confirmation_dir = Path(tempfile.mkdtemp(prefix="perfsuite-gate-")) / "ab"
            return self._confirmation_dir.with_name(name)

        from perfsuite.ab.budget import CHANGED_SUSPECTS, GATE_SUSPECTS, gate_args

        spent = (dt.datetime.now(dt.timezone.utc) - self._started).total_seconds()

        def ab_args(nodeids: Sequence[str], why: Why) -> list[str]:
            kind = GATE_SUSPECTS if why == CONFIRM else CHANGED_SUSPECTS
            return gate_args(
                self.settings.ab_args,
                nodeids,
                spent,
                self.settings.scale.value,
                kind,
                screen_decided_none=why == UNDECIDED,
            )

        try:
            confirmed, note = confirm_suspects(
                comparison,
                self._commit_info(),
                passed_options(self.config.invocation_params.args),
                self.config.rootpath,
                scratch,
                ab_args,
                self._say,
            )
        except KeyboardInterrupt:  # pytest's own words and exit status for an interrupt
            if self._confirmation_dir is not None:
                shutil.rmtree(self._confirmation_dir.parent, ignore_errors=True)
            self._mark("interrupted", "interrupted while confirming its suspects")
            pytest.exit("perfsuite gate: interrupted while confirming; no verdict", 2)
        if note:
            self.notes.append(note)
        return confirmed

    def _commit_info(self) -> dict[str, Any]:
        """This run's commit, as pytest-benchmark saves it (asked now when not saved)."""
        if self._saved_commit is not None:
            return self._saved_commit
        try:
            from pytest_benchmark.utils import get_commit_info

            info = get_commit_info()  # type: ignore[no-untyped-call]
        except Exception:  # a failing git says nothing of the commit
            return {}
        return info if isinstance(info, dict) else {}

    def _say(self, line: str) -> None:
        """``line`` on a line of its own (the test progress line may still be open)."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            writer = getattr(reporter, "_tw", None)
            if getattr(writer, "width_of_current_line", 0):
                reporter.write("\n")
            reporter.write_line(line)

    def _history(self) -> list[Run]:
        """The runs saved on this machine before this session, oldest first."""
        from perfsuite.verdict.judge import HISTORY_RUNS

        return self.storage.load_all(self.storage.before(self._started)[-HISTORY_RUNS:])

    def _write_report(self, out: Path, current: Run) -> None:
        from perfsuite.verdict.report import write_report

        history: list[Run] = []
        with contextlib.suppress(PerfsuiteError):  # a storage perfsuite cannot read
            history = self.storage.load_all(self.storage.before(self._started))
        try:
            self.report_files = write_report(
                out, current, self.comparison, [*history, current], notes=self.notes
            )
        except (OSError, PerfsuiteError) as exc:
            self.notes.append(f"could not write the report into {out}: {exc}")

    def current_run(self) -> Run:
        """This session's benches, with raw timings, in the shape of a saved run."""
        from perfsuite.verdict.runs import Run, session_benches

        benches, notes = session_benches(self._measured.values(), CURRENT_SOURCE)
        self.notes += notes
        machine_info = self._machine_info
        if machine_info is None:  # not saved: ask the same hooks a save asks
            machine_info = self.config.hook.pytest_benchmark_generate_machine_info(
                config=self.config
            )
            self.config.hook.pytest_benchmark_update_machine_info(
                config=self.config, machine_info=machine_info
            )
        return Run(
            source=CURRENT_SOURCE,
            benches=benches,
            machine_info=machine_info,
            datetime=self._saved_datetime,
        )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The verdict section: notes, the table, the gate's outcome, the report files."""
        lines = list(self.notes)
        if self.comparison is not None:
            from perfsuite.verdict.table import text_lines

            lines.extend(text_lines(self.comparison))
        if self.decision is not None:
            from perfsuite.verdict.gate_rules import GateOutcome

            status = {
                GateOutcome.PASS: "passed",
                GateOutcome.REGRESSION: "FAILED",
                GateOutcome.MISMATCH: "REFUSED",
                GateOutcome.NOTHING_JUDGED: "REFUSED",
                GateOutcome.UNCONFIRMED: "UNCONFIRMED",
            }[self.decision.outcome]
            lines.append(f"perfsuite gate: {status}: {self.decision.message}")
        if self.report_files:
            lines.append(
                f"perfsuite report: {len(self.report_files)} files in {self.settings.report}"
            )
        if not lines:
            return
        terminalreporter.section("perfsuite verdict")
        for line in lines:
            red = line.startswith(
                ("perfsuite gate: FAILED", "perfsuite gate: REFUSED", "perfsuite gate: UNCONF")
            )
            terminalreporter.write_line(line, red=red, bold=red)
