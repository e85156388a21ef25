"""``autorubric-local report``: the static HTML report of a stored run.

Runs are real ``grade`` runs of the bundled example through the CLI, with a ScriptedEngine
swapped in for the model loader (answers are a hash of the prompt; one criterion of the hostile
item fails), plus a labelled run and a position-bias sweep in the same database. The tests check
the page against the stored rows: one item row per item, verdict rates equal to counts taken
from the ``judgments`` table, escaping of a hostile submission, the agreement section only where
there is ground truth, clean errors for a missing run or database.

The browser test opens the page in headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by selenium; ``scripts/setup_browser.sh``). Without them it is
skipped with the reason (as when the set-up could not install them: not root, no network),
except once that script's stamp ``.venv/.browser-ready`` exists (it installed them), where it
fails: a browser that was set up cannot hide behind a skip.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import re
import shutil
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils
from click.testing import CliRunner, Result

from autorubric_local.bias import sweep as bias_sweep
from autorubric_local.cli import main
from autorubric_local.core.rubric import Rubric
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.data.submissions import load_grading_data
from autorubric_local.engine import LabelScores, ScoreRequest, ScriptedEngine
from autorubric_local.graders import criterion_grader
from autorubric_local.report import criterion_rates, render_report, report_context
from autorubric_local.store import Store

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
RUBRIC_FILE = EXAMPLES / "battery_rubric.yaml"
DATA_FILE = EXAMPLES / "battery_submissions.jsonl"
HOSTILE = "<script>alert(1)</script> NMC & LFP <img src=x onerror=alert(2)>"
FAILING_REQUIREMENT = "Says LFP is cheaper than NMC"
N_EXAMPLE_ITEMS = 8


def policy(request: ScoreRequest) -> list[float] | LabelScores:
    """Label log-probabilities from a hash of the prompt; the cost criterion fails on the hostile item."""
    text = request.prefix + request.suffix
    if FAILING_REQUIREMENT in text and "alert(1)" in text:
        return LabelScores((), error="scripted failure")
    digest = hashlib.sha256(text.encode()).digest()
    weights = [1.0 + digest[k] % 5 for k in range(len(request.labels))]
    return [math.log(w / sum(weights)) for w in weights]


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One database: run ``plain`` (the example plus a hostile item, explain mode), run
    ``labelled`` (three items with ground truth) and sweep ``bias`` (two items)."""
    folder = tmp_path_factory.mktemp("report")
    data = folder / "subs.jsonl"
    data.write_text(DATA_FILE.read_text(encoding="utf-8")
                    + json.dumps({"id": "hostile", "submission": HOSTILE}) + "\n", encoding="utf-8")
    rubric = Rubric.from_file(str(RUBRIC_FILE))
    labels = [
        ["MET", "MET", "UNMET", "UNMET", "MET", "UNMET", "3 - Solid, several correct figures", "Matches the trade-offs"],
        ["UNMET", "MET", "MET", "UNMET", "UNMET", "UNMET", "2 - Basic, one or two facts", "NA - No advice given"],
        ["MET", "UNMET", "MET", "MET", "UNMET", "MET", "1 - Vague, no figures", "Contradicts the trade-offs"],
    ]
    items = [replace(item, ground_truth=truth) for item, truth in zip(load_grading_data(DATA_FILE, rubric).items, labels)]
    labelled = folder / "labelled.json"
    RubricDataset(prompt="Compare NMC and LFP.", rubric=rubric, items=items).to_file(labelled)
    path = folder / "r.sqlite"
    engine = ScriptedEngine(policy=policy)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(criterion_grader, "load_engine", lambda config: engine)
        patch.setattr(bias_sweep, "load_engine", lambda config: engine)
        done = invoke("grade", RUBRIC_FILE, data, "--db", path, "--run", "plain", "--mode", "explain",
                      "--seed", "3", "--no-progress", "--allow-failures")
        assert done.exit_code == 0, done.output
        done = invoke("grade", labelled, "--db", path, "--run", "labelled", "--seed", "3", "--no-progress")
        assert done.exit_code == 0, done.output
        done = invoke("sweep", RUBRIC_FILE, DATA_FILE, "--db", path, "--run", "bias", "--limit", "2",
                      "--bootstrap", "20")
        assert done.exit_code == 0, done.output
        done = invoke("compare", EXAMPLES / "compare_responses.jsonl", "--db", path, "--run", "pairs", "--limit", "4",
                      "--bootstrap", "20")
        assert done.exit_code == 0, done.output
    return path


@pytest.fixture(scope="module")
def pages(db: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``index.html`` of each run, written by the CLI."""
    out = tmp_path_factory.mktemp("pages")
    written = {}
    for run in ("plain", "labelled"):
        result = invoke("report", run, "--db", db, "--out", out / run)
        assert result.exit_code == 0, result.output
        written[run] = Path(result.stdout.strip())
        assert written[run] == out / run / "index.html"
    return written


class Page(HTMLParser):
    """The parts of a report page the tests read: rows, rate cells, images, scripts, text."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.item_ids: list[str] = []
        self.rates: dict[tuple[str, str], list[str]] = {}
        self.images: list[str] = []
        self.scripts = 0
        self.ids: set[str] = set()
        self._rate: tuple[str, str] | None = None
        self._cells: list[str] = []
        self._in_cell = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"] or "")
        if tag == "script":
            self.scripts += 1
        if tag == "img":
            self.images.append(a.get("src") or "")
        if tag == "tr" and a.get("class") == "item":
            self.item_ids.append(a.get("data-item-id") or "")
        if tag == "tr" and a.get("class") == "rate":
            self._rate, self._cells = (a["data-criterion"] or "", a["data-label"] or ""), []
        if tag == "td" and self._rate is not None:
            self._in_cell = True
            self._cells.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._in_cell = False
        if tag == "tr" and self._rate is not None:
            self.rates[self._rate] = [c.strip() for c in self._cells]
            self._rate = None

    def handle_data(self, data: str) -> None:
        if self._in_cell:
            self._cells[-1] += data


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# ------------------------------------------------------------------------------- the page


def test_one_item_row_per_item_in_item_order(db: Path, pages: dict[str, Path]) -> None:
    store = Store.open(db)
    for run, page in pages.items():
        stored = [row["item_id"] for row in store.item_rows(store.find_run(run)["id"])]
        assert Page(read(page)).item_ids == stored
    assert len(Page(read(pages["plain"])).item_ids) == N_EXAMPLE_ITEMS + 1
    assert len(Page(read(pages["labelled"])).item_ids) == 3
    assert f'<span id="item-count">{N_EXAMPLE_ITEMS + 1}</span>' in read(pages["plain"])


def test_verdict_rates_equal_counts_of_the_stored_judgments(db: Path, pages: dict[str, Path]) -> None:
    database = sqlite_utils.Database(db)
    (run_id,) = [r["id"] for r in database["runs"].rows_where("name = 'plain'")]
    counts = {
        (name, label): count
        for name, label, count in database.execute(
            "select criterion_name, coalesce(verdict, selected_label), count(*) from judgments "
            "where run_id = ? and error is null group by 1, 2", [run_id]).fetchall()
    }
    answered = dict(database.execute(
        "select criterion_name, count(*) from judgments where run_id = ? and error is null group by 1",
        [run_id]).fetchall())
    failed = dict(database.execute(
        "select criterion_name, count(*) from judgments where run_id = ? and error is not null group by 1",
        [run_id]).fetchall())
    assert failed == {"cost_and_cobalt": 1}  # the hostile item's scripted failure
    assert answered["cost_and_cobalt"] == N_EXAMPLE_ITEMS and answered["nmc_energy_density"] == N_EXAMPLE_ITEMS + 1

    rates = Page(read(pages["plain"])).rates
    assert {key for key, cells in rates.items() if int(cells[-3])} == set(counts)
    for (name, label), cells in rates.items():
        count = counts.get((name, label), 0)
        assert int(cells[-3]) == count
        assert cells[-2] == f"{count / answered[name]:.1%}"
    context = report_context(Store.open(db), "plain", db)
    for c in context["criteria"]:
        assert (c["answered"], c["errors"]) == (answered[c["name"]], failed.get(c["name"], 0))
        for entry in c["labels"]:
            assert entry["rate"] == counts.get((c["name"], entry["label"]), 0) / answered[c["name"]]
    ordinal = next(c for c in context["criteria"] if c["name"] == "technical_depth")
    assert [e["label"] for e in ordinal["labels"]] == [
        "1 - Vague, no figures", "2 - Basic, one or two facts", "3 - Solid, several correct figures",
        "4 - Expert, figures and trade-offs explained"]


def test_criterion_rates_by_hand() -> None:
    rows = [
        {"criterion_index": 0, "criterion_name": "a", "verdict": "MET", "selected_label": None, "error": None},
        {"criterion_index": 0, "criterion_name": "a", "verdict": "MET", "selected_label": None, "error": None},
        {"criterion_index": 0, "criterion_name": "a", "verdict": "UNMET", "selected_label": None, "error": None},
        {"criterion_index": 0, "criterion_name": "a", "verdict": None, "selected_label": None, "error": "boom"},
        {"criterion_index": 1, "criterion_name": "b", "verdict": None, "selected_label": "Y", "error": None},
        {"criterion_index": 1, "criterion_name": "b", "verdict": None, "selected_label": "NA", "error": None},
    ]
    a, b = criterion_rates(rows, [{"name": "b", "options": [{"label": "X"}, {"label": "Y"}]}])
    assert (a["name"], a["scale"], a["n"], a["answered"], a["errors"]) == ("a", "binary", 4, 3, 1)
    assert a["labels"] == [{"label": "MET", "count": 2, "rate": 2 / 3}, {"label": "UNMET", "count": 1, "rate": 1 / 3},
                           {"label": "CANNOT_ASSESS", "count": 0, "rate": 0.0}]
    assert (b["scale"], b["answered"], b["errors"]) == ("multi", 2, 0)
    assert b["labels"] == [{"label": "X", "count": 0, "rate": 0.0}, {"label": "Y", "count": 1, "rate": 0.5},
                           {"label": "NA", "count": 1, "rate": 0.5}]


def test_a_hostile_submission_is_shown_as_text(pages: dict[str, Path]) -> None:
    text = read(pages["plain"])
    assert "<script>alert(1)</script>" not in text
    assert "<img src=x" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; NMC &amp; LFP &lt;img src=x onerror=alert(2)&gt;" in text
    page = Page(text)
    assert page.scripts == 0
    assert all(src.startswith("data:image/png;base64,") for src in page.images)


def test_the_page_is_self_contained(pages: dict[str, Path]) -> None:
    for page in pages.values():
        text = read(page)
        assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text)
        assert "default-src 'none'; img-src data:" in text
        images = Page(text).images
        assert images and all(src.startswith("data:image/png;base64,") for src in images)
        assert [p.name for p in page.parent.iterdir()] == ["index.html"]


def test_agreement_only_where_there_is_ground_truth(pages: dict[str, Path]) -> None:
    labelled, plain = Page(read(pages["labelled"])), Page(read(pages["plain"]))
    assert "agreement" in labelled.ids and "agreement" not in plain.ids
    text = read(pages["labelled"])
    assert "against the labels of 3 labelled items" in text and "Labels: the dataset&#39;s ground truth." in text
    assert 'alt="confusion_nmc_energy_density"' in text and 'alt="reliability"' in text and 'alt="scores"' in text
    assert "Agreement with human labels" not in read(pages["plain"])


def test_sweeps_of_the_database_are_shown_with_heat_maps(pages: dict[str, Path]) -> None:
    text = read(pages["plain"])
    assert "Sweep bias" in text
    assert 'alt="grade-scores"' in text and 'alt="heatmap-smollm2-135m-instruct"' in text


def test_a_comparison_of_the_database_is_shown_with_its_ranking_and_win_rates(db: Path, pages: dict[str, Path]) -> None:
    from autorubric_local.comparisons.judging import load_comparison
    from autorubric_local.comparisons.ranking import rank_systems

    text = read(pages["plain"])
    assert "Sweep pairs" in text and "Ranking, judge smollm2-135m-instruct, question overall" in text
    assert 'alt="win rates"' in text
    ranked = rank_systems(load_comparison(db, "pairs"), judge_id="smollm2-135m-instruct", question="overall",
                          n_bootstrap=200)
    shown = re.findall(r'<td class="num">(\d+)</td><td>(\w+)</td><td class="num">(\d+)</td>', text)
    assert shown == [(str(k), r.system, f"{r.score:.0f}") for k, r in enumerate(ranked.systems, 1)]


def test_run_settings(db: Path, pages: dict[str, Path]) -> None:
    row = Store.open(db).find_run("plain")
    text = read(pages["plain"])
    for value in (row["id"], row["started_utc"], row["finished_utc"], "finished", row["package_version"],
                  "smollm2-135m-instruct", "scripted", "explain"):
        assert value in text
    assert str(Path(row["data_path"])).replace("&", "&amp;") in text


def test_explanations_and_failed_judgments_in_the_item_table(pages: dict[str, Path]) -> None:
    text = read(pages["plain"])
    assert "scripted explanation" in text
    assert "scripted failure" in text


def test_item_table_judgments_equal_the_stored_rows(db: Path) -> None:
    store = Store.open(db)
    context = report_context(store, "plain", db)
    shown = [(item["item_id"], c["name"], j["judge_id"], j["label"], j["probability"], j["explanation"], j["error"])
             for item in context["items"] for c in item["criteria"] for j in c["judgments"]]
    stored = []
    for row in store.item_rows(store.find_run("plain")["id"]):
        for j in sorted((j for j in store.judgments(row["run_id"]) if j["item_id"] == row["item_id"]),
                        key=lambda j: j["criterion_index"]):
            label = j["verdict"] or j["selected_label"]
            probability = json.loads(j["label_probabilities_json"])[label] if label else None
            stored.append((row["item_id"], j["criterion_name"], j["judge_id"], label, probability,
                           j["explanation"], j["error"]))
    assert shown == stored
    assert [i["score"] for i in context["items"]] == [r["score"] for r in store.item_rows(row["run_id"])]


def test_sweep_aggregates_rebuild_from_their_stored_summaries(db: Path) -> None:
    from autorubric_local.report.sweeps import aggregate_from_dict

    summaries = [json.loads(r["summary_json"]) for r in sqlite_utils.Database(db)["sweep_aggregates"].rows]
    assert len(summaries) == 3  # sweep bias: technical_depth and use_case_advice; comparison pairs: overall
    for summary in summaries:
        assert aggregate_from_dict(summary).to_dict() == summary


# ------------------------------------------------------------------------------- prompts


class PromptStore(Store):
    """A store that keeps prompts (the interface of ``Store.judgment_prompt``)."""

    def judgment_prompt(self, run_id: str, item_id: str, criterion_index: int, judge_id: str,
                        permutation_index: int) -> str | None:
        return None if item_id == "excellent" else f"<prompt {item_id} {criterion_index} {judge_id}>"


def test_prompts_are_shown_collapsed_or_not_stored(db: Path) -> None:
    store = PromptStore(Store.open(db).db)
    text = render_report(report_context(store, "plain", db))
    assert "<details><summary>prompt</summary><pre class=\"prompt\">&lt;prompt vague 0 smollm2-135m-instruct&gt;" in text
    assert text.count("<summary>prompt</summary>") == N_EXAMPLE_ITEMS * 8  # all but the 8 of "excellent"
    assert text.count(">not stored<") == 8


def test_prompts_of_the_store_when_it_keeps_them(db: Path, pages: dict[str, Path]) -> None:
    text = read(pages["plain"])
    store = Store.open(db)
    if not hasattr(store, "judgment_prompt"):
        assert text.count(">not stored<") == (N_EXAMPLE_ITEMS + 1) * 8
        return
    from markupsafe import escape

    judgments = store.judgments(store.find_run("plain")["id"])
    prompts = [store.judgment_prompt(j["run_id"], j["item_id"], j["criterion_index"], j["judge_id"],
                                     j["permutation_index"]) for j in judgments]
    assert len(prompts) == (N_EXAMPLE_ITEMS + 1) * 8 and all(prompts)  # failed judgments keep theirs too
    assert text.count("<summary>prompt</summary>") == len(prompts) and ">not stored<" not in text
    assert all(f'<pre class="prompt">{escape(prompt)}</pre>' in text for prompt in prompts)


# ------------------------------------------------------------------------------- the CLI


def test_missing_run_is_a_clean_error(db: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", "nope", "--db", str(db), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1
    assert result.output == f"Error: {db}: no run named 'nope' (runs: 'plain', 'labelled')\n"
    assert not (tmp_path / "o").exists()


def test_missing_database_is_a_clean_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", "x", "--db", str(tmp_path / "none.sqlite")])
    assert result.exit_code == 1
    assert result.output == f"Error: {tmp_path / 'none.sqlite'}: no results database here\n"
    assert not (tmp_path / "none.sqlite").exists()


def test_default_out_dir_is_named_after_the_run(db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(db, tmp_path / "results.sqlite")
    monkeypatch.chdir(tmp_path)
    result = invoke("report", "labelled")
    assert result.exit_code == 0, result.output
    assert result.stdout == str(Path("report-labelled") / "index.html") + "\n"
    assert (tmp_path / "report-labelled" / "index.html").is_file()


def test_setup_browser_never_fails_the_set_up(tmp_path: Path) -> None:
    """Without chromium on PATH and not root, the script explains and exits 0, writing no stamp."""
    import subprocess

    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup_browser.sh", tmp_path / "scripts")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / ".browser-ready").touch()  # a stale stamp: removed
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("dirname", "rm", "touch"):
        (bin_dir / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    (bin_dir / "id").write_text("#!/bin/sh\necho 1000\n", encoding="utf-8")
    (bin_dir / "id").chmod(0o755)
    done = subprocess.run([shutil.which("bash") or "/bin/bash", str(tmp_path / "scripts" / "setup_browser.sh")],
                          env={"PATH": str(bin_dir)}, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "chromium or chromedriver is missing and this is not root" in done.stdout
    assert not (tmp_path / ".venv" / ".browser-ready").exists()


# ------------------------------------------------------------------------------- a real browser


def require_browser() -> tuple[str, str]:
    """Paths of chromium and chromedriver; skip without them (fail once set-up installed them)."""
    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if browser and driver and importlib.util.find_spec("selenium") is not None:
        return browser, driver
    from setup_state import missing

    missing("headless Chromium is missing (chromium, chromium-driver, selenium)", "setup_browser.sh")


def headless_chromium(height: int, *, console_log: bool = False) -> Any:
    """A selenium driver of headless Chromium, 1280 pixels wide (``require_browser`` decides skip or fail)."""
    browser, driver_path = require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--window-size=1280,{height}"):
        options.add_argument(flag)
    if console_log:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=driver_path), options=options)


def test_the_page_renders_in_a_headless_browser(pages: dict[str, Path]) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    driver = headless_chromium(2000, console_log=True)
    try:
        for run, expected in (("plain", N_EXAMPLE_ITEMS + 1), ("labelled", 3)):
            driver.get(pages[run].resolve().as_uri())
            assert driver.execute_script("return document.readyState") == "complete"
            assert driver.title == f"Run {run}: autorubric-local report"
            rows = driver.execute_script("return document.querySelectorAll('#items > tbody > tr.item').length")
            assert rows == expected
            assert driver.find_element("id", "item-count").text == str(expected)
            assert driver.execute_script("return document.scripts.length") == 0
            broken = driver.execute_script(
                "return Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0).length")
            assert broken == 0
            errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
            assert errors == []
            with pytest.raises(NoAlertPresentException):
                driver.switch_to.alert.text  # noqa: B018
            if run == "plain":
                hostile = driver.execute_script(
                    "return document.querySelector('tr.item[data-item-id=\"hostile\"] pre.submission').textContent")
                assert hostile == HOSTILE
    finally:
        driver.quit()


def test_a_long_run_is_paged_with_every_item_once_in_order(db: Path, tmp_path: Path) -> None:
    """Issue 33: the items of a large run are split over linked pages of --per-page items (one
    table of 10^5 rows does not open in a browser); the summary is on the first page only."""
    stored = [row["item_id"] for row in Store.open(db).item_rows(Store.open(db).find_run("plain")["id"])]
    assert len(stored) > 6
    result = invoke("report", "plain", "--db", db, "--out", tmp_path / "r", "--per-page", "3")
    assert result.exit_code == 0, result.output
    count = -(-len(stored) // 3)
    files = sorted((tmp_path / "r").glob("*.html"))
    assert {f.name for f in files} == {"index.html"} | {f"items-{n}.html" for n in range(2, count + 1)}
    seen: list[str] = []
    for number in range(1, count + 1):
        text = read(tmp_path / "r" / ("index.html" if number == 1 else f"items-{number}.html"))
        page = Page(text)
        assert len(page.item_ids) == (3 if number < count else len(stored) - 3 * (count - 1))
        seen += page.item_ids
        assert f'<span id="item-count">{len(stored)}</span>' in text
        assert (page.rates != {}) == (number == 1) and ("settings" in page.ids) == (number == 1)
        assert (f'href="items-{number + 1}.html" rel="next"' in text) == (number < count)
        if number > 1:
            previous = "index.html" if number == 2 else f"items-{number - 1}.html"
            assert f'href="{previous}" rel="prev"' in text
    assert seen == stored
    again = invoke("report", "plain", "--db", db, "--out", tmp_path / "r")  # default 100 a page: stale pages go
    assert again.exit_code == 0 and [f.name for f in (tmp_path / "r").glob("*.html")] == ["index.html"]


def test_the_first_page_leads_with_results_and_marks_penalties(pages: dict[str, Path]) -> None:
    """Issue 51: the summary, scores and verdict rates come before the settings; a MET on a
    negative criterion reads as a penalty, with the criterion's weight beside its rates."""
    text = read(pages["plain"])
    order = [text.index(f'id="{anchor}"') for anchor in ("summary", "scores", "criteria", "settings", "items-heading")]
    assert order == sorted(order)
    assert "of 9 items graded" in text and "mean score" in text.split('id="scores"')[0]
    assert "lfp_density_error <span class=\"muted\">(weight -15: a penalty when MET)</span>" in text
    item_table = text.split('id="items-heading"', 1)[1]
    assert "MET (penalty)" in item_table or "UNMET (no penalty)" in item_table


# ------------------------------------------------------------------------------- human labels and warnings (issue 51)


class HumanCells(HTMLParser):
    """Each item's human-label cells: ``{item_id: {criterion: (label, agrees)}}`` (``data-human``
    and ``data-agrees``, "" when unlabelled or not compared)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.cells: dict[str, dict[str, tuple[str, str]]] = {}
        self._item = ""
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr" and a.get("class") == "item":
            self._item = a.get("data-item-id") or ""
            self.cells[self._item] = {}
        if tag == "td" and (a.get("class") or "").split()[:1] == ["human"]:
            self.cells[self._item][a["data-criterion"] or ""] = (a["data-human"] or "", a["data-agrees"] or "")


def agreement_rows(text: str) -> dict[str, list[str]]:
    """The per-criterion agreement table: ``{criterion: [labelled, pairs, accuracy, kappa]}``."""
    rows = re.findall(r'<tr class="agreement" data-criterion="([^"]+)"><td>[^<]*</td><td>[^<]*</td>'
                      r'<td class="num">(\d+)</td><td class="num">(\d+)</td>\s*<td class="num">([^<]*)</td>'
                      r'<td class="num">([^<]*)</td></tr>', text)
    return {name: list(cells) for name, *cells in rows}


def finals(db: Path, run: str) -> dict[tuple[str, int], str | None]:
    """``(item_id, criterion_index) -> final verdict or option label`` from ``item_criteria``."""
    database = sqlite_utils.Database(db)
    (run_id,) = [r["id"] for r in database["runs"].rows_where("name = ?", [run])]
    return {(r["item_id"], r["criterion_index"]): r["verdict"] or r["selected_label"]
            for r in database["item_criteria"].rows_where("run_id = ?", [run_id])}


def metrics_json(db: Path, run: str, *args: str) -> dict[str, Any]:
    done = invoke("metrics", db, "--run", run, "--json", "--no-save", *args)
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def assert_agreement_is_the_metrics(text: str, metrics: dict[str, Any]) -> None:
    shown = agreement_rows(text)
    assert list(shown) == [c["name"] for c in metrics["per_criterion"]]
    for c in metrics["per_criterion"]:
        accuracy = "n/a" if c["accuracy"] is None else f"{c['accuracy']:.1%}"
        kappa = "n/a" if c["kappa"] is None else f"{c['kappa']:.3f}"
        assert shown[c["name"]] == [str(c["support"] + c["n_excluded"]), str(c["support"]), accuracy, kappa]
    summary = text.split('id="summary"', 1)[1].split("</p>", 1)[0]
    assert (f"on {metrics['n_items']} labelled items: accuracy {metrics['criterion_accuracy']:.1%}, "
            f"mean Cohen's kappa {metrics['mean_kappa']:.2f}") in summary


def test_the_dataset_label_is_beside_each_verdict_with_agreement_marked(db: Path, pages: dict[str, Path]) -> None:
    """Issue 51: each item's criteria show the human label beside the final verdict, marked as
    agreeing or not; the summary's agreement per criterion is the metrics command's."""
    text = read(pages["labelled"])
    store = Store.open(db)
    final = finals(db, "labelled")
    expected = {}
    for row in store.item_rows(store.find_run("labelled")["id"]):
        truth = json.loads(row["ground_truth_json"])
        names = [n for (i, _), n in sorted(
            ((r["item_id"], r["criterion_index"]), r["criterion_name"])
            for r in sqlite_utils.Database(db)["item_criteria"].rows_where("run_id = ?", [row["run_id"]])
            if r["item_id"] == row["item_id"])]
        expected[row["item_id"]] = {
            name: (label, "yes" if final[(row["item_id"], k)] == label else "no")
            for k, (name, label) in enumerate(zip(names, truth, strict=True))}
    assert HumanCells(text).cells == expected
    marks = [agrees for cells in expected.values() for _, agrees in cells.values()]
    assert "yes" in marks and "no" in marks  # both marks are exercised
    assert text.count("&#10003; agrees") == marks.count("yes") and text.count("&#10007; differs") == marks.count("no")
    assert_agreement_is_the_metrics(text, metrics_json(db, "labelled"))
    order = [text.index(f'id="{anchor}"') for anchor in ("summary", "scores", "criteria", "agreement", "settings",
                                                         "items-heading")]
    assert order == sorted(order)
    assert HumanCells(read(pages["plain"])).cells == {item: {} for item in Page(read(pages["plain"])).item_ids}


@pytest.fixture(scope="module")
def stored_labels(db: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    """A copy of the database whose run ``plain`` has labels imported by ``metrics --labels``:
    three items labelled whole, one on two criteria only. Returns the database, the labels file
    and the run's item ids."""
    folder = tmp_path_factory.mktemp("stored-labels")
    copy = folder / "r.sqlite"
    shutil.copy(db, copy)
    ids = [row["item_id"] for row in Store.open(copy).item_rows(Store.open(copy).find_run("plain")["id"])]
    labels = folder / "labelled.jsonl"
    lines = [
        {"id": ids[0], "ground_truth": ["MET", "MET", "UNMET", "UNMET", "MET", "UNMET",
                                        "3 - Solid, several correct figures", "Matches the trade-offs"]},
        {"id": ids[1], "ground_truth": ["UNMET", "MET", "MET", "MET", "UNMET", "UNMET",
                                        "2 - Basic, one or two facts", "NA - No advice given"]},
        {"id": ids[2], "ground_truth": ["MET", "UNMET", "MET", "MET", "UNMET", "MET",
                                        "1 - Vague, no figures", "Contradicts the trade-offs"]},
        {"id": ids[3], "ground_truth": ["MET", None, None, None, None, "UNMET", None, None]},
    ]
    labels.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    done = invoke("metrics", copy, "--run", "plain", "--labels", labels, "--no-save")
    assert done.exit_code == 0, done.output
    return copy, labels, ids


def test_labels_imported_by_metrics_are_beside_the_verdicts(stored_labels: tuple[Path, Path, list[str]],
                                                            tmp_path: Path) -> None:
    """Issue 51: labels stored by ``metrics --labels`` / ``estimate --labels`` (not the dataset's)
    are shown beside the verdicts and compared as ``metrics --label-source`` compares them."""
    copy, labels, ids = stored_labels
    done = invoke("report", "plain", "--db", copy, "--out", tmp_path / "r")
    assert done.exit_code == 0, done.output
    text = read(tmp_path / "r" / "index.html")
    source = str(labels.resolve())
    assert f"Labels: human labels imported from {source}." in text
    assert "1 partly labelled items left out (the metrics compare whole items)" in text
    assert_agreement_is_the_metrics(text, metrics_json(copy, "plain", "--label-source", source))
    cells = HumanCells(text).cells
    final = finals(copy, "plain")
    stored = {(r["item_id"], r["criterion_index"]): r["label"] for r in sqlite_utils.Database(copy)["labels"].rows}
    for item_id, shown in cells.items():
        for k, (name, (label, agrees)) in enumerate(shown.items()):
            want = stored.get((item_id, k))
            assert label == (want or "")
            assert agrees == ("" if want is None or final[(item_id, k)] is None
                              else "yes" if final[(item_id, k)] == want else "no"), (item_id, name)
    assert [label for label, _ in cells[ids[3]].values()] == ["MET", "", "", "", "", "UNMET", "", ""]
    assert all(label == "" for item in ids[4:] for label, _ in cells[item].values())
    assert text.count(">no label<") == 8 * (len(ids) - 4) + 6


def test_a_second_label_source_is_named_and_can_be_chosen(stored_labels: tuple[Path, Path, list[str]],
                                                          tmp_path: Path) -> None:
    copy, labels, ids = stored_labels
    copy = shutil.copy(copy, tmp_path / "two.sqlite")
    second = tmp_path / "second.jsonl"
    second.write_text(json.dumps({"id": ids[5], "ground_truth": ["UNMET"] * 6 + [
        "1 - Vague, no figures", "Contradicts the trade-offs"]}) + "\n", encoding="utf-8")
    assert invoke("metrics", copy, "--run", "plain", "--labels", second, "--no-save").exit_code == 0
    first, latest = str(labels.resolve()), str(second.resolve())
    done = invoke("report", "plain", "--db", copy, "--out", tmp_path / "latest")
    assert done.exit_code == 0, done.output
    text = read(tmp_path / "latest" / "index.html")
    assert (f"Labels: human labels imported from {latest} (the latest imported of this run&#39;s label sources); "
            f"other sources: {first} (choose one with --label-source).") in text
    assert {k for k, cells in HumanCells(text).cells.items() if any(label for label, _ in cells.values())} == {ids[5]}
    done = invoke("report", "plain", "--db", copy, "--out", tmp_path / "first", "--label-source", labels)
    assert done.exit_code == 0, done.output
    chosen = HumanCells(read(tmp_path / "first" / "index.html")).cells
    assert {k for k, cells in chosen.items() if any(label for label, _ in cells.values())} == set(ids[:4])
    refused = CliRunner().invoke(main, ["report", "plain", "--db", str(copy), "--label-source", "dataset",
                                        "--out", str(tmp_path / "none")])
    assert refused.exit_code == 1
    assert refused.output == f"Error: run 'plain' has no labels from 'dataset' (sources: {first}, {latest})\n"
    assert not (tmp_path / "none").exists()


def off_label_policy(request: ScoreRequest) -> LabelScores:
    """``policy``'s answers, with off-label mass 0.8 on the energy-density criterion and 0.1 elsewhere."""
    answer = policy(request)
    assert isinstance(answer, list)
    mass = 0.8 if "NMC cell-level energy density" in request.prefix + request.suffix else 0.1
    return LabelScores(tuple(answer), off_label_mass=mass)


def test_a_criterion_with_high_off_label_mass_is_warned_about_first(pages: dict[str, Path], tmp_path: Path) -> None:
    """Issue 51: the summary names each criterion whose judgments put more than the threshold
    outside the allowed labels, with the figures; criteria at 0.1 are not named, and a run
    without such judgments has no warning."""
    rubric = Rubric.from_file(str(RUBRIC_FILE))
    flagged = [c.name for c in rubric.rubric if "NMC cell-level energy density" in c.requirement]
    assert flagged == ["nmc_energy_density"]
    path = tmp_path / "r.sqlite"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(criterion_grader, "load_engine", lambda config: ScriptedEngine(policy=off_label_policy))
        done = invoke("grade", RUBRIC_FILE, DATA_FILE, "--db", path, "--run", "off", "--seed", "3", "--limit", "3",
                      "--no-progress")
    assert done.exit_code == 0, done.output
    assert invoke("report", "off", "--db", path, "--out", tmp_path / "r").exit_code == 0
    text = read(tmp_path / "r" / "index.html")
    warnings = re.findall(r'<p class="warning">([^<]*)</p>', text)
    assert warnings == [
        "nmc_energy_density: 3 of 3 judgments (100%) put more than 50% of the first-step probability outside the "
        "allowed labels (mean off-label mass 0.80): the judge did not keep to the answer format there, so its "
        "label probabilities and verdicts on this criterion mean less than they seem"]
    order = [text.index(f'id="{anchor}"') for anchor in ("summary", "warnings", "scores", "criteria", "settings")]
    assert order == sorted(order)
    assert "mean off-label mass 0.10<" in text and "mean off-label mass 0.80, 3 above 50%<" in text
    higher = invoke("report", "off", "--db", path, "--out", tmp_path / "h", "--off-label-threshold", "0.9")
    assert higher.exit_code == 0, higher.output
    assert 'id="warnings"' not in read(tmp_path / "h" / "index.html")
    lower = invoke("report", "off", "--db", path, "--out", tmp_path / "l", "--off-label-threshold", "0.05")
    assert lower.exit_code == 0, lower.output
    assert len(re.findall(r'<p class="warning">', read(tmp_path / "l" / "index.html"))) == 8
    for page in pages.values():  # judgments without a reported off-label mass: no warning, no figure
        assert 'id="warnings"' not in read(page) and "off-label" not in read(page)
