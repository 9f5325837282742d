"""Constructed comparisons and an A/B that answers from a table, for the gate's
confirmation tests (:mod:`perfsuite.suspects`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from perfsuite import suspects
from perfsuite.changed import Changes
from perfsuite.options import Spread
from perfsuite.outcomes import AbRun
from perfsuite.suspects import CONFIRM, confirm_suspects
from perfsuite.verdict.commits import Commit
from perfsuite.verdict.compare import RunComparison
from perfsuite.verdict.judge import BenchVerdict
from perfsuite.verdict.runs import Bench, Run
from perfsuite.verdict.stats import Comparison, Verdict

BASE = {"id": "a" * 40, "dirty": False}
HEAD = {"id": "b" * 40, "dirty": False}


def verdict(name: str, change: float, group: str = "g") -> BenchVerdict:
    """A bench judged at a 5% threshold: slower above it, same below (faster below -5%),
    with an interval of +-2% about its change."""
    slower = change > 0.05
    word = Verdict.SLOWER if slower else Verdict.FASTER if change < -0.05 else Verdict.SAME
    bench = Bench(name, name, group, None, (1.0,) * 10, 1.0)
    ci = (change - 0.02, change + 0.02)
    time = Comparison(word, change, ci, 1e-4 if word is not Verdict.SAME else 0.5, 0.05, 10, 10)
    return BenchVerdict(name, name, bench, bench, time, None, "s", ())


def comparison(changes: dict[str, float], groups: dict[str, str] | None = None) -> RunComparison:
    groups = groups or {}
    verdicts = [verdict(name, change, groups.get(name, "g")) for name, change in changes.items()]
    return RunComparison(Run("base", {}, commit_info=BASE), Run("now", {}), verdicts, [], [])


class FakeAb:
    """Stands in for :func:`perfsuite.suspects.run_ab`: each bench's verdict from ``answers``."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers  # "beyond": undecided, +8% at a 5% threshold
        self.asked: list[list[str]] = []
        self.reports: list[str] = []  # each A/B's report folder's name
        self.strict: list[bool] = []  # whether it was asked as an A/B of changed code
        self.spreads: list[dict[str, Spread]] = []  # the spreads each A/B was given

    def __call__(
        self,
        base: Commit,
        nodeids: Sequence[str],
        options: Sequence[str],
        cwd: Path,
        report: Path,
        log: Path | None,
        ab_args: Sequence[str] = (),
        spreads: Mapping[str, Spread] | None = None,
    ) -> AbRun:
        self.asked.append(list(nodeids))
        self.spreads.append(dict(spreads or {}))
        self.reports.append(report.name)
        self.strict.append("--changed" in ab_args)
        rows = {}
        for n in nodeids:
            answer = self.answers[n].split(",")[len([a for a in self.asked if n in a]) - 1]
            answer, _, estimate = answer.partition("=")  # "beyond=0.12": its estimate
            beyond = answer == "beyond"
            change = float(estimate or 0.08) if beyond else 0.0
            rows[n] = {
                "nodeid": n,
                "verdict": "inconclusive" if beyond else answer,
                "change": change,
                "ci": [change - 0.06, change + 0.06],  # beyond=0.08: +14%, not bounded
                "threshold": 0.05,
                "pairs": 3,
            }
        return AbRun(("ab",), "perfsuite ab", 0, 1.0, rows)


def git_tells(
    monkeypatch: pytest.MonkeyPatch,
    files: Sequence[str] = ("labels.json",),
    untouched: bool = False,
) -> None:
    """git tells that ``files`` changed since the baseline's commit and no bench's code
    did: a data file (no bench untouched), or with ``untouched`` none of any bench's
    code or data (documents)."""

    def changes(nodeids: Sequence[str], rootdir: Path, sha: str) -> Changes:
        return Changes(tuple(files), {}, frozenset(nodeids) if untouched else frozenset())

    monkeypatch.setattr(suspects, "changed_benches", changes)


def confirm(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    changes: dict[str, float],
    answers: dict[str, str],
    groups: dict[str, str] | None = None,
    found: RunComparison | None = None,
    known: bool = False,
) -> tuple[dict[str, str], FakeAb, list[str]]:
    """Each suspect's outcome; an answer "a,b" is what the first and a second A/B say.
    ``found`` replaces the comparison ``changes`` make. ``known``: git tells that no
    bench's code changed (beyond those ``found`` marks), else it cannot tell (the
    folder is no git checkout)."""
    fake = FakeAb(answers)
    monkeypatch.setattr(suspects, "run_ab", fake)
    if known:
        git_tells(monkeypatch)
    said: list[str] = []
    result, note = confirm_suspects(
        found or comparison(changes, groups),
        HEAD,
        [],
        tmp_path,
        lambda name: tmp_path / name,
        lambda ids, why: ["--changed"] if why != CONFIRM else [],
        said.append,
    )
    assert note is not None
    assert "confirmations took" in note
    outcomes = {
        v.fullname: v.confirmation.outcome for v in result.verdicts if v.confirmation is not None
    }
    return outcomes, fake, said
