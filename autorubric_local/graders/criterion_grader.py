"""``CriterionGrader``: AutoRubric's grader, on local judges and a batched engine.

One grade, or a whole batch of items (:meth:`CriterionGrader.grade_batch`), is planned up
front (:mod:`.planning`), sent to each judge's engine as one workload (:mod:`.execution`), and
assembled into ``EnsembleEvaluationReport`` objects (:mod:`.assembly`), scored by the one
scorer (:mod:`autorubric_local.core.scoring`).
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from autorubric_local.core.errors import InputError
from autorubric_local.core.penalty import (
    LengthPenalty,
    ToGradeInput,
    compute_length_penalty,
    normalize_to_grade_input,
)
from autorubric_local.core.reports import (
    EnsembleCriterionReport,
    EnsembleEvaluationReport,
    JudgeVote,
    MultiChoiceJudgeVote,
)
from autorubric_local.core.types import (
    AggregationStrategy,
    CannotAssessConfig,
    Criterion,
    LLMCalls,
    NominalAggregation,
    OrdinalAggregation,
)
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.engine.base import Engine, LabelScores, filled
from autorubric_local.engine.cached import with_request_settings
from autorubric_local.graders.aggregation import Strategies, check_criterion_override
from autorubric_local.graders.assembly import (
    binary_criterion_report,
    binary_vote,
    choice_criterion_report,
    combined_choice_vote,
    completion_cost,
    evaluation_report,
    judge_criterion_report,
    token_usage,
    with_reasoning,
)
from autorubric_local.graders.content_free import (
    CONTENT_FREE_ITEM,
    ContentFreePlan,
    ContextualPrior,
    calibrate,
    check_content_free_inputs,
    estimate_priors,
    plan_content_free,
)
from autorubric_local.graders.escalation import (
    EscalationConfig,
    cascade_report,
    escalated_criterion,
    escalated_indices,
)
from autorubric_local.graders.execution import (
    ENGINE_FAILURES,
    JudgeMode,
    JudgmentResult,
    from_scores,
    run_tasks,
    spent,
)
from autorubric_local.graders.few_shot import (
    FewShotConfig,
    check_training_text,
    render_examples,
    select_examples,
)
from autorubric_local.graders.overflow import (
    TruncatingJudge,
    can_truncate,
    fit_to_context,
)
from autorubric_local.graders.planning import (
    GradeItem,
    JudgmentTask,
    OptionPermutations,
    check_item_text,
    judgments_per_judge,
    plan_tasks,
)
from autorubric_local.graders.decision_stage import (
    DecisionClients,
    decision_engine_record,
    decision_judge_ids,
    decision_results,
    decision_vote,
    describe_decision_judge,
    refuse_decision_settings,
)
from autorubric_local.graders.judge_spec import JudgeSpec
from autorubric_local.graders.per_item import PerItemInput, per_item_parts, score_per_item
from autorubric_local.graders.prompts import PromptParts, render_item
from autorubric_local.judges.config import LLMConfig
from autorubric_local.judges.decision import DecisionModelConfig
from autorubric_local.judges.engines import load_engine, release_held, was_released
from autorubric_local.judges.memory import check_explicit_shares, with_memory_shares


@dataclass(frozen=True)
class GradedItem:
    """A graded item with the raw judgment results behind its report (for storage)."""

    item: GradeItem
    report: EnsembleEvaluationReport
    results: tuple[JudgmentResult, ...]


ProgressCallback = Callable[[int], None]


def _describe_penalty(penalty: LengthPenalty | None) -> dict[str, Any] | None:
    if penalty is None:
        return None
    count_fn = penalty.count_fn
    name = None if count_fn is None else f"{getattr(count_fn, '__module__', '')}.{getattr(count_fn, '__qualname__', repr(count_fn))}"
    return {**penalty.model_dump(mode="json", exclude={"count_fn"}), "count_fn": name}


def _describe_judge(judge: JudgeSpec) -> dict[str, Any]:
    if isinstance(judge.llm_config, DecisionModelConfig):
        return describe_decision_judge(judge)
    return {
        "judge_id": judge.judge_id,
        "weight": judge.weight,
        "system_prompt": judge.system_prompt,
        "llm_config": judge.llm_config.describe(),
        "engine": None if judge.llm_config.engine is None else type(judge.llm_config.engine).__name__,
    }


LLM_CALLS: tuple[str, ...] = get_args(LLMCalls)
"""AutoRubric's ``llm_calls`` values (:data:`~autorubric_local.core.types.LLMCalls`);
``"per_item"`` is built in score mode on local engines only (:mod:`.per_item`)."""

PER_ITEM_SUPPORTED = ("llm_calls='per_item' is supported in score mode (mode='score', no LLMConfig thinking) on "
                      "local engines (transformers, llama.cpp, vLLM, scripted), options in their own order, "
                      "in memory (grade / grade_inputs / grade_batch)")


def _llm_configs(judges: Sequence[JudgeSpec]) -> list[tuple[str, LLMConfig]]:
    """``(judge_id, llm_config)`` of the judges that are LLMs (not decision models)."""
    return [(j.judge_id, j.llm_config) for j in judges if isinstance(j.llm_config, LLMConfig)]


def _refuse_unbuilt(binary_response_format: type | None, multi_choice_response_format: type | None,
                    llm_calls: str) -> None:
    """AutoRubric parameters accepted at their defaults and refused otherwise, saying why."""
    for name, value in (("binary_response_format", binary_response_format),
                        ("multi_choice_response_format", multi_choice_response_format)):
        if value is not None:
            raise InputError(
                f"CriterionGrader: {name} is not supported: a local judge's answer is decoded under a grammar of "
                "the criterion's labels (and an explanation in explain mode) and its verdict read from their "
                "probabilities, so there is no response schema to replace; leave it None")
    if llm_calls not in LLM_CALLS:
        raise InputError(f"CriterionGrader: llm_calls must be one of {', '.join(LLM_CALLS)}, got {llm_calls!r}")


class CriterionGrader:
    """Grades a submission criterion by criterion with local judges.

    Engines load on first use and stay until :meth:`release_engines`; vLLM judges of different
    engines split the device memory (:mod:`autorubric_local.judges.memory`; set shares over
    1.0 in all are an ``InputError`` here).

    Parameters
    ----------
    llm_config : LLMConfig or DecisionModelConfig, optional
        The single judge (an ensemble of one). Give this or ``judges``. A decision model
        (:class:`~autorubric_local.judges.decision.DecisionModelConfig`, also as a ``JudgeSpec``'s
        config) grades each item with one request (:mod:`.decision_stage`), alone, beside LLM
        judges in an ensemble, or as a cascade's first stage. With one, ``contextual_calibration``,
        ``auto_na_option``, ``permutations="cyclic"`` and a decision model's
        ``JudgeSpec.system_prompt`` raise ``InputError``, and so do the LLM prompt settings
        (``mode="explain"``, few-shot examples, system prompts) when no judge, escalation judges
        included, is an LLM.
    judges : list of JudgeSpec, optional
        The ensemble. Each criterion's votes are combined by ``aggregation`` (binary),
        ``ordinal_aggregation`` or ``nominal_aggregation`` (:mod:`.aggregation`), or by the
        criterion's own ``aggregation``.
    system_prompt : str, optional
        Replaces the default judge system prompt.
    multi_choice_system_prompt : str, optional
        Replaces it for multi-choice criteria (AutoRubric's parameter); a judge's own
        ``JudgeSpec.system_prompt`` replaces both. Not with ``contextual_calibration`` yet.
    judge_model_config : LLMConfig, optional
        AutoRubric's name of ``llm_config``; give one of them. The judge's id is its model
        name here (AutoRubric's is ``"default"``).
    binary_response_format, multi_choice_response_format : None
        AutoRubric's response schemas; a local judge's answer is grammar-constrained to the
        labels, so any other value is an ``InputError``.
    escalation : EscalationConfig, optional
        AutoRubric's confidence cascade, in memory: this grader's one judge (exactly one, else
        ``InputError``) judges every criterion; the criteria it escalates (its vote failed,
        abstained, or its confidence is below ``escalation.threshold_for(name)``,
        :func:`.escalation.escalates`) are judged again by ``escalation.judges`` (a grader with
        these same settings, in one batch across items, each item with the sub-rubric of its
        escalated criteria), whose votes alone decide them: ``escalated=True``, the first stage's
        vote kept with ``superseded=True``, the item scored again (with the length penalty), as
        :func:`autorubric_local.cascades.replay_escalation` builds it from two runs. An
        escalation judge's ``judge_scores`` entry covers the criteria it judged. Multi-choice
        option shuffles of the second stage are seeded by the criterion's position in the full
        rubric (``GradeItem.criterion_positions``), as in a full run of the escalation judges.
        ``EvalRunner`` stores it as any run (both stages' judgments and the merged reports).
    llm_calls : "per_criterion" or "per_item", default "per_criterion"
        AutoRubric's calls per item. ``"per_item"``: one teacher-forced prompt per item and
        judge with the whole rubric (:func:`.per_item.score_per_item`), score mode on local
        engines only, in memory and in stored runs; multi-choice options are
        shown in their own order (``shuffle_options`` does not apply). With ``mode="explain"``,
        ``LLMConfig.thinking``, a hosted judge, few-shot examples, ``permutations="cyclic"``,
        ``auto_na_option``, ``contextual_calibration``, ``multi_choice_system_prompt`` or
        ``on_overflow="truncate"`` it is an ``InputError``.
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
        Ensemble aggregation strategies (validated up front; ``InputError`` names the field).
    training_data : RubricDataset, optional
        Labelled items to draw few-shot examples from (with ``few_shot_config``).
    few_shot_config : FewShotConfig, optional
        How many examples per criterion and how to choose them (:mod:`.few_shot`); the same
        examples are shown to every judge.
    permutations : "single" or "cyclic", default "single"
        ``cyclic`` (extension) judges each multi-choice criterion in every cyclic rotation of
        its options and votes with the argmax of the averaged label distributions: a
        position-debiased verdict at N times the criterion's suffix cost.
    mode : "score" or "explain", default "score"
        ``score``: verdicts from label probabilities, no text generated (fast). ``explain``:
        also a grammar-constrained explanation per judgment.
    explanation_first : bool, default True
        In explain mode, write the explanation before the verdict (reasoning first) and read
        the verdict distribution after it; False writes the verdict first (the verdict score mode
        gives) and then an explanation of it. Reasoning first is the default because its
        verdicts agree with humans better: on AutoRubric's essay set SmolLM2-135M's kappa was
        0.48 [0.23, 0.67] reasoning first against 0.22 [-0.16, 0.53] verdict first
        (``scripts/bench_validity.py``, docs/validity.md, "Verdicts that carry signal"). Ignored in score
        mode; implied by ``LLMConfig.thinking``.
    auto_na_option : bool, default False
        Give every multi-choice criterion an NA option the judge may pick.
    contextual_calibration : bool, default False
        Extension (Zhao et al. 2021, "Calibrate Before Use"): estimate each judge's label prior
        in every prompt context from content-free submissions judged in that same prompt, and
        read each verdict from the judge's distribution corrected by it
        (:mod:`.content_free`, :mod:`.contextual`). Votes keep the judge's own distribution in
        ``uncalibrated_label_probabilities``. Not with ``mode="explain"`` verdict first (its
        explanation would be written for the uncorrected verdict).
    content_free_inputs : sequence of str, optional
        The content-free submissions (default :data:`.contextual.CONTENT_FREE_INPUTS`:
        ``""``, ``"N/A"``, ``"[SUBMISSION]"``); only with ``contextual_calibration``.
    """

    def __init__(
        self,
        llm_config: LLMConfig | DecisionModelConfig | None = None,
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
        explanation_first: bool = True,
        auto_na_option: bool = False,
        training_data: RubricDataset | None = None,
        few_shot_config: FewShotConfig | None = None,
        permutations: Literal["single", "cyclic"] = "single",
        contextual_calibration: bool = False,
        content_free_inputs: Sequence[str] | None = None,
        judge_model_config: LLMConfig | DecisionModelConfig | None = None,
        multi_choice_system_prompt: str | None = None,
        binary_response_format: type | None = None,
        multi_choice_response_format: type | None = None,
        escalation: EscalationConfig | None = None,
        llm_calls: Literal["per_criterion", "per_item"] = "per_criterion",
    ) -> None:
        _refuse_unbuilt(binary_response_format, multi_choice_response_format, llm_calls)
        if judge_model_config is not None:
            if llm_config is not None:
                raise InputError("CriterionGrader: give judge_model_config or llm_config, not both "
                                 "(they are one parameter: AutoRubric's name and this package's)")
            llm_config = judge_model_config
        if (llm_config is None) == (judges is None):
            raise InputError("CriterionGrader: give exactly one of llm_config (judge_model_config) or judges")
        self.judges: tuple[JudgeSpec, ...] = (
            (JudgeSpec(llm_config, llm_config.model),) if llm_config is not None else tuple(judges or ())
        )
        if not self.judges:
            raise InputError("CriterionGrader: judges must not be empty")
        if len({j.judge_id for j in self.judges}) != len(self.judges):
            raise InputError("CriterionGrader: judge_id values must be unique")
        check_explicit_shares(_llm_configs(self.judges))
        self._decision_ids = frozenset(decision_judge_ids(self.judges))
        self._decision_clients = DecisionClients()
        self._load_configs: dict[str, LLMConfig] | None = None
        self.system_prompt = system_prompt
        self.multi_choice_system_prompt = multi_choice_system_prompt
        if contextual_calibration and multi_choice_system_prompt is not None:
            raise InputError("CriterionGrader: multi_choice_system_prompt does not work with contextual_calibration "
                             "yet (the content-free prompts are rendered with one system prompt per judge); "
                             "leave one of them unset")
        self.shuffle_options = shuffle_options
        self.seed_given = seed is not None
        self.seed = seed if seed is not None else secrets.randbelow(2**31)
        self.cannot_assess_config = cannot_assess_config or CannotAssessConfig()
        self.normalize = normalize
        self.length_penalty = length_penalty
        self.aggregation = aggregation
        self.ordinal_aggregation = ordinal_aggregation
        self.nominal_aggregation = nominal_aggregation
        self.strategies = Strategies(aggregation, ordinal_aggregation, nominal_aggregation)
        try:
            self.permutations = OptionPermutations(permutations)
        except ValueError:
            raise InputError(
                f"CriterionGrader: permutations must be 'single' or 'cyclic', got {permutations!r}"
            ) from None
        if (training_data is None) != (few_shot_config is None):
            raise InputError("CriterionGrader: give both training_data and few_shot_config, or neither")
        if training_data is not None:
            check_training_text(training_data)
        self.training_data = training_data
        self.few_shot_config = few_shot_config
        self._examples: dict[str, str] = {}
        try:
            self.mode = JudgeMode(mode)
        except ValueError:
            raise InputError(f"CriterionGrader: mode must be 'score' or 'explain', got {mode!r}") from None
        self.explanation_first = explanation_first
        self.auto_na_option = auto_na_option
        self._engines: dict[str, Engine] = {}
        self.contextual_calibration = contextual_calibration
        self.content_free_inputs = check_content_free_inputs(contextual_calibration, content_free_inputs)
        verdict_first = [j.judge_id for j in self.judges if not self._reasoning_first(j)]
        if contextual_calibration and self.mode is JudgeMode.EXPLAIN and verdict_first:
            raise InputError(
                "CriterionGrader: contextual_calibration does not work with mode='explain' and the verdict "
                f"first (judges {verdict_first}: the explanation is written for the uncorrected verdict); "
                "use mode='score', explanation_first=True or LLMConfig(thinking=...)"
            )
        self._priors: dict[str, ContextualPrior] = {}
        self.llm_calls = llm_calls
        escalating = escalation.judges if isinstance(escalation, EscalationConfig) else ()
        refuse_decision_settings(self.judges, (*self.judges, *escalating), {
            "contextual_calibration": contextual_calibration, "auto_na_option": auto_na_option,
            "permutations='cyclic'": self.permutations is not OptionPermutations.SINGLE,
        }, {"mode='explain'": self.mode is JudgeMode.EXPLAIN,
            "few-shot examples (training_data)": training_data is not None,
            "system_prompt": system_prompt is not None,
            "multi_choice_system_prompt": multi_choice_system_prompt is not None})
        if llm_calls == "per_item" and len(self._decision_ids) < len(self.judges):
            self._refuse_per_item()  # of the LLM judges: a decision model asks one request per item anyway
        self.escalation = escalation
        self.escalation_grader: CriterionGrader | None = None
        if escalation is not None:
            self.escalation_grader = self._escalation_stage(escalation)

    def _escalation_stage(self, escalation: EscalationConfig) -> CriterionGrader:
        """The grader of a cascade's second stage: this grader's settings, ``escalation.judges``.

        Raises
        ------
        InputError
            ``escalation`` is not an ``EscalationConfig``; this grader has more than one judge
            (the first stage is one judge, as in the replay); an escalation judge's id is a
            first-stage judge's; the two stages' vLLM memory shares add up to more than 1.0.
        """
        if not isinstance(escalation, EscalationConfig):
            raise InputError(f"CriterionGrader: escalation must be an EscalationConfig (or None), got "
                             f"{type(escalation).__name__}")
        if len(self.judges) != 1:
            raise InputError(f"CriterionGrader: escalation needs exactly one first-stage judge (the grader's own), got "
                             f"{len(self.judges)}: {[j.judge_id for j in self.judges]}; a cascade's first stage is "
                             "one judge whose confidence decides what is escalated")
        shared = sorted({j.judge_id for j in self.judges} & {j.judge_id for j in escalation.judges})
        if shared:
            raise InputError(f"CriterionGrader: escalation judge ids {shared} are also first-stage judge ids; give "
                             "the escalation judges their own judge_id (votes and judge_scores are keyed by it)")
        check_explicit_shares(_llm_configs((*self.judges, *escalation.judges)))
        return CriterionGrader(
            judges=escalation.judges, system_prompt=self.system_prompt, shuffle_options=self.shuffle_options,
            seed=self.seed, cannot_assess_config=self.cannot_assess_config, normalize=self.normalize,
            length_penalty=self.length_penalty, aggregation=self.aggregation,
            ordinal_aggregation=self.ordinal_aggregation, nominal_aggregation=self.nominal_aggregation,
            mode=self.mode.value, explanation_first=self.explanation_first, auto_na_option=self.auto_na_option,
            training_data=self.training_data, few_shot_config=self.few_shot_config,
            permutations=self.permutations.value, contextual_calibration=self.contextual_calibration,
            content_free_inputs=self.content_free_inputs if self.contextual_calibration else None,
            multi_choice_system_prompt=self.multi_choice_system_prompt, llm_calls=self.llm_calls)

    def _refuse_per_item(self) -> None:
        """``llm_calls="per_item"`` with a setting it is not built for: ``InputError`` naming it."""
        refused = []
        if self.mode is JudgeMode.EXPLAIN:
            refused.append("mode='explain' (explanations)")
        llm_judges = self._llm_judges()
        thinking = [j.judge_id for _, j in llm_judges if j.llm_config.thinking_budget > 0]
        if thinking:
            refused.append(f"LLMConfig thinking (judges {thinking})")
        hosted = [j.judge_id for _, j in llm_judges if j.llm_config.backend == "hosted"]
        if hosted:
            refused.append(f"hosted judges ({hosted})")
        if self.few_shot_config is not None:
            refused.append("few-shot examples (training_data, few_shot_config)")
        if self.permutations is not OptionPermutations.SINGLE:
            refused.append("permutations='cyclic'")
        if self.auto_na_option:
            refused.append("auto_na_option")
        if self.contextual_calibration:
            refused.append("contextual_calibration")
        if self.multi_choice_system_prompt is not None:
            refused.append("multi_choice_system_prompt")
        truncating = [j.judge_id for _, j in llm_judges if j.llm_config.on_overflow == "truncate"]
        if truncating:
            refused.append(f"on_overflow='truncate' (judges {truncating})")
        if refused:
            raise InputError(f"CriterionGrader: llm_calls='per_item' does not work with {', '.join(refused)} yet "
                             f"(issue 53); {PER_ITEM_SUPPORTED}. Use llm_calls='per_criterion' for the rest")

    def _llm_judges(self) -> list[tuple[int, JudgeSpec]]:
        """``(index, judge)`` of this grader's own judges that are LLMs (not decision models)."""
        return [(i, j) for i, j in enumerate(self.judges) if j.judge_id not in self._decision_ids]

    def _decided(self, items: Sequence[GradeItem], progress: ProgressCallback | None
                 ) -> dict[tuple[int, int, int], list[JudgmentResult]]:
        """The decision-model judges' results on ``items`` (:func:`.decision_stage.decision_results`)."""
        judges = [(i, j) for i, j in enumerate(self.judges) if j.judge_id in self._decision_ids]
        return decision_results(judges, self._decision_clients, items, progress) if judges else {}

    # ------------------------------------------------------------------ engines
    @property
    def all_judges(self) -> tuple[JudgeSpec, ...]:
        """Every judge this grader may load: its own, then a live cascade's escalation judges."""
        return (*self.judges, *(self.escalation_grader.judges if self.escalation_grader is not None else ()))

    def engine_for(self, judge: JudgeSpec) -> Engine:
        """The judge's engine, loaded on first use (``LLMConfig.engine`` if given) or again after
        :meth:`release_engines`; a vLLM judge with its memory share
        (:func:`~autorubric_local.judges.memory.with_memory_shares`, not in :meth:`describe`).
        An escalation judge's engine is the escalation grader's."""
        if self.escalation_grader is not None and all(j.judge_id != judge.judge_id for j in self.judges):
            return self.escalation_grader.engine_for(judge)
        engine = self._engines.get(judge.judge_id)
        if engine is None or was_released(engine):
            if self._load_configs is None:
                self._load_configs = self._memory_shares()
            engine = load_engine(self._load_configs[judge.judge_id])
            self._engines[judge.judge_id] = engine
        return engine

    def decision_record(self, judge: JudgeSpec) -> dict[str, Any]:
        """A decision-model judge's engine record for run records
        (:func:`.decision_stage.decision_engine_record`), its client built now (so a missing SDK
        or key fails before any item is graded). An escalation judge's is the escalation grader's.

        Raises
        ------
        InputError
            As :class:`~autorubric_local.judges.decision.DecisionModelJudge`.
        """
        if self.escalation_grader is not None and all(j.judge_id != judge.judge_id for j in self.judges):
            return self.escalation_grader.decision_record(judge)
        self._decision_clients.client(judge)
        return decision_engine_record(judge)

    def _memory_shares(self) -> dict[str, LLMConfig]:
        """Configs to load, vLLM memory split among both stages of a cascade (their engines
        are held together), given to the escalation grader too."""
        stages = [self.judges, *([self.escalation_grader.judges] if self.escalation_grader is not None else [])]
        configs = with_memory_shares([pair for judges in stages for pair in _llm_configs(judges)])
        if self.escalation_grader is not None and self.escalation_grader._load_configs is None:
            self.escalation_grader._load_configs = configs
        return configs

    def loaded_judges(self) -> frozenset[str]:
        """Ids of the judges whose engine this grader holds (loaded and not released), the
        escalation judges' included."""
        own = frozenset(judge_id for judge_id, engine in self._engines.items() if not was_released(engine))
        return own | (self.escalation_grader.loaded_judges() if self.escalation_grader is not None else frozenset())

    def release_engines(self, judge_ids: Sequence[str] | None = None) -> int:
        """Drop and release the engines of ``judge_ids`` (default: all judges, the escalation
        judges' included); returns how many left the process cache
        (:func:`~autorubric_local.judges.engines.release_held`)."""
        released = release_held(self._engines, judge_ids) + self._decision_clients.close(judge_ids)
        if self.escalation_grader is not None:
            released += self.escalation_grader.release_engines(judge_ids)
        return released

    def describe(self) -> dict[str, Any]:
        """Every setting that can change a verdict or a score, as JSON-able data (for run
        records and the content hash of a resumable run). Judges are described by their
        ``LLMConfig`` fields; a length penalty's ``count_fn`` by its qualified name."""
        return {
            "judges": [_describe_judge(j) for j in self.judges],
            # Only when set, so the content hash of runs without it is what it always was.
            **({"escalation": {"judges": [_describe_judge(j) for j in self.escalation.judges],
                               "threshold": self.escalation.threshold,
                               "per_criterion": None if self.escalation.per_criterion is None
                               else dict(sorted(self.escalation.per_criterion.items()))}}
               if self.escalation is not None else {}),
            "system_prompt": self.system_prompt,
            # Only when set, so the content hash of runs without it is what it always was.
            **({"multi_choice_system_prompt": self.multi_choice_system_prompt}
               if self.multi_choice_system_prompt is not None else {}),
            "shuffle_options": self.shuffle_options,
            "seed": self.seed,
            "permutations": self.permutations.value,
            "aggregation": self.aggregation,
            "ordinal_aggregation": self.ordinal_aggregation,
            "nominal_aggregation": self.nominal_aggregation,
            "mode": self.mode.value,
            # Only when per_item, so the content hash of per-criterion runs is what it always was.
            **({"llm_calls": self.llm_calls} if self.llm_calls != "per_criterion" else {}),
            # Only explain mode reads it; score-mode runs keep False, as before the default turned.
            "explanation_first": self.explanation_first and self.mode is JudgeMode.EXPLAIN,
            "auto_na_option": self.auto_na_option,
            # Only when on, so the content hash of runs without it is what it always was.
            **({"contextual_calibration": {"method": "zhao2021-diagonal",
                                           "content_free_inputs": list(self.content_free_inputs)}}
               if self.contextual_calibration else {}),
            # Scoring settings: they change every item score (not the verdicts).
            "normalize": self.normalize,
            "cannot_assess_config": self.cannot_assess_config.model_dump(mode="json"),
            "length_penalty": _describe_penalty(self.length_penalty),
            "few_shot": None
            if self.few_shot_config is None or self.training_data is None
            else {
                "config": self.few_shot_config.model_dump(mode="json"),
                "training_data_sha256": hashlib.sha256(self.training_data.to_json().encode()).hexdigest(),
            },
        }

    def _examples_for(self, criterion: Criterion) -> str:
        if self.training_data is None or self.few_shot_config is None:
            return ""
        key = criterion.model_dump_json()
        if key not in self._examples:
            chosen = select_examples(self.training_data, criterion, self.few_shot_config)
            self._examples[key] = render_examples(criterion, chosen)
        return self._examples[key]

    def _reasoning_first(self, judge: JudgeSpec) -> bool:
        if isinstance(judge.llm_config, DecisionModelConfig):
            return False
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
            for graded, (_, rubric, query, reference, item_id) in zip(normalized, inputs, strict=True)
        ]
        return self.grade_batch(items, graded_inputs=normalized, progress=progress)

    def judgment_count(self, item: GradeItem) -> int:
        """How many judgments grading ``item`` takes (criteria x judges x option orders)."""
        per_judge = judgments_per_judge(
            item.rubric, auto_na_option=self.auto_na_option, permutations=self.permutations
        )
        return per_judge * len(self.judges)

    def plan(self, items: Sequence[GradeItem], judge_indices: Sequence[int] | None = None) -> list[JudgmentTask]:
        """Every judgment task of ``items`` for every judge, or for the judges at
        ``judge_indices`` (pure; loads the judges' engines for their templates)."""
        chosen = list(range(len(self.judges))) if judge_indices is None else list(judge_indices)
        judges = [(j.judge_id, self.engine_for(j).format_chat, j.system_prompt) for j in (self.judges[i] for i in chosen)]
        tasks = plan_tasks(
            items,
            judges,
            system_prompt=self.system_prompt,
            shuffle_options=self.shuffle_options,
            seed=self.seed,
            auto_na_option=self.auto_na_option,
            permutations=self.permutations,
            examples=self._examples_for if self.few_shot_config is not None else None,
            multi_choice_system_prompt=self.multi_choice_system_prompt,
        )
        if judge_indices is None:
            return tasks
        return [replace(task, judge_index=chosen[task.judge_index]) for task in tasks]

    def grade_batch(
        self,
        items: Sequence[GradeItem],
        *,
        graded_inputs: Sequence[Any] | None = None,
        progress: ProgressCallback | None = None,
    ) -> list[GradedItem]:
        """Grade many items as one workload per engine; reports in item order.

        Judges that share an engine (same model loaded once) and judging mode share one
        workload. ``progress`` is called with the number of judgments finished after each
        engine pass.

        Raises
        ------
        InputError
            If an item has no criteria, a criterion's ``aggregation`` does not fit it, or an
            item's text is not valid Unicode or holds a reserved marker character; the
            runner then grades the batch's items one by one, so only that item fails.
        """
        for index, item in enumerate(items):
            where = f"item {item.item_id!r}" if item.item_id else f"item {index}"
            if not item.rubric:
                raise InputError(f"{where}: field 'rubric': no criteria")
            for c_index, criterion in enumerate(item.rubric):
                check_criterion_override(criterion, f"{where} criterion {c_index}")
            check_item_text(item, where)
        if self.escalation_grader is not None:
            return self._grade_cascade(items, graded_inputs, progress)
        return self._grade_checked(items, graded_inputs, progress)

    def _grade_cascade(
        self, items: Sequence[GradeItem], graded_inputs: Sequence[Any] | None, progress: ProgressCallback | None
    ) -> list[GradedItem]:
        """:meth:`grade_batch` of a live cascade: this grader's one judge judges every criterion;
        the criteria it escalates (:func:`.escalation.escalated_indices`) are judged again by the
        escalation grader, each item with the sub-rubric of its escalated criteria, all in one
        :meth:`grade_batch`; each report is merged as the replay merges
        (:func:`.escalation.escalated_criterion`, :func:`.escalation.cascade_report`), with this
        grader's length penalty. ``results`` holds both stages' judgments, the escalation
        judges' re-indexed to the full rubric and :attr:`all_judges` (:meth:`_merged`)."""
        assert self.escalation is not None and self.escalation_grader is not None
        first = self._grade_checked(items, graded_inputs, progress)
        chosen = [escalated_indices(entry.report.report or [], self.escalation.threshold_for,
                                    f"item {entry.item.item_id!r}" if entry.item.item_id else f"item {index}")
                  for index, entry in enumerate(first)]
        again = [index for index, indices in enumerate(chosen) if indices]
        if not again:
            return first
        sub_items = [replace(items[i], rubric=tuple(items[i].rubric[k] for k in chosen[i]),
                             criterion_positions=tuple(chosen[i])) for i in again]
        sub_inputs = None if graded_inputs is None else [graded_inputs[i] for i in again]
        second = dict(zip(again, self.escalation_grader.grade_batch(sub_items, graded_inputs=sub_inputs,
                                                                   progress=progress), strict=True))
        merged = list(first)
        for index, entry in second.items():
            merged[index] = self._merged(index, items[index], first[index], entry, chosen[index],
                                         graded_inputs[index] if graded_inputs is not None else None)
        return merged

    def _merged(self, index: int, item: GradeItem, first: GradedItem, second: GradedItem, chosen: Sequence[int],
                graded_input: Any) -> GradedItem:
        """One item's cascade report: criteria ``chosen`` decided by ``second``'s reports. The
        second stage's judgments are re-indexed as tasks of the whole batch: item ``index``, the
        criterion's position in the full rubric, the judge's in :attr:`all_judges` (so stored
        judgment rows name the right criterion and judge)."""
        decided = dict(zip(chosen, second.report.report or [], strict=True))
        reports = [escalated_criterion(report, decided[k]) if k in decided else report
                   for k, report in enumerate(first.report.report or [])]
        offset = len(self.judges)
        results = (*first.results, *(
            replace(r, task=replace(r.task, item_index=index, criterion_index=chosen[r.task.criterion_index],
                                    judge_index=offset + r.task.judge_index))
            for r in second.results))
        if graded_input is None:
            graded_input = {"thinking": "", "output": item.submission}
        penalty = compute_length_penalty(graded_input, self.length_penalty) if self.length_penalty else 0.0
        report = cascade_report(
            reports, self.cannot_assess_config, self.normalize, penalty=penalty,
            judge_scores={**first.report.judge_scores, **second.report.judge_scores},
            completion_cost=completion_cost(results), device_seconds=sum(r.seconds for r in results),
            token_usage=token_usage(results))
        if all(r.error is not None for r in reports):
            failures = [r.error for r in results if r.error is not None]
            report = report.model_copy(update={"score": None, "raw_score": None, "llm_raw_score": None,
                                               "error": f"all {len(results)} judgments of both stages failed; "
                                                        f"first: {failures[0] if failures else 'unknown'}"})
        report = report.model_copy(update={"input_truncated_tokens": first.report.input_truncated_tokens,
                                           "judged_submission": first.report.judged_submission})
        return GradedItem(first.item, report, results)

    def _grade_checked(
        self, items: Sequence[GradeItem], graded_inputs: Sequence[Any] | None, progress: ProgressCallback | None
    ) -> list[GradedItem]:
        """:meth:`grade_batch` of this grader's own judges, on checked ``items``."""
        if len(self._decision_ids) == len(self.judges):  # decision models only
            decided = self._decided(items, progress)
            return [self._assemble(item, index, decided, graded_inputs[index] if graded_inputs is not None
                                   else {"thinking": "", "output": item.submission})
                    for index, item in enumerate(items)]
        if self.llm_calls == "per_item":
            return self._grade_per_item(items, graded_inputs, progress)
        tasks, cuts = self._plan_fitting(items)
        content_free = self._plan_content_free(items, tasks)
        extra = content_free.all_tasks() if content_free is not None else []
        position = {id(task): index for index, task in enumerate(extra)}
        extra_results: list[JudgmentResult | None] = [None] * len(extra)
        results: dict[tuple[int, int, int], list[JudgmentResult]] = defaultdict(list)
        for workload in self._workloads([*tasks, *extra]):
            first = self.judges[workload[0].judge_index]
            outcome = run_tasks(
                with_request_settings(self.engine_for(first), first.llm_config),  # response cache, calls in flight
                workload,
                mode=self.mode,
                reasoning_first=self._reasoning_first(first),
                explanation_tokens=max(first.llm_config.thinking_budget, first.llm_config.explanation_budget),
                explanation_style=first.llm_config.explanation_kind,
            )
            for task, result in zip(workload, outcome, strict=True):
                if task.item_index == CONTENT_FREE_ITEM:
                    extra_results[position[id(task)]] = result
                    continue
                results[(task.item_index, task.criterion_index, task.judge_index)].append(result)
            if progress is not None:
                progress(sum(1 for task in workload if task.item_index != CONTENT_FREE_ITEM))
        if content_free is not None:
            self._calibrate(content_free, tasks, filled(extra_results, "content-free calibration judgments"), results)
        results.update(self._decided(items, progress))  # an ensemble's decision models, if any
        graded: list[GradedItem] = []
        for item_index, item in enumerate(items):
            graded_input = (
                graded_inputs[item_index] if graded_inputs is not None else {"thinking": "", "output": item.submission}
            )
            entry = self._assemble(item, item_index, results, graded_input)
            if item_index in cuts:
                removed, text = cuts[item_index]
                report = entry.report.model_copy(update={"input_truncated_tokens": removed, "judged_submission": text})
                entry = GradedItem(entry.item, report, entry.results)
            graded.append(entry)
        return graded

    def _grade_per_item(
        self, items: Sequence[GradeItem], graded_inputs: Sequence[Any] | None, progress: ProgressCallback | None
    ) -> list[GradedItem]:
        """:meth:`grade_batch` with ``llm_calls="per_item"``: each judge grades the items sharing
        a rubric with :func:`.per_item.score_per_item` (one engine call per criterion round),
        and each round's scores become an ordinary per-criterion :class:`JudgmentResult`
        (its task's prefix the item prompt with the whole rubric, its ``prompt_suffix`` the
        round's teacher-forced answer), assembled as per-criterion judgments are.

        Raises
        ------
        InputError
            If a judge's engine answers whole judgments (a hosted judge).
        """
        results: dict[tuple[int, int, int], list[JudgmentResult]] = defaultdict(list)
        by_rubric: dict[str, list[int]] = defaultdict(list)
        for index, item in enumerate(items):
            by_rubric["\x1e".join(c.model_dump_json() for c in item.rubric)].append(index)
        for j_index, judge in self._llm_judges():
            base = self.engine_for(judge)
            if base.capabilities.whole_judgment:
                raise InputError(f"CriterionGrader: judge {judge.judge_id!r} is hosted (its engine answers whole "
                                 f"judgments); {PER_ITEM_SUPPORTED}")
            engine = with_request_settings(base, judge.llm_config)
            system_prompt = judge.system_prompt if judge.system_prompt is not None else self.system_prompt
            for indices in by_rubric.values():
                criteria = list(items[indices[0]].rubric)
                inputs = [PerItemInput(items[i].submission, items[i].query, items[i].reference_submission)
                          for i in indices]
                try:
                    scores, requests = score_per_item(engine, inputs, criteria, system_prompt)
                except ENGINE_FAILURES as exc:
                    error = f"infrastructure: engine score call failed: {type(exc).__name__}: {exc}"
                    scores = [[LabelScores((), error=error) for _ in criteria] for _ in inputs]
                    requests = [[None for _ in criteria] for _ in inputs]
                for pos, item_index in enumerate(indices):
                    parts = per_item_parts(engine, inputs[pos], criteria, system_prompt)
                    for c_index, criterion in enumerate(criteria):
                        order = None if criterion.options is None else tuple(range(len(criterion.options)))
                        task = JudgmentTask(item_index, c_index, j_index, criterion, order, parts, ())
                        score, request = scores[pos][c_index], requests[pos][c_index]
                        result = replace(from_scores(task, score, None, False, spent(score)),
                                         prompt_suffix="" if request is None else request.suffix)
                        results[(item_index, c_index, j_index)].append(result)
                if progress is not None:
                    progress(len(indices) * len(criteria))
        results.update(self._decided(items, progress))  # an ensemble's decision models, if any
        graded: list[GradedItem] = []
        for item_index, item in enumerate(items):
            graded_input = (
                graded_inputs[item_index] if graded_inputs is not None else {"thinking": "", "output": item.submission}
            )
            graded.append(self._assemble(item, item_index, results, graded_input))
        return graded

    def _plan_content_free(self, items: Sequence[GradeItem], tasks: Sequence[JudgmentTask]) -> ContentFreePlan | None:
        """The content-free tasks of ``tasks`` whose priors are not known yet (None when
        contextual calibration is off)."""
        if not self.contextual_calibration:
            return None
        return plan_content_free(
            tasks, items, [j.judge_id for j in self.judges], self._render_prefix, self.content_free_inputs, self._priors
        )

    def _render_prefix(self, judge_index: int, submission: str, query: str | None, reference: str | None) -> PromptParts:
        """A judge's item prefix for ``submission``, rendered as :func:`.planning.plan_tasks` does."""
        judge = self.judges[judge_index]
        system_prompt = judge.system_prompt if judge.system_prompt is not None else self.system_prompt
        return render_item(self.engine_for(judge).format_chat, submission, query=query,
                           reference_submission=reference, system_prompt=system_prompt)

    def _calibrate(
        self,
        plan: ContentFreePlan,
        tasks: Sequence[JudgmentTask],
        content_free_results: Sequence[JudgmentResult],
        results: dict[tuple[int, int, int], list[JudgmentResult]],
    ) -> None:
        """Estimate the new priors and correct every result in ``results`` (in place). Priors
        that could be estimated are kept for later batches; failed ones are tried again."""
        judge_ids = [j.judge_id for j in self.judges]
        new = estimate_priors(plan, content_free_results, judge_ids, self.content_free_inputs)
        priors = {**self._priors, **new}
        self._priors.update({key: prior for key, prior in new.items() if prior.error is None})
        prior_of = {id(task): prior_id for task, prior_id in zip(tasks, plan.prior_ids, strict=True)}
        for key, judged in results.items():
            results[key] = [calibrate(result, priors[prior_of[id(result.task)]]) for result in judged]

    def _plan_fitting(self, items: Sequence[GradeItem]) -> tuple[list[JudgmentTask], dict[int, tuple[int, str]]]:
        """Plan ``items``. Judges with ``on_overflow="truncate"`` get overflowing submissions
        cut to fit the smallest of their contexts (planned again, twice at most:
        re-tokenised text can differ by a few tokens); the other judges read the items as
        they are. Returns the tasks and the cuts, ``{item index: (tokens cut, judged text)}``."""
        llm = self._llm_judges()  # an ensemble's decision models plan no prompts
        truncating = [
            TruncatingJudge(index, self.engine_for(judge), self._answer_reserve(judge), self._reasoning_first(judge))
            for index, judge in llm
            if judge.llm_config.on_overflow == "truncate" and can_truncate(self.engine_for(judge))
        ]
        if not truncating:
            return self.plan(items, None if len(llm) == len(self.judges) else [i for i, _ in llm]), {}
        cutting = [judge.judge_index for judge in truncating]
        others = [index for index, _ in llm if index not in cutting]
        judged, tasks = list(items), self.plan(items, cutting)
        cuts: dict[int, tuple[int, str]] = {}
        for _ in range(2):
            judged, new = fit_to_context(judged, tasks, truncating)
            if not new:
                break
            for index, (removed, text) in new.items():
                cuts[index] = (cuts.get(index, (0, ""))[0] + removed, text)
            tasks = self.plan(judged, cutting)
        return (tasks + self.plan(items, others) if others else tasks), cuts

    def _answer_reserve(self, judge: JudgeSpec) -> int:
        """Tokens a judge's answer needs after the prompt: labels and JSON, plus the
        explanation or reasoning budget when it writes one. Reasoning first, the verdict is
        read after the explanation's *text*, tokenized again, which can take more tokens than
        were generated (a non-canonical token sequence), so twice the budget is kept there
        (and the prompt is measured with the verdict's JSON scaffold, :mod:`.overflow`)."""
        reasoning_first = self._reasoning_first(judge)
        writes = self.mode is JudgeMode.EXPLAIN or reasoning_first
        budget = max(judge.llm_config.thinking_budget, judge.llm_config.explanation_budget) if writes else 0
        return (2 * budget if reasoning_first else budget) + 32

    def _workloads(self, tasks: Sequence[JudgmentTask]) -> list[list[JudgmentTask]]:
        """Tasks grouped by (engine, judging mode, budget, explanation style, request settings):
        one engine call sequence per group (judges of one engine with different
        ``cache_enabled``/``cache_dir``/``cache_ttl``/``max_parallel_requests`` are kept apart)."""
        groups: dict[tuple[Any, ...], list[JudgmentTask]] = defaultdict(list)
        for task in tasks:
            judge = self.judges[task.judge_index]
            config = judge.llm_config
            budget = max(config.thinking_budget, config.explanation_budget)
            requests = (config.cache_enabled, config.cache_dir, config.cache_ttl, config.max_parallel_requests)
            groups[(id(self.engine_for(judge)), self._reasoning_first(judge), budget, config.explanation_kind,
                    requests)].append(task)
        return list(groups.values())

    def _assemble(
        self,
        item: GradeItem,
        item_index: int,
        results: dict[tuple[int, int, int], list[JudgmentResult]],
        graded_input: Any,
    ) -> GradedItem:
        criteria: list[EnsembleCriterionReport] = []
        own = {j.judge_id: criteria if len(self.judges) == 1 else [] for j in self.judges}
        item_results: list[JudgmentResult] = []
        for c_index in range(len(item.rubric)):
            per_judge = [results[(item_index, c_index, j)] for j in range(len(self.judges))]
            criterion = per_judge[0][0].task.criterion
            strategy = self.strategies.for_criterion(criterion)
            votes = [self._vote(judge, judged) for judge, judged in zip(self.judges, per_judge, strict=True)]
            if criterion.is_binary:
                criteria.append(binary_criterion_report(criterion, votes, strategy))  # type: ignore[arg-type]
            else:
                criteria.append(choice_criterion_report(criterion, votes, strategy))  # type: ignore[arg-type]
            for judge, vote in zip(self.judges, votes, strict=True):
                if own[judge.judge_id] is not criteria:  # one judge: its reports are the ensemble's, made once
                    own[judge.judge_id].append(judge_criterion_report(criterion, vote, strategy))
            item_results.extend(r for judged in per_judge for r in judged)
        report = evaluation_report(
            criteria,
            item_results,
            own,
            cannot_assess=self.cannot_assess_config,
            normalize=self.normalize,
            length_penalty=self.length_penalty,
            graded_input=graded_input,
        )
        return GradedItem(item, report, tuple(item_results))

    @staticmethod
    def _vote(judge: JudgeSpec, judged: list[JudgmentResult]) -> JudgeVote | MultiChoiceJudgeVote:
        if isinstance(judge.llm_config, DecisionModelConfig):
            return decision_vote(judged[0], judge)
        vote = (binary_vote(judged[0], judge.judge_id, judge.weight) if judged[0].task.criterion.is_binary
                else combined_choice_vote(judged, judge.judge_id, judge.weight))
        # thinking: deliberation is the vote's reasoning, conclusion its reason (AutoRubric API ref., "Core Grading")
        return with_reasoning(vote) if judge.llm_config.thinking_budget > 0 else vote
