"""Mean off-label mass per criterion (and per judge) in ``compute_metrics``: hand-computed on a
synthetic two-judge run, kept through save/load, shown by the summary and the metrics CLI."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from click.testing import CliRunner
from test_metrics_support import BIN, ORD, make_run, stub_stored_run

from autorubric_local.cli import main
from autorubric_local.metrics import (
    CriterionMetrics,
    compute_metrics,
    load_metrics,
    save_metrics,
)
from autorubric_local.runner.results import EvalResult
from autorubric_local.store import open_db

# Item 2's binary truth is CANNOT_ASSESS: the pair is excluded, its votes' masses still count.
# Item 3 has no ground truth: it is not compared, so its masses do not count.
TRUTH: list[list[str] | None] = [["MET", "L1"], ["UNMET", "L2"], ["CANNOT_ASSESS", "L3"], None]
VOTES = {"a": [["MET", "L1"], ["UNMET", "L2"], ["MET", "L2"], ["MET", "L0"]],
         "b": [["MET", "L1"], ["MET", "L2"], ["MET", "L3"], ["MET", "L0"]]}
# MASS[item][criterion][judge]; None: the backend did not report it.
MASS: list[list[dict[str, float | None]]] = [
    [{"a": 0.1, "b": 0.3}, {"a": 0.2, "b": None}],
    [{"a": 0.5, "b": None}, {"a": 0.4, "b": 0.9}],
    [{"a": None, "b": 0.7}, {"a": None, "b": None}],
    [{"a": 0.95, "b": 0.95}, {"a": 0.95, "b": 0.95}],
]


def with_masses(result: EvalResult, masses: list[list[dict[str, float | None]]]) -> EvalResult:
    """``result`` with each vote's ``off_label_mass`` set from ``masses[item][criterion][judge]``."""
    items = []
    for item in result.item_results:
        criteria = []
        for k, cr in enumerate(item.report.report or []):
            table = masses[item.item_idx][k]
            criteria.append(cr.model_copy(update={
                "votes": [v.model_copy(update={"off_label_mass": table[v.judge_id]}) for v in cr.votes],
                "multi_choice_votes": [v.model_copy(update={"off_label_mass": table[v.judge_id]})
                                       for v in cr.multi_choice_votes],
            }))
        items.append(dataclasses.replace(item, report=item.report.model_copy(update={"report": criteria})))
    return dataclasses.replace(result, item_results=items)


def run() -> tuple[EvalResult, Any]:
    res, ds = make_run([BIN, ORD], TRUTH, VOTES["a"], VOTES)
    return with_masses(res, MASS), ds


def test_mean_off_label_mass_per_criterion_and_per_judge_by_hand() -> None:
    res, ds = run()
    m = compute_metrics(res, ds, per_judge=True)
    b, o = m.per_criterion
    # Ensemble view, items 0-2, every judge's known mass:
    # binary 0.1, 0.3, 0.5, 0.7 -> 0.4; ordinal 0.2, 0.4, 0.9 -> 0.5.
    assert (b.mean_off_label_mass, b.n_off_label) == (pytest.approx(0.4), 4)
    assert (o.mean_off_label_mass, o.n_off_label) == (pytest.approx(0.5), 3)
    assert b.support == 2 and b.n_excluded == 1  # item 2's pair was excluded, its masses were not
    a_b, a_o = m.per_judge["a"].per_criterion
    assert (a_b.mean_off_label_mass, a_b.n_off_label) == (pytest.approx(0.3), 2)  # 0.1, 0.5
    assert (a_o.mean_off_label_mass, a_o.n_off_label) == (pytest.approx(0.3), 2)  # 0.2, 0.4
    b_b, b_o = m.per_judge["b"].per_criterion
    assert (b_b.mean_off_label_mass, b_b.n_off_label) == (pytest.approx(0.5), 2)  # 0.3, 0.7
    assert (b_o.mean_off_label_mass, b_o.n_off_label) == (pytest.approx(0.9), 1)


def test_no_known_mass_gives_none_and_no_summary_text() -> None:
    m = compute_metrics(*make_run([BIN, ORD], TRUTH, VOTES["a"], VOTES), per_judge=True)
    assert [(c.mean_off_label_mass, c.n_off_label) for c in m.per_criterion] == [(None, 0), (None, 0)]
    assert "off-label" not in m.summary()
    assert "NaN" not in m.model_dump_json()


def test_summary_dataframe_and_storage_carry_the_mass() -> None:
    res, ds = run()
    m = compute_metrics(res, ds, per_judge=True)
    text = m.summary()
    assert "  b [binary]: n=2, acc=100.0%, kappa=1.000, F1=100.0%, excluded=1, off-label mass=0.400 (n=4)" in text
    assert "off-label mass=0.500 (n=3)" in text
    assert "  a: accuracy=" in text and "    off-label mass: b 0.300, o 0.300" in text
    assert "    off-label mass: b 0.500, o 0.900" in text
    df = m.to_dataframe()
    rows = df[(df["level"] == "criterion") & (df["metric"] == "mean_off_label_mass")]
    assert dict(zip(rows["name"], rows["value"])) == pytest.approx({"b": 0.4, "o": 0.5})
    db = open_db(":memory:")
    save_metrics(db, "run-1", m)
    loaded = load_metrics(db, "run-1")
    assert loaded == m and loaded.per_criterion[0].mean_off_label_mass == pytest.approx(0.4)


def test_metrics_stored_before_the_field_still_load() -> None:
    old = {"name": "b", "index": 0, "scale": "binary", "support": 1, "labels": ["UNMET", "MET"],
           "confusion_matrix": [[1, 0], [0, 0]]}
    c = CriterionMetrics.model_validate(old)
    assert (c.mean_off_label_mass, c.n_off_label) == (None, 0)


def test_metrics_cli_prints_the_mass(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    db_path = tmp_path / "results.sqlite"
    open_db(db_path).close()
    res, ds = run()
    res.run_id, res.db_path = "run-x", str(db_path)
    stub_stored_run(monkeypatch, res, ds)
    out = CliRunner().invoke(main, ["metrics", str(db_path), "--per-judge"])
    assert out.exit_code == 0, out.output
    assert "off-label mass=0.400 (n=4)" in out.output and "    off-label mass: b 0.300, o 0.300" in out.output
    assert load_metrics(open_db(db_path), "run-x").per_criterion[1].n_off_label == 3
