"""autorubric-local: AutoRubric's rubric grading, on local open-weights judges.

Change ``from autorubric import ...`` to ``from autorubric_local import ...`` and point
``LLMConfig(model=...)`` at a local model (a preset name, a Hugging Face folder or a GGUF file).
"""

from autorubric_local.config import LLMConfig, ThinkingLevel, ThinkingLevelLiteral, ThinkingParam
from autorubric_local.dataset import DataItem, RubricDataset
from autorubric_local.engine import Engine, ScriptedEngine
from autorubric_local.errors import AutorubricError, EngineError, InputError, ModelNotFoundError
from autorubric_local.graders import CriterionGrader, Grader, JudgeSpec
from autorubric_local.graders.few_shot import FewShotConfig, FewShotExample
from autorubric_local.judges_file import JudgesFile, load_judges_file
from autorubric_local.penalty import (
    CountFn,
    LengthPenalty,
    PenaltyType,
    ThinkingOutputDict,
    ToGradeInput,
    compute_length_penalty,
    normalize_to_grade_input,
    parse_thinking_output,
    word_count,
)
from autorubric_local.reports import (
    CriterionReport,
    EnsembleCriterionReport,
    EnsembleEvaluationReport,
    EvaluationReport,
    JudgeVote,
    MultiChoiceJudgeVote,
    TokenUsage,
)
from autorubric_local.rubric import Rubric
from autorubric_local.types import (
    AggregatedMultiChoiceVerdict,
    AggregationStrategy,
    CannotAssessConfig,
    CannotAssessStrategy,
    Criterion,
    CriterionJudgment,
    CriterionOption,
    CriterionVerdict,
    MultiChoiceJudgment,
    MultiChoiceVerdict,
    NominalAggregation,
    OrdinalAggregation,
    ScaleType,
)
from autorubric_local.usage import (
    aggregate_completion_cost,
    aggregate_evaluation_usage,
    aggregate_token_usage,
)

__all__ = [
    "AggregatedMultiChoiceVerdict",
    "AggregationStrategy",
    "AutorubricError",
    "CannotAssessConfig",
    "CannotAssessStrategy",
    "CountFn",
    "Criterion",
    "CriterionGrader",
    "CriterionJudgment",
    "CriterionOption",
    "CriterionReport",
    "CriterionVerdict",
    "DataItem",
    "Engine",
    "EngineError",
    "EnsembleCriterionReport",
    "EnsembleEvaluationReport",
    "EvaluationReport",
    "FewShotConfig",
    "FewShotExample",
    "Grader",
    "InputError",
    "JudgeSpec",
    "JudgeVote",
    "JudgesFile",
    "LLMConfig",
    "LengthPenalty",
    "ModelNotFoundError",
    "MultiChoiceJudgeVote",
    "MultiChoiceJudgment",
    "MultiChoiceVerdict",
    "NominalAggregation",
    "OrdinalAggregation",
    "PenaltyType",
    "Rubric",
    "RubricDataset",
    "ScaleType",
    "ScriptedEngine",
    "ThinkingLevel",
    "ThinkingLevelLiteral",
    "ThinkingOutputDict",
    "ThinkingParam",
    "ToGradeInput",
    "TokenUsage",
    "aggregate_completion_cost",
    "aggregate_evaluation_usage",
    "aggregate_token_usage",
    "compute_length_penalty",
    "load_judges_file",
    "normalize_to_grade_input",
    "parse_thinking_output",
    "word_count",
]
