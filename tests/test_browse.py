"""``autorubric-local browse``: the Datasette metadata, canned queries and full-text indexes on a
database written by a real runner run (two ScriptedEngine judges that disagree on purpose on one
item), the server on 127.0.0.1, and the served pages in headless Chromium.

The browser test follows ``tests/test_report.py``'s rule: without Chromium it is skipped with
the reason, unless ``scripts/setup_browser.sh`` installed it (stamp ``.venv/.browser-ready``),
then it fails. With ``AUTORUBRIC_BROWSE_SCREENSHOTS=DIR`` it also saves its screenshots in DIR
(how ``docs/img/browse.png`` was made).
"""

from __future__ import annotations

import json
import math
import os
import re
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils
from click.testing import CliRunner

from autorubric_local.browse import CANNED_QUERIES, DESCRIPTIONS, browse_metadata, index_text
from autorubric_local.browse.metadata import facets
from autorubric_local.cli import main
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import Criterion
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.engine import LabelScores, ScoreRequest, ScriptedEngine
from autorubric_local.graders import CriterionGrader
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.graders.prompts import BINARY_LABELS
from autorubric_local.judges.config import LLMConfig
from autorubric_local.runner import EvalConfig, EvalRunner
from autorubric_local.store import Store, open_db

sys.path.insert(0, str(Path(__file__).parent))
from test_report import headless_chromium  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RUN = "browse-v1"
CRITERIA = ("states the chemistry", "names a risk")
DISPUTED = "disputed"
OFF_LABEL_MASS = 0.8


def judge(name: str, *, disputes: bool) -> JudgeSpec:
    """A judge that answers MET, except (``disputes``) UNMET with high off-label mass on the
    disputed item."""

    def policy(request: ScoreRequest) -> list[float] | LabelScores:
        unmet = disputes and "cobalt" in request.prefix + request.suffix
        wanted = BINARY_LABELS.index("UNMET" if unmet else "MET")  # binary labels are never shuffled
        weights = [9.0 if k == wanted else 0.5 for k in range(len(request.labels))]
        logprobs = tuple(math.log(w / sum(weights)) for w in weights)
        return LabelScores(logprobs, off_label_mass=OFF_LABEL_MASS) if unmet else list(logprobs)

    engine = ScriptedEngine(model_id=name, policy=policy)
    return JudgeSpec(LLMConfig(model="scripted", engine=engine), name, 2.0 if disputes else 1.0)


def grade(path: Path) -> Path:
    rubric = Rubric([Criterion(name=CRITERIA[0], weight=1.0, requirement="Names the cell chemistry"),
                     Criterion(name=CRITERIA[1], weight=1.0, requirement="Names one safety risk")])
    dataset = RubricDataset(prompt="Describe a battery cell.", rubric=rubric, name="browse")
    dataset.add_item("An LFP cell is safe; thermal runaway is rare.", id="plain-1", ground_truth=["MET", "MET"])
    dataset.add_item("A claim about cobalt chemistry in NMC cells.", id=DISPUTED, ground_truth=["UNMET", "MET"])
    dataset.add_item("Sodium cells are cheaper.", id="plain-2")
    grader = CriterionGrader(judges=[judge("agreeable", disputes=False), judge("contrary", disputes=True)], seed=1)
    EvalRunner(dataset, grader, EvalConfig(db_path=path, experiment_name=RUN, show_progress=False)).run_sync()
    return path


@pytest.fixture(scope="module")
def db_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return grade(tmp_path_factory.mktemp("browse") / "results.sqlite")


def canned(path: Path, name: str, **params: str) -> list[dict[str, Any]]:
    """Rows of canned query ``name`` run with sqlite3 (blank parameters as Datasette sends them)."""
    sql = CANNED_QUERIES[name]["sql"]
    values = {p: params.get(p, "") for p in re.findall(r":(\w+)", sql)}
    with closing(sqlite3.connect(path)) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute(sql, values)]


# ------------------------------------------------------------------------------ metadata


def test_every_table_and_view_has_a_title_and_description() -> None:
    db = open_db(":memory:")
    names = set(db.table_names()) | set(db.view_names())
    assert names - set(DESCRIPTIONS) == set()
    tables = browse_metadata(db, "results")["databases"]["results"]["tables"]
    assert set(tables) == names
    assert all(tables[n]["title"] and tables[n]["description"] for n in names)


def test_facets_on_run_criterion_verdict_and_judge() -> None:
    db = open_db(":memory:")
    tables = browse_metadata(db, "results")["databases"]["results"]["tables"]
    assert tables["judge_votes"]["facets"] == ["run_name", "criterion_name", "vote", "judge_id"]
    assert tables["criterion_results"]["facets"] == ["run_name", "criterion_name", "verdict"]
    assert tables["judgments"]["facets"] == ["run_id", "criterion_name", "verdict", "judge_id"]
    assert tables["items"]["facets"] == ["run_id"]
    assert facets(["item_id", "score"]) == []


def test_full_text_tables_are_left_to_datasette(db_path: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(db_path.read_bytes())
    db = sqlite_utils.Database(copy)
    index_text(db)
    tables = browse_metadata(db, "copy")["databases"]["copy"]["tables"]
    assert not [name for name in tables if "_fts" in name]


# ------------------------------------------------------------------------ canned queries


def test_disagreements_are_the_disputed_item_on_every_criterion(db_path: Path) -> None:
    rows = canned(db_path, "judge_disagreements")
    assert [(r["item_id"], r["criterion_name"]) for r in rows] == [(DISPUTED, c) for c in CRITERIA]
    for row in rows:
        assert sorted(row["votes"].split("; ")) == ["agreeable: MET", "contrary: UNMET"]
        assert row["final_verdict"] == "UNMET"  # the contrary judge weighs twice as much
    assert canned(db_path, "judge_disagreements", run=RUN) == rows
    assert canned(db_path, "judge_disagreements", run="no-such-run") == []


def test_judge_vs_human_uses_the_ground_truth_then_imported_labels(db_path: Path, tmp_path: Path) -> None:
    rows = canned(db_path, "judge_vs_human")
    got = {(r["item_id"], r["criterion_name"], r["judge_id"]): (r["vote"], r["human_label"], r["agrees"])
           for r in rows}
    assert {r["source"] for r in rows} == {"dataset"}
    assert got == {
        ("plain-1", CRITERIA[0], "agreeable"): ("MET", "MET", 1), ("plain-1", CRITERIA[0], "contrary"): ("MET", "MET", 1),
        ("plain-1", CRITERIA[1], "agreeable"): ("MET", "MET", 1), ("plain-1", CRITERIA[1], "contrary"): ("MET", "MET", 1),
        (DISPUTED, CRITERIA[0], "agreeable"): ("MET", "UNMET", 0),
        (DISPUTED, CRITERIA[0], "contrary"): ("UNMET", "UNMET", 1),
        (DISPUTED, CRITERIA[1], "agreeable"): ("MET", "MET", 1),
        (DISPUTED, CRITERIA[1], "contrary"): ("UNMET", "MET", 0),
    }
    copy = tmp_path / "labelled.sqlite"
    copy.write_bytes(db_path.read_bytes())
    store = Store.open(copy)
    run_id = store.find_run(RUN)["id"]
    store.replace_labels(run_id, "human.jsonl", [("plain-2", 0, CRITERIA[0], "UNMET")])
    store.close()
    labelled = [r for r in canned(copy, "judge_vs_human") if r["source"] == "human.jsonl"]
    assert [(r["item_id"], r["judge_id"], r["vote"], r["human_label"], r["agrees"]) for r in labelled] == [
        ("plain-2", "agreeable", "MET", "UNMET", 0), ("plain-2", "contrary", "MET", "UNMET", 0)]


def test_lowest_scoring_items_in_score_order(db_path: Path) -> None:
    rows = canned(db_path, "lowest_scoring_items")
    db = sqlite_utils.Database(db_path)
    scores = {r["item_id"]: r["score"] for r in db["items"].rows}
    assert [r["item_id"] for r in rows][0] == DISPUTED
    assert [r["score"] for r in rows] == sorted(scores.values())
    assert len(rows) == 3


def test_off_label_judgments_above_the_threshold(db_path: Path) -> None:
    rows = canned(db_path, "off_label_judgments")
    assert [(r["item_id"], r["judge_id"], r["off_label_mass"]) for r in rows] == [
        (DISPUTED, "contrary", pytest.approx(OFF_LABEL_MASS))] * len(CRITERIA)
    assert canned(db_path, "off_label_judgments", min_mass="0.9") == []
    assert len(canned(db_path, "off_label_judgments", min_mass="0.8")) == len(CRITERIA)


# --------------------------------------------------------------------- full-text search


def test_search_finds_a_submission_word_and_is_rebuilt(db_path: Path, tmp_path: Path) -> None:
    copy = tmp_path / "search.sqlite"
    copy.write_bytes(db_path.read_bytes())
    db = sqlite_utils.Database(copy)
    assert index_text(db) == {"items": 3, "judgments": 12}
    assert [r["item_id"] for r in db["items"].search("cobalt")] == [DISPUTED]
    assert [r["item_id"] for r in db["items"].search("claims")] == [DISPUTED]  # Porter stemming
    db.execute("update items set submission = 'Now about manganese.' where item_id = 'plain-2'")
    db.conn.commit()
    assert list(db["items"].search("manganese")) == []  # not current until the next start
    index_text(db)
    assert [r["item_id"] for r in db["items"].search("manganese")] == ["plain-2"]


# ------------------------------------------------------------------------------- the server


@pytest.fixture
def served(db_path: Path, tmp_path: Path) -> Iterator[str]:
    """The URL of ``browse`` serving a copy of the graded database (default host, port 0)."""
    copy = tmp_path / "results.sqlite"
    copy.write_bytes(db_path.read_bytes())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "autorubric_local.cli", "browse", str(copy), "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        ready, _, _ = select.select([process.stdout], [], [], 120)
        line = process.stdout.readline() if ready and process.stdout else ""
        match = re.search(r"at (http://\S+) ", line)
        assert match, f"no URL in {line!r}; stderr: {process.stderr.read() if process.stderr else ''}"
        yield match.group(1)
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)


def test_serves_on_127_0_0_1_by_default(served: str) -> None:
    assert served.startswith("http://127.0.0.1:") and served.endswith("/results")
    votes = get_json(served + "/judge_votes.json?_shape=objects&_facet=judge_id")
    assert {f["value"]: f["count"] for f in votes["facet_results"]["judge_id"]["results"]} == {
        "agreeable": 6, "contrary": 6}
    rows = get_json(served + "/judge_disagreements.json?_shape=objects&run=")["rows"]
    assert [(r["item_id"], r["criterion_name"]) for r in rows] == [(DISPUTED, c) for c in CRITERIA]


def test_missing_datasette_is_a_clean_error_that_writes_nothing(db_path: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    copy = tmp_path / "results.sqlite"
    copy.write_bytes(db_path.read_bytes())
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "datasette" else real(name, *a))
    result = CliRunner().invoke(main, ["browse", str(copy)])
    assert result.exit_code == 1
    assert "pip install 'autorubric-local[browse]'" in result.output
    assert not sqlite_utils.Database(copy)["items_fts"].exists()


def test_a_busy_port_is_a_clean_error(db_path: Path, tmp_path: Path) -> None:
    import socket

    copy = tmp_path / "results.sqlite"
    copy.write_bytes(db_path.read_bytes())
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = CliRunner().invoke(main, ["browse", str(copy), "--port", str(port)])
    assert result.exit_code == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.output


# ------------------------------------------------------------------------------ a real browser


def test_facets_and_a_canned_query_in_a_headless_browser(served: str, tmp_path: Path) -> None:
    driver = headless_chromium(1100)
    shots = Path(os.environ.get("AUTORUBRIC_BROWSE_SCREENSHOTS", tmp_path))
    try:
        driver.get(served + "/judge_votes")
        assert driver.find_element("css selector", "h1").text == "Judge votes (view)"
        facet_columns = driver.execute_script(
            "return Array.from(document.querySelectorAll('.facet-info')).map(f => f.dataset.column)")
        assert sorted(facet_columns) == sorted(["run_name", "criterion_name", "vote", "judge_id"])
        judges = driver.find_element("css selector", ".facet-info[data-column='judge_id']").text
        assert "agreeable" in judges and "contrary" in judges
        driver.save_screenshot(str(shots / "browse.png"))

        driver.get(served + "/judge_disagreements?run=")
        assert driver.find_element("css selector", "h1").text == "Disagreements between judges"
        cells = driver.execute_script(
            "return Array.from(document.querySelectorAll('table.rows-and-columns tbody tr'))"
            ".map(r => r.querySelector('td.col-item_id').textContent.trim())")
        assert cells == [DISPUTED] * len(CRITERIA)
        driver.save_screenshot(str(shots / "browse-disagreements.png"))
    finally:
        driver.quit()
    assert (shots / "browse.png").stat().st_size > 0


def test_a_missing_database_is_a_clean_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["browse", str(tmp_path / "none.sqlite")])
    assert result.exit_code == 1
    assert "none.sqlite: no such results database" in result.output
    assert not (tmp_path / "none.sqlite").exists()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to serve as another user")
def test_a_database_in_a_read_only_folder_is_served_unchanged(db_path: Path) -> None:
    """`browse` as uid 65534 on a root-owned folder (issue 52: every read command works on a
    read-only file): it serves the runs and writes nothing there, no index and no -shm. Before,
    it refused the file ("not writable")."""
    folder = Path(tempfile.mkdtemp(prefix="read-only-browse-", dir="/tmp"))
    try:
        copy = folder / "results.sqlite"
        copy.write_bytes(db_path.read_bytes())
        folder.chmod(0o755)
        copy.chmod(0o644)
        before = {p.name: p.read_bytes() for p in folder.iterdir()}
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(folder / "no-home")}
        process = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable,
                                    "-m", "autorubric_local.cli", "browse", str(copy), "--port", "0"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd="/tmp")
        try:
            ready, _, _ = select.select([process.stdout], [], [], 120)
            line = process.stdout.readline() if ready and process.stdout else ""
            match = re.search(r"at (http://\S+) ", line)
            assert match, f"no URL in {line!r}; stderr: {process.stderr.read() if process.stderr else ''}"
            runs = get_json(match.group(1) + "/runs.json?_shape=objects")["rows"]
            assert [row["status"] for row in runs] == ["finished"]
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=30)
        assert process.stderr is not None
        assert "read-only here" in process.stderr.read()
        assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    finally:
        shutil.rmtree(folder, ignore_errors=True)
