"""``perfsuite report --html``: the dashboard site, its files, and a real browser on it.

The storage is a synthetic 30-night history (tests/dashboard_data.py) of three groups
of two benches, one of which steps 15% slower at night 20, with an A/B report and a
nightly report of that night.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from perfsuite.cli import main
from perfsuite.dashboard.abreports import read_ab_report, read_nightly_report
from perfsuite.dashboard.model import RunInfo, load_dashboard
from perfsuite.dashboard.site import MARKER
from perfsuite.verdict.storage import Storage
from tests.dashboard_data import (
    MACHINE,
    STEPPED,
    commit_of,
    make_ab_report,
    make_nightly_report,
    make_suite_history,
    run_name,
)

GROUPS = 3
PER_GROUP = 2
STEP_AT = 20


class Links(HTMLParser):
    """Every ``href``/``src`` of a page, and which of them load scripts or styles."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.loaded: list[str] = []  # script src, stylesheet href

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        for key in ("href", "src"):
            value = found.get(key)
            if value is None:
                continue
            self.links.append(value)
            if tag == "script" or (tag == "link" and found.get("rel") == "stylesheet"):
                self.loaded.append(value)


def links_of(page: Path) -> Links:
    parser = Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("dashboard")
    make_suite_history(root / "storage", groups=GROUPS, per_group=PER_GROUP, step_at=STEP_AT)
    ab = make_ab_report(root / "reports" / "ab", STEP_AT - 1, STEP_AT)
    nightly = make_nightly_report(root / "reports" / "verdict", STEP_AT)
    site = root / "site"
    reports = ["--ab-report", str(ab), "--nightly-report", str(nightly)]
    assert main(["report", "--storage", str(root / "storage"), "--html", str(site), *reports]) == 0
    return {"root": root, "site": site, "storage": root / "storage"}


def test_the_site_has_an_index_a_page_per_group_and_plotly_once(built: dict[str, Path]) -> None:
    site = built["site"]
    assert (site / "index.html").is_file()
    assert sorted(p.name for p in (site / "groups").iterdir()) == [
        f"group{g}.html" for g in range(GROUPS)
    ]
    scripts = [p for p in site.rglob("*.js")]
    assert [p.relative_to(site).as_posix() for p in scripts] == ["assets/plotly.min.js"]
    assert "plotly" in (site / "assets" / "plotly.min.js").read_text()[:400].lower()
    for page in (site / "groups").iterdir():
        text = page.read_text()
        assert links_of(page).loaded.count("../assets/plotly.min.js") == 1
        assert text.count("Plotly.newPlot(") == 2 * PER_GROUP  # history and extras per bench
        assert len(text) < 500_000, "plotly.js inlined into a page"
    assert (site / MARKER).is_file()
    assert not list(built["root"].glob(".site*")), "a staging folder was left behind"


def test_every_link_resolves_inside_the_site_and_nothing_loads_from_the_web(
    built: dict[str, Path],
) -> None:
    site = built["site"]
    pages = list(site.rglob("*.html"))
    assert len(pages) == 1 + GROUPS + 3  # index, groups, ab, nightly and its ab
    for page in pages:
        found = links_of(page)
        for source in found.loaded:
            assert not re.match(r"^(https?:)?//", source), f"{page}: loads {source}"
        for link in found.links:
            assert not re.match(r"^(https?:)?//", link), f"{page}: links out to {link}"
            target, _, anchor = link.partition("#")
            resolved = (page.parent / target).resolve() if target else page
            assert resolved.is_file(), f"{page.relative_to(site)}: {link} is missing"
            if anchor:
                assert f'id="{anchor}"' in resolved.read_text(), f"{page}: {link}"


def test_the_index_shows_each_bench_its_verdict_and_the_reports_of_the_run(
    built: dict[str, Path],
) -> None:
    index = (built["site"] / "index.html").read_text()
    for g in range(GROUPS):
        for v in range(PER_GROUP):
            assert f">group{g}/v{v}</a>" in index
    assert index.count('class="spark"') == GROUPS * PER_GROUP
    assert index.count("badge v-regression") == 2  # the bench and its group's count
    row = re.search(rf'<tr id="run-{MACHINE}-{run_name(STEP_AT)}">.*?</tr>', index)
    assert row is not None
    assert 'href="ab/ab-01-ab/index.html"' in row.group(0)
    assert 'href="ab/nightly-01-verdict/index.html"' in row.group(0)


def test_the_step_and_the_extra_series_are_in_the_model(built: dict[str, Path]) -> None:
    dashboard = load_dashboard(Storage(built["storage"]))
    assert len(dashboard.histories) == GROUPS * PER_GROUP
    for history in dashboard.histories:
        assert len(history.points) == 30
        figures = {"cores", "peak_rss_mb"}
        if history.label.endswith("/v0"):  # from the saved cost: CPU per item too
            figures.add("cpu_s_per_item")
        assert set(history.points[-1].resources) == figures
        assert dict(history.points[-1].counters) == {"traces": 1}
        if history.label == "/".join(STEPPED):
            (mark,) = [m for m in history.marks if m.what == "time"]
            assert (mark.index, mark.regression, mark.accepted) == (STEP_AT, True, False)
            assert mark.text.startswith("time +")
            assert f"from Nov 16 (run {STEP_AT + 1:04d}, commits " in mark.text
            assert history.verdict == "regression"
        else:
            assert history.marks == (), history.label


def test_an_accepted_step_is_labelled(tmp_path: Path) -> None:
    make_suite_history(tmp_path / "s", groups=1, per_group=1, step_at=STEP_AT)
    assert main(["history", "--storage", str(tmp_path / "s"), "--machine", MACHINE]) == 1
    accept = ["--machine", MACHINE, "--accept", run_name(STEP_AT).split("_")[0]]
    assert main(["history", "--storage", str(tmp_path / "s"), *accept]) == 0
    (history,) = load_dashboard(Storage(tmp_path / "s")).histories
    assert history.verdict == "accepted"
    assert main(["report", "--storage", str(tmp_path / "s"), "--html", str(tmp_path / "o")]) == 0
    assert "(accepted)" in (tmp_path / "o" / "groups" / "group0.html").read_text()


def test_the_site_replaces_an_earlier_one_whole(built: dict[str, Path], tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(built["site"], site)
    (site / "stale.html").write_text("old")
    assert main(["report", "--storage", str(built["storage"]), "--html", str(site)]) == 0
    assert not (site / "stale.html").exists()
    assert not (site / "ab").exists()  # no report given this time
    assert [p.name for p in tmp_path.iterdir()] == ["site"]


def test_a_failure_half_way_leaves_the_earlier_site(
    built: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import perfsuite.dashboard.pages as pages

    site = tmp_path / "site"
    shutil.copytree(built["site"], site)
    before = sorted(p.relative_to(site) for p in site.rglob("*"))

    def broken(*_args: Any) -> str:
        raise OSError("disk full")

    monkeypatch.setattr(pages, "figure_html", broken)
    assert main(["report", "--storage", str(built["storage"]), "--html", str(site)]) == 2
    assert sorted(p.relative_to(site) for p in site.rglob("*")) == before
    assert [p.name for p in tmp_path.iterdir()] == ["site"]


@pytest.mark.parametrize(
    ("case", "named"),
    [
        ("empty storage", "storage: no saved runs"),
        ("missing storage", "nowhere: no such folder"),
        ("html is a file", "taken.txt: is a file"),
        ("foreign folder", "mine: holds notes.txt"),
        ("not an ab report", "notab: not a perfsuite ab report"),
        ("a run report as an ab report", "notab: not a perfsuite ab report"),
        ("not a nightly report", "notab: not a perfsuite nightly report"),
    ],
)
def test_bad_input_exits_2_with_one_line_naming_it(
    built: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    case: str,
    named: str,
) -> None:
    storage, out = built["storage"], tmp_path / "out"
    extra: list[str] = []
    if case == "empty storage":
        storage = tmp_path / "storage"
        storage.mkdir()
    elif case == "missing storage":
        storage = tmp_path / "nowhere"
    elif case == "html is a file":
        out = tmp_path / "taken.txt"
        out.write_text("x")
    elif case == "foreign folder":
        out = tmp_path / "mine"
        out.mkdir()
        (out / "notes.txt").write_text("keep me")
    else:
        (tmp_path / "notab").mkdir()
        if case == "a run report as an ab report":  # what perfsuite report --out writes
            (tmp_path / "notab" / "summary.md").write_text("# perfsuite: run 0001\n")
        option = "--nightly-report" if case == "not a nightly report" else "--ab-report"
        extra = [option, str(tmp_path / "notab")]
    argv = ["report", "--storage", str(storage), "--html", str(out), *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("perfsuite report: error: ")
    assert named in err
    if case == "foreign folder":
        assert (out / "notes.txt").read_text() == "keep me"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_report_needs_out_or_html(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["report", "--storage", str(tmp_path)]) == 2
    assert "--out DIR" in capsys.readouterr().err
    assert main(["report", "--storage", str(tmp_path), "--out", "o", "--ab-report", "x"]) == 2
    assert "add --html DIR" in capsys.readouterr().err


# -- in a real browser -----------------------------------------------------------------


def _browser_or_skip() -> tuple[str, str]:
    pytest.importorskip("selenium", reason="selenium is not installed (the dev extra has it)")
    names = ("chromium", "chromium-browser", "google-chrome")
    browser = next((found for n in names if (found := shutil.which(n))), None)
    driver = shutil.which("chromedriver")
    missing = [what for what, path in (("chromium", browser), ("chromedriver", driver)) if not path]
    if missing or browser is None or driver is None:
        pytest.skip(
            f"{' and '.join(missing)} not installed "
            "(apt-get install chromium chromium-driver; .ci/run installs them as root)"
        )
    return browser, driver


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    binary, driver_path = _browser_or_skip()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument("--window-size=1200,900")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def _severe(driver: Any) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _wait(driver: Any, script: str, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = driver.execute_script(script)
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


RENDERED = """
const divs = [...document.querySelectorAll('.plotly-graph-div')];
return divs.length > 0 && divs.every(d => d.querySelector('svg.main-svg') !== null)
    ? divs.length : 0;
"""


def test_a_browser_renders_every_plot_marks_the_step_and_follows_the_links(
    built: dict[str, Path], browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    started = time.monotonic()
    index = built["site"] / "index.html"
    browser.get(index.as_uri())
    assert browser.title == "perfsuite dashboard"
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.spark polyline")) == GROUPS * PER_GROUP
    assert _severe(browser) == []

    browser.find_element(By.CSS_SELECTOR, f"h2 a[href='groups/{STEPPED[0]}.html']").click()
    assert browser.current_url.endswith(f"groups/{STEPPED[0]}.html")
    assert _wait(browser, RENDERED) == 2 * PER_GROUP, "a plot did not render"
    assert _severe(browser) == []
    anchor = "b-" + re.sub(r"[^A-Za-z0-9]", "-", f"{MACHINE}-{'/'.join(STEPPED)}")
    plot = browser.find_element(By.ID, f"plot-{anchor}")
    notes = [e.text for e in plot.find_elements(By.CSS_SELECTOR, "g.annotation")]
    assert any(n.startswith("step +") and n.endswith("(regression)") for n in notes), notes
    dashed = plot.find_elements(By.CSS_SELECTOR, ".shapelayer path")
    assert dashed
    assert all("214, 40, 40" in (d.get_attribute("style") or "") for d in dashed)  # red
    hover = browser.execute_script(
        "return document.getElementById(arguments[0]).data[1].customdata[arguments[1]];",
        f"plot-{anchor}",
        STEP_AT,
    )
    assert hover[0] == run_name(STEP_AT)
    assert len(hover[1]) == 40  # the full commit
    ticks = [e.text for e in plot.find_elements(By.CSS_SELECTOR, "g.xtick text")]
    assert ticks
    assert all(len(t) <= 20 for t in ticks), ticks

    browser.find_element(By.CSS_SELECTOR, "ul.steps a[href$='ab/ab-01-ab/index.html']").click()
    assert browser.find_element(By.TAG_NAME, "h1").text.startswith("A = ")
    assert "REGRESSION" in browser.page_source
    browser.find_element(By.LINK_TEXT, run_name(STEP_AT)).click()
    assert browser.current_url.endswith(f"index.html#run-{MACHINE}-{run_name(STEP_AT)}")
    browser.find_element(By.CSS_SELECTOR, "#reports a[href*='nightly-01']").click()
    assert browser.find_element(By.TAG_NAME, "h1").text == f"nightly {run_name(STEP_AT)}"
    browser.find_element(By.PARTIAL_LINK_TEXT, "A = ").click()
    assert browser.current_url.endswith("nightly-01-verdict/ab/index.html")
    browser.find_element(By.PARTIAL_LINK_TEXT, "dashboard").click()
    assert browser.title == "perfsuite dashboard"
    assert _severe(browser) == []
    assert time.monotonic() - started < 20


def test_a_report_is_shown_with_its_own_run_only(tmp_path: Path) -> None:
    """A nightly report goes with tonight's run, not every run of its commit; an A/B
    whose candidate was a working tree goes with the run of uncommitted changes, not
    the clean run of that commit (its A side)."""
    nightly = read_nightly_report(make_nightly_report(tmp_path / "n", STEP_AT, ab=False), "n")
    folder = make_ab_report(tmp_path / "ab", STEP_AT - 1, STEP_AT)
    side = json.loads((folder / "B.json").read_text())
    side["commit_info"]["dirty"] = True
    (folder / "B.json").write_text(json.dumps(side))
    ab = read_ab_report(folder, "ab")
    commit = commit_of(STEP_AT)
    tonight = RunInfo(run_name(STEP_AT), MACHINE, None, commit)
    later = RunInfo(run_name(STEP_AT + 1), MACHINE, None, commit)  # the same commit again
    edited = RunInfo(run_name(STEP_AT + 2), MACHINE, None, commit, dirty=True)
    assert [nightly.belongs_to(r) for r in (tonight, later, edited)] == [True, False, False]
    assert [ab.belongs_to(r) for r in (tonight, later, edited)] == [False, False, True]
