"""Builders of synthetic runs for the metrics tests (no model involved)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from autorubric_local.core.reports import (
    EnsembleCriterionReport,
    EnsembleEvaluationReport,
    JudgeVote,
    MultiChoiceJudgeVote,
)
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import (
    AggregatedMultiChoiceVerdict,
    Criterion,
    CriterionVerdict,
)
from autorubric_local.data.dataset import DataItem, RubricDataset
from autorubric_local.runner.results import EvalResult, EvalTimingStats, ItemResult

Label = str | None  # a verdict name / option label; None = failed judgment

BIN = Criterion(name="b", weight=1.0, requirement="binary")
ORD = Criterion.model_validate({
    "name": "o", "weight": 1.0, "requirement": "ordinal", "scale_type": "ordinal",
    "options": [{"label": f"L{k}", "value": k / 3} for k in range(4)]
    + [{"label": "NA", "na": True}]})
NOM = Criterion.model_validate({
    "name": "n", "weight": 1.0, "requirement": "nominal", "scale_type": "nominal",
    "options": [{"label": "red", "value": 1.0}, {"label": "green", "value": 0.5},
                {"label": "blue", "value": 0.0}]})


def _cr(criterion: Criterion, final: Label, votes: dict[str, Label],
        p_met: float | None = None) -> EnsembleCriterionReport:
    if criterion.options is None:
        probs = None if p_met is None else {"MET": p_met, "UNMET": 1 - p_met}
        jv = [JudgeVote(judge_id=j, verdict=CriterionVerdict(v or "UNMET"), reason="",
                        error=None if v else "infrastructure: x", label_probabilities=probs)
              for j, v in votes.items()]
        return EnsembleCriterionReport(
            criterion=criterion, final_verdict=CriterionVerdict(final or "UNMET"),
            final_reason="", votes=jv, error=None if final else "infrastructure: x",
            label_probabilities=probs)
    mv = []
    for j, v in votes.items():
        idx = criterion.find_option_by_label(v) if v else None
        opt = criterion.options[idx] if idx is not None else None
        mv.append(MultiChoiceJudgeVote(
            judge_id=j, selected_index=idx, selected_label=opt.label if opt else None,
            value=opt.value if opt else 0.0, reason="", na=bool(opt.na) if opt else True,
            error=None if v else "infrastructure: x"))
    idx = criterion.find_option_by_label(final) if final else None
    opt = criterion.options[idx] if idx is not None else None
    verdict = AggregatedMultiChoiceVerdict(
        selected_index=idx, selected_label=opt.label if opt else None,
        value=opt.value if opt else 0.0, na=bool(opt.na) if opt else True,
        aggregated_value=opt.value if opt else 0.0)
    return EnsembleCriterionReport(criterion=criterion, final_verdict=None, final_reason="",
                                   final_multi_choice_verdict=verdict, multi_choice_votes=mv,
                                   error=None if final else "infrastructure: x")


def make_run(
    criteria: list[Criterion],
    truth: list[list[str] | None],
    final: list[list[Label]] | list[None],
    votes: dict[str, list[list[Label]]] | None = None,
    p_met: list[list[float | None]] | None = None,
    scores: list[float | None] | None = None,
) -> tuple[EvalResult, RubricDataset]:
    """A run over ``len(truth)`` items; ``final[i]`` None marks a failed item.

    Item scores default to the rubric score of the final verdicts; judge scores to the rubric
    score of each judge's votes.
    """
    rubric = Rubric(criteria)
    dataset = RubricDataset(prompt="q", rubric=rubric,
                            items=[DataItem(submission=f"s{i}", ground_truth=t)
                                   for i, t in enumerate(truth)])
    votes = votes or {}
    results = []
    for i, fin in enumerate(final):
        if fin is None:
            report = EnsembleEvaluationReport(score=None, error="failed")
        else:
            crs = []
            for k, c in enumerate(criteria):
                pv = p_met[i][k] if p_met is not None else None
                crs.append(_cr(c, fin[k], {j: v[i][k] for j, v in votes.items()}, pv))
            score = scores[i] if scores is not None else rubric.compute_score(
                [x if x is not None else ("UNMET" if c.options is None else c.options[0].label)
                 for x, c in zip(fin, criteria)])
            judge_scores = {j: rubric.compute_score(
                [x if x is not None else ("UNMET" if c.options is None else c.options[0].label)
                 for x, c in zip(v[i], criteria)]) for j, v in votes.items()}
            report = EnsembleEvaluationReport(score=score, report=crs, judge_scores=judge_scores)
        results.append(ItemResult(item_idx=i, item=dataset[i], report=report,
                                  duration_seconds=0.0, item_id=f"item-{i}"))
    timing = EvalTimingStats(0, 0, 0, 0, 0, 0, 0, 0)
    now = datetime(2025, 1, 1)
    result = EvalResult(item_results=results, total_items=len(results),
                        successful_items=sum(r.report.score is not None for r in results),
                        failed_items=sum(r.report.score is None for r in results),
                        total_token_usage=None, total_completion_cost=None, timing_stats=timing,
                        started_at=now, completed_at=now)
    return result, dataset


def stub_stored_run(monkeypatch: Any, result: Any, dataset: Any, calls: list[Any] | None = None) -> None:
    """Make ``metrics`` (the command and ``autorubric_local.analyses.open_run``) read ``result`` and
    ``dataset`` as the stored run: ``open_run(db, run)`` gives a handle of ``result.run_id`` (and
    records ``(db, run)`` in ``calls``; run ``"missing"`` is an InputError), whose reads of the run
    are ``(result, dataset)``."""
    import contextlib
    from pathlib import Path

    from autorubric_local import analyses
    from autorubric_local.core.errors import InputError

    def open_run(db: Any, run: Any = None, **labels: Any) -> analyses.RunAnalyses:
        if calls is not None:
            calls.append((str(db), run))
        if run == "missing":
            raise InputError("no run named 'missing'")
        return analyses.RunAnalyses(Path(db), result.run_id, run or "latest", **labels)

    monkeypatch.setattr(analyses, "open_run", open_run)
    monkeypatch.setattr(analyses, "open_graded_run", lambda path, run=None: contextlib.nullcontext((result, dataset)))
