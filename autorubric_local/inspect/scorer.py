"""An Inspect scorer backed by this package's judges: :func:`rubric_scorer`.

Inspect (UK AISI's ``inspect_ai``) calls a scorer once per sample with the sample's
``TaskState`` and ``Target``. This scorer grades ``state.output.completion`` against a rubric
with :class:`~autorubric_local.graders.CriterionGrader`: the query is the sample's input text,
the target (where set) the reference submission. All of a sample's criteria go to the engine as
one workload, as in a ``grade`` run; the judge loads once per process (engines are cached by
config in :func:`~autorubric_local.judges.engines.load_engine`) and one grade runs at a time
per process, in a worker thread, so Inspect's event loop keeps running.

The result is ``Score(value=score)`` with the completion as ``answer``, one explanation line per
criterion (name, verdict, the judge's probability of it) and the per-criterion verdicts, label
probabilities and off-label mass in ``metadata``. When every judgment failed the score is
``Score.unscored(reason="grader_failed")``; when every criterion abstains (CANNOT_ASSESS or an
NA option), ``Score.unscored(reason="grader_abstained")``: NaN, which Inspect's metrics and
reducers skip. Imports ``inspect_ai`` (the ``[inspect]`` extra).
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import EnsembleCriterionReport, EnsembleEvaluationReport
from autorubric_local.core.rubric import Rubric
from autorubric_local.core.types import Criterion
from autorubric_local.graders.criterion_grader import CriterionGrader, JudgeSpec
from autorubric_local.judges.config import LLMConfig

RubricSource = Rubric | str | os.PathLike[str] | Sequence[Mapping[str, Any] | Criterion]
"""A :class:`Rubric`, a YAML/JSON rubric file, or a list of criteria (dicts or ``Criterion``)."""

_GRADING = threading.Lock()
"""One grade at a time per process: scorers of one eval (and samples Inspect scores
concurrently) may share one loaded engine, which is not safe to call from two threads."""


def load_criteria(rubric: RubricSource) -> list[Criterion]:
    """The criteria of ``rubric`` (see :data:`RubricSource`).

    Raises
    ------
    InputError
        If the file is missing or malformed, or the list holds something other than criteria.
    """
    if isinstance(rubric, Rubric):
        criteria = list(rubric.rubric)
    elif isinstance(rubric, str | os.PathLike):
        criteria = list(Rubric.from_file(Path(rubric)).rubric)
    elif all(isinstance(c, Criterion) for c in rubric):
        criteria = [c for c in rubric if isinstance(c, Criterion)]
    elif all(isinstance(c, Mapping) for c in rubric):
        criteria = list(Rubric.from_dict([dict(c) for c in rubric if isinstance(c, Mapping)]).rubric)
    else:
        raise InputError("rubric_scorer: rubric must be a Rubric, a rubric file or a list of criteria "
                         "(all dicts or all Criterion objects)")
    if not criteria:
        raise InputError("rubric_scorer: rubric has no criteria")
    return criteria


@scorer(metrics=[mean(), stderr()], name="rubric_scorer")
def rubric_scorer(
    rubric: RubricSource,
    model: str | LLMConfig = "smollm2-135m-instruct",
    judges: Sequence[JudgeSpec] | None = None,
    mode: Literal["score", "explain"] = "score",
    use_target: bool = True,
    **grader_options: Any,
) -> Scorer:
    """An Inspect scorer that grades each sample's completion against ``rubric``.

    Parameters
    ----------
    rubric : Rubric, path or list of dict
        The rubric (:data:`RubricSource`); loaded and validated once, here.
    model : str or LLMConfig, default "smollm2-135m-instruct"
        The judge: a preset name, a model folder, a ``.gguf`` file or a cached Hugging Face id
        (``LLMConfig(model=...)``), or a whole ``LLMConfig``. Ignored when ``judges`` is given.
    judges : list of JudgeSpec, optional
        An ensemble instead of one judge.
    mode : "score" or "explain", default "score"
        ``CriterionGrader``'s mode: verdicts from label probabilities (no text generated), or
        with a grammar-constrained explanation per judgment.
    use_target : bool, default True
        Pass the sample's target text, where it is not empty, as the reference submission.
    **grader_options
        Further ``CriterionGrader`` arguments (``seed``, ``cannot_assess_config``,
        ``normalize``, ``length_penalty``, ``system_prompt`` ...), validated by it.

    Returns
    -------
    Scorer
        ``Score.value`` is the item score (in [0, 1] with ``normalize=True``), ``answer`` the
        completion, ``explanation`` one ``name: VERDICT (p=...)`` line per criterion, and
        ``metadata`` holds ``criteria`` (per criterion: ``name``, ``verdict``,
        ``probability``, ``label_probabilities``, ``off_label_mass``, ``error``, ``votes``),
        ``raw_score``, ``judge_scores`` and ``error``. ``Score.unscored`` (NaN) with reason
        ``"grader_failed"`` when every judgment failed, ``"grader_abstained"`` when every
        criterion abstains.

    Raises
    ------
    InputError
        If the rubric or a grader option is invalid (when the task is built, not per sample).

    Examples
    --------
    >>> from inspect_ai import Task                                     # doctest: +SKIP
    >>> from autorubric_local.inspect import rubric_scorer              # doctest: +SKIP
    >>> Task(dataset=..., scorer=rubric_scorer("rubric.yaml"))          # doctest: +SKIP
    """
    criteria = load_criteria(rubric)
    if judges is not None:
        grader = CriterionGrader(judges=judges, mode=mode, **grader_options)
    else:
        config = model if isinstance(model, LLMConfig) else LLMConfig(model=model)
        grader = CriterionGrader(config, mode=mode, **grader_options)

    def grade(completion: str, query: str | None, reference: str | None) -> EnsembleEvaluationReport:
        with _GRADING:
            return grader.grade_inputs([(completion, criteria, query, reference, "")])[0].report

    async def score(state: TaskState, target: Target) -> Score:
        completion = state.output.completion
        reference = target.text if use_target and target.text else None
        report = await asyncio.to_thread(grade, completion, state.input_text or None, reference)
        return score_of(report, completion)

    return score


def score_of(report: EnsembleEvaluationReport, completion: str) -> Score:
    """The Inspect ``Score`` of one graded completion (the one place it is built)."""
    criteria = report.report or []
    rows = [_criterion_row(index, c) for index, c in enumerate(criteria)]
    explanation = "\n".join(
        f"{row['name']}: {row['verdict']}"
        + (f" (p={row['probability']:.3f})" if row["probability"] is not None else "")
        + (f" [error: {row['error']}]" if row["error"] else "")
        for row in rows
    )
    metadata = {
        "criteria": rows,
        "raw_score": report.raw_score,
        "judge_scores": dict(report.judge_scores),
        "error": report.error,
    }
    if report.score is None or (criteria and all(c.is_error for c in criteria)):
        return Score.unscored(reason="grader_failed", answer=completion,
                              explanation=report.error or explanation, metadata=metadata)
    if criteria and all(c.is_na or c.is_error for c in criteria):
        return Score.unscored(reason="grader_abstained", answer=completion, explanation=explanation,
                              metadata=metadata)
    return Score(value=report.score, answer=completion, explanation=explanation, metadata=metadata)


def _criterion_row(index: int, report: EnsembleCriterionReport) -> dict[str, Any]:
    """One criterion's verdict, its probability, label probabilities and off-label mass (JSON-able)."""
    if report.final_verdict is not None:
        verdict: str | None = report.final_verdict.value
    elif report.final_multi_choice_verdict is not None:
        verdict = report.final_multi_choice_verdict.selected_label or "NA"
    else:
        verdict = None
    probabilities = report.label_probabilities
    votes: list[dict[str, Any]] = [
        {"judge_id": v.judge_id, "label_probabilities": v.label_probabilities,
         "off_label_mass": v.off_label_mass, "error": v.error}
        for v in [*report.votes, *report.multi_choice_votes]
    ]
    masses = [v["off_label_mass"] for v in votes if v["off_label_mass"] is not None]
    probability = _probability_of(verdict, probabilities)
    return {
        "name": report.criterion.name or f"criterion {index + 1}",
        "verdict": verdict,
        "probability": probability,
        "label_probabilities": probabilities,
        "off_label_mass": sum(masses) / len(masses) if masses else None,
        "weight": report.criterion.weight,
        "error": report.error,
        "votes": votes,
    }


def _probability_of(verdict: str | None, probabilities: dict[str, float] | None) -> float | None:
    """The judges' probability of the final verdict (distributions are keyed by verdict or option label)."""
    if verdict is None or not probabilities or verdict not in probabilities:
        return None
    value = float(probabilities[verdict])
    return None if math.isnan(value) else value
