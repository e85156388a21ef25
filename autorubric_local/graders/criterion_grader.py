"""``CriterionGrader``: AutoRubric's grader, on local judges and a batched engine.

One grade, or a whole batch of items (:meth:`CriterionGrader.grade_batch`), is planned up
front (:mod:`.planning`), sent to each judge's engine as one workload (:mod:`.execution`), and
assembled into ``EnsembleEvaluationReport`` objects (:mod:`.assembly`), scored by the one
scorer (:mod:`autorubric_local.scoring`).
"""

from __future__ import annotations

import asyncio
import secrets
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from autorubric_local.config import LLMConfig
from autorubric_local.engine.base import Engine
from autorubric_local.errors import InputError
from autorubric_local.graders.assembly import evaluation_report, single_judge_criterion_report
from autorubric_local.graders.execution import JudgeMode, JudgmentResult, run_tasks
from autorubric_local.graders.planning import GradeItem, JudgmentTask, plan_tasks
from autorubric_local.loading import load_engine
from autorubric_local.penalty import LengthPenalty, ToGradeInput, normalize_to_grade_input
from autorubric_local.reports import EnsembleEvaluationReport
from autorubric_local.types import (
    AggregationStrategy,
    CannotAssessConfig,
    Criterion,
    NominalAggregation,
    OrdinalAggregation,
)


@dataclass(frozen=True)
class JudgeSpec:
    """One judge of an ensemble: ``JudgeSpec(LLMConfig(...), "judge-id", weight=1.0)``."""

    llm_config: LLMConfig
    judge_id: str
    weight: float = 1.0


@dataclass(frozen=True)
class GradedItem:
    """A graded item with the raw judgment results behind its report (for storage)."""

    item: GradeItem
    report: EnsembleEvaluationReport
    results: tuple[JudgmentResult, ...]


ProgressCallback = Callable[[int], None]


class CriterionGrader:
    """Grades a submission criterion by criterion with local judges.

    Parameters
    ----------
    llm_config : LLMConfig, optional
        The single judge (an ensemble of one). Give this or ``judges``.
    judges : list of JudgeSpec, optional
        Several judges. Only a single judge is supported so far; more raise ``InputError``.
    system_prompt : str, optional
        Replaces the default judge system prompt.
    shuffle_options : bool, default True
        Present multi-choice options in a seeded random order (mapped back to original indices,
        recorded as ``shuffle_order``).
    seed : int, optional
        Seed of the option shuffles; generated (and kept in ``self.seed``) when None.
    cannot_assess_config : CannotAssessConfig, optional
        How CANNOT_ASSESS / NA verdicts count (default SKIP).
    normalize : bool, default True
        Scores in [0, 1]; False gives raw weighted sums.
    length_penalty : LengthPenalty, optional
        Subtracted from the score after grading.
    aggregation, ordinal_aggregation, nominal_aggregation
        Ensemble aggregation strategies (validated; used once ensembles land).
    mode : "score" or "explain", default "score"
        ``score``: verdicts from label probabilities, no text generated (fast). ``explain``:
        also a grammar-constrained explanation per judgment.
    explanation_first : bool, default False
        In explain mode, write the explanation before the verdict (reasoning first) and read
        the verdict distribution after it. Also implied by ``LLMConfig.thinking``.
    auto_na_option : bool, default False
        Give every multi-choice criterion an NA option the judge may pick.
    """

    def __init__(
        self,
        llm_config: LLMConfig | None = None,
        *,
        judges: Sequence[JudgeSpec] | None = None,
        system_prompt: str | None = None,
        shuffle_options: bool = True,
        seed: int | None = None,
        cannot_assess_config: CannotAssessConfig | None = None,
        normalize: bool = True,
        length_penalty: LengthPenalty | None = None,
        aggregation: AggregationStrategy = "majority",
        ordinal_aggregation: OrdinalAggregation = "mean",
        nominal_aggregation: NominalAggregation = "mode",
        mode: Literal["score", "explain"] = "score",
        explanation_first: bool = False,
        auto_na_option: bool = False,
    ) -> None:
        if (llm_config is None) == (judges is None):
            raise InputError("CriterionGrader: give exactly one of llm_config or judges")
        self.judges: tuple[JudgeSpec, ...] = (
            (JudgeSpec(llm_config, llm_config.model),) if llm_config is not None else tuple(judges or ())
        )
        if not self.judges:
            raise InputError("CriterionGrader: judges must not be empty")
        if len(self.judges) > 1:
            raise InputError(
                f"CriterionGrader: {len(self.judges)} judges given; ensembles of several judges "
                "are not supported yet (single judge only)"
            )
        if len({j.judge_id for j in self.judges}) != len(self.judges):
            raise InputError("CriterionGrader: judge_id values must be unique")
        self.system_prompt = system_prompt
        self.shuffle_options = shuffle_options
        self.seed = seed if seed is not None else secrets.randbelow(2**31)
        self.cannot_assess_config = cannot_assess_config or CannotAssessConfig()
        self.normalize = normalize
        self.length_penalty = length_penalty
        self.aggregation = aggregation
        self.ordinal_aggregation = ordinal_aggregation
        self.nominal_aggregation = nominal_aggregation
        try:
            self.mode = JudgeMode(mode)
        except ValueError:
            raise InputError(f"CriterionGrader: mode must be 'score' or 'explain', got {mode!r}") from None
        self.explanation_first = explanation_first
        self.auto_na_option = auto_na_option
        self._engines: dict[str, Engine] = {}

    # ------------------------------------------------------------------ engines
    def engine_for(self, judge: JudgeSpec) -> Engine:
        """The judge's engine, loaded on first use (``LLMConfig.engine`` if given)."""
        engine = self._engines.get(judge.judge_id)
        if engine is None:
            engine = load_engine(judge.llm_config)
            self._engines[judge.judge_id] = engine
        return engine

    def _reasoning_first(self, judge: JudgeSpec) -> bool:
        return judge.llm_config.thinking_budget > 0 or (
            self.mode is JudgeMode.EXPLAIN and self.explanation_first
        )

    # ------------------------------------------------------------------ grading
    async def grade(
        self,
        to_grade: ToGradeInput,
        rubric: list[Criterion],
        query: str | None = None,
        reference_submission: str | None = None,
    ) -> EnsembleEvaluationReport:
        """Grade one submission (AutoRubric's signature); runs the engine in a worker thread."""
        graded = await asyncio.to_thread(
            self.grade_inputs, [(to_grade, list(rubric), query, reference_submission, "")]
        )
        return graded[0].report

    def grade_inputs(
        self,
        inputs: Sequence[tuple[ToGradeInput, list[Criterion], str | None, str | None, str]],
        progress: ProgressCallback | None = None,
    ) -> list[GradedItem]:
        """Grade ``(to_grade, rubric, query, reference_submission, item_id)`` tuples in one pass."""
        normalized = [normalize_to_grade_input(entry[0]) for entry in inputs]
        items = [
            GradeItem(
                submission=graded.get("output", ""),
                rubric=tuple(rubric),
                query=query,
                reference_submission=reference,
                item_id=item_id,
            )
            for graded, (_, rubric, query, reference, item_id) in zip(normalized, inputs)
        ]
        return self.grade_batch(items, graded_inputs=normalized, progress=progress)

    def plan(self, items: Sequence[GradeItem]) -> list[JudgmentTask]:
        """Every judgment task of ``items`` (pure; loads the judges' engines for their templates)."""
        judges = [(j.judge_id, self.engine_for(j).format_chat) for j in self.judges]
        return plan_tasks(
            items,
            judges,
            system_prompt=self.system_prompt,
            shuffle_options=self.shuffle_options,
            seed=self.seed,
            auto_na_option=self.auto_na_option,
        )

    def grade_batch(
        self,
        items: Sequence[GradeItem],
        *,
        graded_inputs: Sequence[Any] | None = None,
        progress: ProgressCallback | None = None,
    ) -> list[GradedItem]:
        """Grade many items as one engine workload per judge; reports in item order.

        ``progress`` is called with the number of judgments finished after each engine pass.
        """
        for index, item in enumerate(items):
            if not item.rubric:
                raise InputError(f"item {index} ({item.item_id or 'no id'}): field 'rubric': no criteria")
        tasks = self.plan(items)
        results: dict[tuple[int, int, int], JudgmentResult] = {}
        by_judge: dict[int, list[JudgmentTask]] = defaultdict(list)
        for task in tasks:
            by_judge[task.judge_index].append(task)
        for judge_index, judge_tasks in by_judge.items():
            judge = self.judges[judge_index]
            outcome = run_tasks(
                self.engine_for(judge),
                judge_tasks,
                mode=self.mode,
                reasoning_first=self._reasoning_first(judge),
                explanation_tokens=max(judge.llm_config.thinking_budget, judge.llm_config.explanation_budget),
            )
            for result in outcome:
                t = result.task
                results[(t.item_index, t.criterion_index, t.judge_index)] = result
            if progress is not None:
                progress(len(judge_tasks))
        graded: list[GradedItem] = []
        judge = self.judges[0]
        for item_index, item in enumerate(items):
            item_results = [results[(item_index, c, 0)] for c in range(len(item.rubric))]
            criteria = [single_judge_criterion_report(r, judge.judge_id, judge.weight) for r in item_results]
            graded_input = (
                graded_inputs[item_index] if graded_inputs is not None else {"thinking": "", "output": item.submission}
            )
            report = evaluation_report(
                criteria,
                item_results,
                [judge.judge_id],
                cannot_assess=self.cannot_assess_config,
                normalize=self.normalize,
                length_penalty=self.length_penalty,
                graded_input=graded_input,
            )
            graded.append(GradedItem(item, report, tuple(item_results)))
        return graded
