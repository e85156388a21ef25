"""Rubric evaluation with a meta-rubric: a judge grades the rubric itself (issue 53).

AutoRubric's ``evaluate_rubric_standalone`` / ``evaluate_rubric_in_context`` and their
meta-rubrics (``docs/cookbook/rubric-evaluation.md``, ``docs/api/meta.md``), here on local
judges. The rubric under review becomes the submission: an instruction, then the rubric as JSON,
each criterion with a 1-based ``index`` (and the rubric's guidelines first, when it has them),
and, in context, the task prompt beside it. A :class:`~autorubric_local.graders.CriterionGrader`
with the caller's judge grades that submission against the meta-rubric, exactly as it grades
any submission (constrained verdicts, label probabilities; the rubric's text is data in the
prompt, never instructions).

The meta-rubrics are our own (``autorubric_local/meta/data/``: criteria on one reading per
criterion, observable requirements, one thing each, overlap, weights, negative criteria,
size, options, double negatives, boilerplate; in context: coverage of the task, task-specific
criteria, penalised mistakes, off-task criteria), not AutoRubric's text.

Differences from AutoRubric 1.6.1: its meta-judge also names the ``affected_criteria`` of each
verdict (a structured field its hosted judges fill); a local judge answers the verdict only,
so the reports here have no such field (a verdict's ``reason`` names criteria in explain mode).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, Literal

from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import EnsembleEvaluationReport
from autorubric_local.core.rubric import Rubric
from autorubric_local.judges.config import LLMConfig

__all__ = ["DisplayMode", "evaluate_rubric_in_context", "evaluate_rubric_standalone", "get_in_context_meta_rubric",
           "get_standalone_meta_rubric"]

DATA = Path(__file__).resolve().parent / "data"
STANDALONE_PATH = DATA / "standalone.yaml"
IN_CONTEXT_PATH = DATA / "in_context.yaml"

DisplayMode = Literal["stdout", "html"]
"""How a result is shown as well as returned: printed as a table, or written as an HTML page."""

INSTRUCTION = ("The rubric below is what is being evaluated. Its criteria are numbered by their index field; "
               "judge the rubric as a whole against the requirement.\n\n")
GUIDELINES_NOTE = ('The rubric also has guidelines (its "guidelines" field): free text that applies to every '
                   "criterion; the criterion text governs and the guidelines clarify it.\n\n")


def get_standalone_meta_rubric() -> Rubric:
    """The meta-rubric for a rubric read on its own: 10 criteria, two of them negative
    (double negatives, generic boilerplate). A new :class:`Rubric` each call."""
    return Rubric.from_file(str(STANDALONE_PATH))


def get_in_context_meta_rubric() -> Rubric:
    """The meta-rubric for a rubric read with the task prompt it grades: 8 criteria, two of
    them negative (off-task criteria, double negatives). A new :class:`Rubric` each call."""
    return Rubric.from_file(str(IN_CONTEXT_PATH))


def rubric_for_review(rubric: Rubric) -> dict[str, Any]:
    """The rubric as the meta-judge reads it: ``{"criteria": [...]}``, each criterion's
    1-based ``index``, ``name``, ``weight``, ``requirement`` and (multi-choice) ``options``;
    the rubric's ``guidelines`` first when it has them."""
    criteria = [{"index": i + 1, "name": c.name, "weight": c.weight, "requirement": c.requirement,
                 **({"options": [o.model_dump(exclude_defaults=True) for o in c.options]} if c.options else {})}
                for i, c in enumerate(rubric.rubric)]
    return {"criteria": criteria} if rubric.guidelines is None else {"guidelines": rubric.guidelines,
                                                                        "criteria": criteria}


def submission_text(rubric: Rubric, task_prompt: str | None = None) -> str:
    """The meta-judge's submission: :data:`INSTRUCTION` (and :data:`GUIDELINES_NOTE` for a
    rubric with guidelines), then the rubric as indented JSON (with the task prompt in context)."""
    body: dict[str, Any] = rubric_for_review(rubric)
    if task_prompt is not None:
        body = {"task_prompt": task_prompt, "rubric": body}
    note = GUIDELINES_NOTE if rubric.guidelines is not None else ""
    return INSTRUCTION + note + json.dumps(body, indent=2, ensure_ascii=False)


async def evaluate_rubric_standalone(
    rubric: Rubric,
    llm_config: LLMConfig,
    *,
    display: DisplayMode | None = None,
    output_html_path: Path | str | None = None,
) -> EnsembleEvaluationReport:
    """Grade ``rubric`` against the standalone meta-rubric with the judge ``llm_config``.

    Parameters
    ----------
    rubric : Rubric
        The rubric under review (its guidelines, when it has them, are part of what is read).
    llm_config : LLMConfig
        The meta-judge: any local or hosted judge.
    display : {"stdout", "html"} or None, default None
        Also print the verdicts as a table, or write them as an HTML page.
    output_html_path : path, optional
        Where the page goes; required with ``display="html"``.

    Returns
    -------
    EnsembleEvaluationReport
        One report per meta-criterion (in the meta-rubric's order), ``score`` in [0, 1]
        (AutoRubric's normalised score) and ``raw_score``.

    Raises
    ------
    InputError
        ``display="html"`` without ``output_html_path``, or an unknown ``display``.
    """
    return await _evaluate(get_standalone_meta_rubric(), submission_text(rubric), llm_config, display,
                           output_html_path, "Standalone evaluation (the rubric on its own)")


async def evaluate_rubric_in_context(
    rubric: Rubric,
    task_prompt: str,
    llm_config: LLMConfig,
    *,
    display: DisplayMode | None = None,
    output_html_path: Path | str | None = None,
) -> EnsembleEvaluationReport:
    """Grade ``rubric``, with the ``task_prompt`` it is meant to grade, against the in-context
    meta-rubric. Parameters, return value and errors as :func:`evaluate_rubric_standalone`."""
    return await _evaluate(get_in_context_meta_rubric(), submission_text(rubric, task_prompt), llm_config, display,
                           output_html_path, "In-context evaluation (the rubric with its task prompt)")


async def _evaluate(meta: Rubric, submission: str, llm_config: LLMConfig, display: DisplayMode | None,
                    output_html_path: Path | str | None, title: str) -> EnsembleEvaluationReport:
    from autorubric_local.graders import CriterionGrader

    if display not in (None, "stdout", "html"):
        raise InputError(f"display: expected 'stdout', 'html' or None, got {display!r}")
    if display == "html" and output_html_path is None:
        raise InputError("output_html_path is required when display='html'")
    grader = CriterionGrader(llm_config=llm_config)
    result = await meta.grade(to_grade=submission, grader=grader)
    assert isinstance(result, EnsembleEvaluationReport)
    if display == "stdout":
        _print(result, title)
    elif display == "html":
        Path(output_html_path).write_text(_page(result, title), encoding="utf-8")  # type: ignore[arg-type]
    return result


def _rows(result: EnsembleEvaluationReport) -> list[tuple[str, float, str, str]]:
    """``(criterion name, weight, verdict, reason)`` of each meta-criterion."""
    rows = []
    for report in result.report or []:
        verdict = report.final_verdict.value if report.final_verdict is not None else "failed"
        rows.append((report.criterion.name or "", report.criterion.weight, verdict, report.final_reason or ""))
    return rows


def _print(result: EnsembleEvaluationReport, title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{title}: score {result.score:.2f}")
    for column in ("criterion", "weight", "verdict", "reason"):
        table.add_column(column)
    for name, weight, verdict, reason in _rows(result):
        table.add_row(name, f"{weight:g}", verdict, reason)
    Console(soft_wrap=True).print(table)  # piped: rows whole, not folded


def _page(result: EnsembleEvaluationReport, title: str) -> str:
    rows = "".join(f"<tr><td>{html.escape(n)}</td><td>{w:g}</td><td>{html.escape(v)}</td><td>{html.escape(r)}</td></tr>"
                   for n, w, v, r in _rows(result))
    return (f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title><h1>{html.escape(title)}</h1>"
            f"<p>score {result.score:.3f}</p><table><tr><th>criterion</th><th>weight</th><th>verdict</th>"
            f"<th>reason</th></tr>{rows}</table>")
