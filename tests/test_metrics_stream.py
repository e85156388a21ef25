"""Metrics of a stored run read a page at a time (issue 33, the paged reader of ``runner/results.py``).

Real runs graded with two scripted judges (hash-of-prompt verdicts): binary and ordinal
criteria, a per-item rubric with a nominal criterion that has an NA option, ground truth with
CANNOT_ASSESS and NA, items without ground truth, an item that fails at run time; and a copy of
that database with some reports removed, as an interrupted run leaves it. The streamed metrics
must equal those of the whole loaded result (``load_result``) for every option, through the
library, the CLI (printed and saved) and the report's agreement section; and the streamed path
must never hold more than a page of parsed reports.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import math
import shutil
import sqlite3
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from autorubric_local.cli import main
from autorubric_local.core.reports import EnsembleEvaluationReport
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import Criterion, CriterionOption
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.engine import ScoreRequest, ScriptedEngine
from autorubric_local.graders import CriterionGrader
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.judges.config import LLMConfig
from autorubric_local.metrics import compute_metrics, load_metrics
from autorubric_local.report.context import agreement_section
from autorubric_local.runner import EvalConfig, EvalRunner, load_result, open_graded_run
from autorubric_local.runner import results as reader
from autorubric_local.runner.results import result_from_store
from autorubric_local.store import Store, open_db

sys.path.insert(0, str(Path(__file__).parent))
import crash_worker

OWN_RUBRIC = Rubric([
    Criterion(name="density", weight=10.0, requirement="States the energy density"),
    Criterion(name="tone", weight=2.0, requirement="What tone?", scale_type="nominal", options=[
        CriterionOption(label="Dry", value=0.0), CriterionOption(label="Lively", value=1.0),
        CriterionOption(label="No text", value=0.0, na=True)]),
])
TRUTH = {0: ["MET", "UNMET", "Basic"], 1: ["CANNOT_ASSESS", "MET", "Expert"], 2: ["UNMET", "UNMET", "Vague"],
         4: ["MET", "CANNOT_ASSESS", "Vague"], 5: ["MET", "MET", "Basic"], 7: ["UNMET", "MET", "Expert"],
         8: ["MET", "UNMET", "Basic"]}
N_ITEMS = 10
OPTIONS: list[dict[str, Any]] = [
    {},
    {"per_judge": True},
    {"cannot_assess": "as_category", "na_mode": "as_category", "per_judge": True},
    {"cannot_assess": "as_unmet", "na_mode": "as_unmet"},
    {"bootstrap": True, "n_bootstrap": 20, "seed": 3},
]


def policy(salt: str) -> Any:
    def score(request: ScoreRequest) -> Any:
        if "poison" in request.prefix:
            return "infrastructure: prompt longer than the judge's context"
        digest = hashlib.sha256((salt + request.prefix + request.suffix).encode()).digest()
        weights = [1.0 + digest[i] for i in range(len(request.labels))]
        return [math.log(w / sum(weights)) for w in weights]
    return score


def dataset() -> RubricDataset:
    ds = RubricDataset(prompt="Compare NMC and LFP cells.", rubric=crash_worker.RUBRIC, name="stream")
    for i in range(N_ITEMS - 2):
        ds.add_item(f"Submission {i}: NMC reaches {200 + i} Wh/kg.", ground_truth=TRUTH.get(i))
    ds.add_item("poison " * 5, ground_truth=["MET", "MET", "Basic"])  # fails at run time
    ds.add_item("Own rubric: LFP is safer.", rubric=OWN_RUBRIC, ground_truth=["MET", "No text"])
    return ds


@pytest.fixture(scope="module")
def dbs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The graded run ``panel`` (``full.sqlite``) and the same with items 3-5 not graded (``cut.sqlite``)."""
    folder = tmp_path_factory.mktemp("stream")
    grader = CriterionGrader(judges=[JudgeSpec(LLMConfig(model="scripted-a", engine=ScriptedEngine(policy=policy("a"))), "a"),
                                     JudgeSpec(LLMConfig(model="scripted-b", engine=ScriptedEngine(policy=policy("b"))), "b")],
                             seed=1)
    full = folder / "full.sqlite"
    EvalRunner(dataset(), grader, EvalConfig(db_path=full, experiment_name="panel", show_progress=False)).run_sync()
    cut = folder / "cut.sqlite"
    shutil.copy(full, cut)
    with contextlib.closing(sqlite3.connect(cut)) as con, con:
        con.execute("update items set report_json = null where item_index between 3 and 5")
        con.execute("update runs set status = 'interrupted'")
    return full, cut


def metrics_json(db: Path, **options: Any) -> str:
    """The metrics of the whole loaded result, as today."""
    return compute_metrics(*load_result(db, "panel"), **options).model_dump_json()


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("which", [0, 1])
def test_streamed_metrics_equal_those_of_the_loaded_result(dbs: tuple[Path, Path], which: int,
                                                           options: dict[str, Any]) -> None:
    db = dbs[which]
    with open_graded_run(db, "panel", page_size=2) as (result, ds):
        streamed_json = compute_metrics(result, ds, **options).model_dump_json()
    assert streamed_json == metrics_json(db, **options)
    dumped = json.loads(streamed_json)
    assert dumped["inter_judge"] is not None and dumped["n_items"] >= 4
    assert any("failed item(s) left out" in w for w in dumped["warnings"])
    assert any("without ground truth" in w for w in dumped["warnings"])
    assert {c["name"] for c in dumped["per_criterion"]} >= {"depth", "tone"}


def test_streamed_run_reads_the_same_items_and_reports(dbs: tuple[Path, Path]) -> None:
    loaded, whole = load_result(dbs[1], "panel")
    with open_graded_run(dbs[1], "panel", page_size=3) as (result, ds):
        assert len(result.item_results) == len(loaded.item_results) == N_ITEMS - 3
        assert list(result.item_results) == loaded.item_results
        assert result.item_results[4] == loaded.item_results[4]
        assert list(ds) == list(whole) and len(ds) == N_ITEMS
        assert ds.get_item_rubric(N_ITEMS - 1) == whole.get_item_rubric(N_ITEMS - 1)
        assert result.grader_settings == loaded.grader_settings and result.run_id == loaded.run_id


def test_cli_prints_and_saves_the_same_metrics(dbs: tuple[Path, Path], tmp_path: Path) -> None:
    db = tmp_path / "copy.sqlite"
    shutil.copy(dbs[1], db)
    out = CliRunner().invoke(main, ["metrics", "--db", str(db), "--per-judge", "--cannot-assess", "as_category", "--json"])
    assert out.exit_code == 0, out.output
    # the CLI's intervals are 90% by default, as estimate's (issue 51); the library keeps AutoRubric's 0.95
    expected = json.loads(metrics_json(db, per_judge=True, cannot_assess="as_category", confidence_level=0.9))
    assert json.loads(out.output) == expected
    assert load_metrics(open_db(db), load_result(db)[0].run_id).model_dump() == expected


def test_report_agreement_section_is_unchanged(dbs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store.open(dbs[0])
    try:
        row = store.find_run("panel")
        section = agreement_section(store, row, str(dbs[0]))
        whole = result_from_store(store, row, str(dbs[0]))  # the paged reader read to the end, then held
        monkeypatch.setattr(reader, "graded_run", lambda *args: whole)
        assert section == agreement_section(store, row, str(dbs[0]))
    finally:
        store.close()
    assert section is not None and section["error"] is None and section["figures"]


@contextlib.contextmanager
def live_reports() -> Iterator[dict[str, int]]:
    """Counts parsed reports: ``most`` is the largest number alive at once when one is parsed.

    Unreferenced reports are collected before a parse that would make more than two alive, so
    ``most`` exceeds 2 exactly when more than two are still referenced at some parse."""
    seen = {"parsed": 0, "most": 0, "alive": 0}
    parse = EnsembleEvaluationReport.model_validate_json

    def dropped() -> None:
        seen["alive"] -= 1

    def counting(text: Any, *args: Any, **kwargs: Any) -> EnsembleEvaluationReport:
        report = parse(text, *args, **kwargs)
        if seen["alive"] >= 2:  # this one would pass the bound: unreferenced reports go first
            gc.collect()  # only here: a full collection per parse made the module's slowest tests
        weakref.finalize(report, dropped)
        seen["parsed"] += 1
        seen["alive"] += 1
        seen["most"] = max(seen["most"], seen["alive"])
        return report

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(EnsembleEvaluationReport, "model_validate_json", counting)
        yield seen


def test_metrics_command_holds_a_page_of_reports_at_a_time(dbs: tuple[Path, Path], tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "PAGE_SIZE", 2)
    with live_reports() as seen:
        out = CliRunner().invoke(main, ["metrics", str(dbs[0]), "--per-judge", "--no-save",
                                        "--plot", str(tmp_path / "plots")])
    assert out.exit_code == 0, out.output
    assert seen["parsed"] >= N_ITEMS  # every report was read, some more than once
    assert seen["most"] <= 2  # the one being paired and the one being parsed, never the run


def test_report_agreement_holds_a_page_of_reports_at_a_time(dbs: tuple[Path, Path],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "PAGE_SIZE", 2)
    store = Store.open(dbs[0])
    try:
        with live_reports() as seen:
            assert agreement_section(store, store.find_run("panel"), str(dbs[0]))["error"] is None
    finally:
        store.close()
    assert seen["parsed"] >= N_ITEMS and seen["most"] <= 2


def test_streamed_dataset_holds_one_page_of_items(dbs: tuple[Path, Path]) -> None:
    with open_graded_run(dbs[0], "panel", page_size=3) as (result, ds):
        items = ds.items
        assert isinstance(items, reader.StoredItems)
        for r in result.item_results:
            assert len(items._page) <= 3 and r.item is items[r.item_idx]
        with pytest.raises(IndexError):
            items[N_ITEMS]


def test_page_size_must_be_positive(dbs: tuple[Path, Path]) -> None:
    from autorubric_local.core.errors import InputError

    with pytest.raises(InputError, match="page_size must be >= 1, got 0"):
        with open_graded_run(dbs[0], "panel", page_size=0):
            pass
