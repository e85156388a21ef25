"""Criterion, option, verdict and judgment types.

These are the inputs of grading (what a rubric is made of) and the small verdict values a
judge produces. Result containers (``CriterionReport``, ``EvaluationReport`` and the
ensemble reports) live in :mod:`autorubric_local.core.reports`; scoring lives in
:mod:`autorubric_local.core.scoring`.

Names, fields, defaults and validation messages follow the AutoRubric API reference
(pages "Core Grading" and
"Multi-Choice"). Extensions are marked as such in the docstrings.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationInfo,
    field_validator,
    model_validator,
)

from autorubric_local.core.checks import MAX_WEIGHT, check_json_object, check_number

__all__ = [
    "CANONICAL_NA_OPTION",
    "STRATEGIES_BY_SCALE",
    "AggregatedMultiChoiceVerdict",
    "AggregationStrategy",
    "CannotAssessConfig",
    "CannotAssessStrategy",
    "Criterion",
    "CriterionJudgment",
    "CriterionOption",
    "CriterionVerdict",
    "MultiChoiceJudgment",
    "MultiChoiceVerdict",
    "NominalAggregation",
    "OrdinalAggregation",
    "ScaleType",
]

ScaleType = Literal["ordinal", "nominal"]
"""Scale of a multi-choice criterion: ``"ordinal"`` options are ordered (a 1-4 rating),
``"nominal"`` options are unordered categories ("too few", "too many", "just right")."""

AggregationStrategy = Literal["majority", "weighted", "unanimous", "any"]
"""How an ensemble combines binary votes: ``majority`` (more than half vote MET),
``weighted`` (judge weights), ``unanimous`` (every judge votes MET), ``any`` (one MET
suffices). Head-count or equal-weight ties resolve to the score-minimising verdict: UNMET
for weight >= 0, MET for weight < 0."""

OrdinalAggregation = Literal["mean", "median", "weighted_mean", "mode", "min", "max"]
"""How an ensemble combines votes on an ordinal criterion. ``mean``/``median``/
``weighted_mean`` snap the central value to the nearest option; ``mode`` takes the most
frequent option; ``min``/``max`` take the lowest/highest-valued option any judge chose.
Mode ties and equidistant snaps resolve through :meth:`Criterion.worst_option_among`."""

LLMCalls = Literal["per_criterion", "per_item"]
"""AutoRubric's ``CriterionGrader(llm_calls=...)``: one judge call per criterion (the default,
and the only one built here) or one per item for the whole rubric (``"per_item"``, AutoRubric's
single-call grading, ``docs/cookbook/single-call-grading.md``; refused here with the reason)."""

NominalAggregation = Literal["mode", "weighted_mode", "unanimous"]
"""How an ensemble combines votes on a nominal criterion. ``mode`` is the majority option,
``weighted_mode`` weighs votes by judge weight, ``unanimous`` requires agreement and
otherwise abstains through the criterion's NA option (falling back to ``mode``, with a
warning, when there is none). Ties resolve through :meth:`Criterion.worst_option_among`."""


STRATEGIES_BY_SCALE: dict[str, tuple[str, ...]] = {
    "binary": get_args(AggregationStrategy),
    "ordinal": get_args(OrdinalAggregation),
    "nominal": get_args(NominalAggregation),
}
"""The ensemble aggregation strategies valid for each kind of criterion."""


def _finite_number(value: Any, low: float, high: float) -> Any:
    """Refuse booleans, NaN, infinities and numbers outside ``[low, high]`` (strings are left
    to pydantic, which parses numeric text and names the field when it cannot)."""
    if isinstance(value, str):
        return value
    return check_number(value, None, low, high)  # pydantic puts the field in front


def _check_finite_after(value: float, low: float, high: float) -> float:
    """The same range check on a number pydantic parsed from text (``"nan"``, ``"1e400"``)."""
    return check_number(value, None, low, high)


def _non_empty(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or only white space")
    return value


class CriterionOption(BaseModel):
    """One option of a multi-choice criterion.

    Attributes
    ----------
    label : str
        Text shown to the judge, not empty after stripping white space. Labels are unique
        within a criterion (see :class:`Criterion`).
    value : float
        Score contribution in [0, 1] when this option is selected. Required for scored
        options; an NA option may omit it (it then defaults to 0.0, and it is never used
        for scoring). Always a finite number (an NA option's within +-1e6); never a boolean.
    na : bool
        True for a "not applicable" option, treated like binary CANNOT_ASSESS. Must be a
        real boolean (``"yes"`` or ``1`` is refused).

    Raises
    ------
    pydantic.ValidationError
        If a non-NA option's value lies outside [0, 1]
        ("Option value must be in [0, 1], got <value>"), a value is not a finite number,
        the label is empty, ``na`` is not a boolean, or a field is unknown.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str
    value: float
    na: StrictBool = False

    @field_validator("label")
    @classmethod
    def _check_label(cls, value: str) -> str:
        return _non_empty(value)

    @field_validator("value", mode="before")
    @classmethod
    def _check_value_type(cls, value: Any) -> Any:
        return _finite_number(value, -MAX_WEIGHT, MAX_WEIGHT)

    @field_validator("value")
    @classmethod
    def _check_value_finite(cls, value: float) -> float:
        return _check_finite_after(value, -MAX_WEIGHT, MAX_WEIGHT)

    @model_validator(mode="before")
    @classmethod
    def _default_na_value(cls, data: Any) -> Any:
        # AutoRubric's own NA example (API reference, "Multi-Choice", "NA Options") gives no value for an
        # NA option; its value is never scored, so let it default to 0.0 instead of failing.
        if isinstance(data, dict) and data.get("na") is True and "value" not in data:
            return {**data, "value": 0.0}
        return data

    @model_validator(mode="after")
    def _check_value_range(self) -> CriterionOption:
        if not self.na and not (0.0 <= self.value <= 1.0):
            raise ValueError(f"Option value must be in [0, 1], got {self.value}")
        return self


CANONICAL_NA_OPTION = CriterionOption(label="Cannot assess / not applicable", value=0.0, na=True)
"""The abstain option appended by :meth:`Criterion.with_guaranteed_na_option`: the
multi-choice analogue of binary CANNOT_ASSESS (``na=True``; its value is never scored)."""


def _normalise_label(label: str) -> str:
    """Label key used for lookups and the uniqueness check: stripped and lower-cased."""
    return label.strip().lower()


def _check_unique_labels(options: Sequence[CriterionOption]) -> None:
    """Raise ``ValueError`` if two option labels coincide after strip/lower-casing."""
    seen: dict[str, int] = {}
    for i, option in enumerate(options):
        key = _normalise_label(option.label)
        if key in seen:
            j = seen[key]
            raise ValueError(
                f"Duplicate option label {option.label!r} at index {i} (same as "
                f"{options[j].label!r} at index {j}); option labels must be unique "
                f"ignoring case and surrounding whitespace"
            )
        seen[key] = i


class Criterion(BaseModel):
    """A single weighted criterion: binary (MET/UNMET) or multi-choice.

    Attributes
    ----------
    weight : float
        Scoring weight, default 10.0. Positive for desired traits, negative for errors
        and penalties.
    requirement : str
        What the criterion checks.
    name : str or None
        Optional short identifier used in reports.
    options : list of CriterionOption or None
        ``None`` for a binary criterion; the option list for a multi-choice one.
    scale_type : {"ordinal", "nominal"}
        Scale of a multi-choice criterion; selects the ensemble aggregation family.
    aggregation : str or None
        Per-criterion override of the grader's aggregation strategy; checked here against
        the criterion's kind (:data:`STRATEGIES_BY_SCALE`).
    metadata : dict or None
        Extension: free-form JSON-able data about the criterion (author, source, tags). Kept
        and written back by the loaders; never shown to the judge or used in scoring.

    Raises
    ------
    pydantic.ValidationError
        With "Multi-choice criterion must have at least 2 options" or "Must have at least
        2 non-NA options" (AutoRubric's API reference, "Core Grading"), or, extensions of this
        package: two option labels equal after strip/lower-casing (labels key lookups and probability maps); a weight
        that is a boolean, not finite, or beyond +-1e6; an empty requirement; an
        aggregation strategy unknown or not valid for the criterion's kind; metadata that is
        not a JSON-able mapping; an unknown field.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    weight: float = 10.0
    requirement: str
    name: str | None = None
    options: list[CriterionOption] | None = None
    scale_type: ScaleType = "ordinal"
    aggregation: str | None = None
    metadata: dict[str, Any] | None = None

    @field_validator("weight", mode="before")
    @classmethod
    def _check_weight_type(cls, value: Any) -> Any:
        return _finite_number(value, -MAX_WEIGHT, MAX_WEIGHT)

    @field_validator("weight")
    @classmethod
    def _check_weight_finite(cls, value: float) -> float:
        return _check_finite_after(value, -MAX_WEIGHT, MAX_WEIGHT)

    @field_validator("requirement")
    @classmethod
    def _check_requirement(cls, value: str) -> str:
        return _non_empty(value)

    @field_validator("aggregation")
    @classmethod
    def _check_aggregation(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None or "options" not in info.data or "scale_type" not in info.data:
            return value  # an invalid options/scale_type field is reported on its own
        kind = "binary" if info.data["options"] is None else info.data["scale_type"]
        allowed = STRATEGIES_BY_SCALE[kind]
        if value not in allowed:
            raise ValueError(
                f"{value!r} is not a strategy for a {kind} criterion "
                f"(allowed: {', '.join(allowed)})"
            )
        return value

    @field_validator("metadata", mode="before")
    @classmethod
    def _check_metadata(cls, value: Any) -> Any:
        if value is None:
            return None
        return check_json_object(value, None)  # pydantic puts the field in front

    @model_validator(mode="after")
    def _check_options(self) -> Criterion:
        if self.options is not None:
            if len(self.options) < 2:
                raise ValueError("Multi-choice criterion must have at least 2 options")
            if sum(1 for option in self.options if not option.na) < 2:
                raise ValueError("Must have at least 2 non-NA options")
            _check_unique_labels(self.options)
        return self

    @property
    def is_binary(self) -> bool:
        """True when the criterion has no options (MET/UNMET/CANNOT_ASSESS)."""
        return self.options is None

    @property
    def is_multi_choice(self) -> bool:
        """True when the criterion has options."""
        return self.options is not None

    @property
    def na_option_index(self) -> int | None:
        """Index of the first NA option; ``None`` if there is none or the criterion is binary."""
        for i, option in enumerate(self.options or ()):
            if option.na:
                return i
        return None

    def _require_options(self, what: str) -> list[CriterionOption]:
        if self.options is None:
            raise ValueError(f"Binary criterion has no {what}")
        return self.options

    def get_option_value(self, index: int) -> float:
        """Score value of the option at zero-based ``index``.

        Raises
        ------
        ValueError
            If the criterion is binary or ``index`` is outside ``[0, len(options))``.
        """
        options = self._require_options("options")
        if not 0 <= index < len(options):
            raise ValueError(f"Option index {index} out of range [0, {len(options)})")
        return options[index].value

    def find_option_by_label(self, label: str) -> int:
        """Zero-based index of the option whose label matches ``label``.

        Matching ignores case and surrounding whitespace.

        Raises
        ------
        ValueError
            If the criterion is binary or no option matches (the message lists the labels).
        """
        options = self._require_options("options")
        key = _normalise_label(label)
        for i, option in enumerate(options):
            if _normalise_label(option.label) == key:
                return i
        available = [option.label for option in options]
        raise ValueError(f"Label '{label}' not found. Available: {available}")

    def worst_option_among(self, candidate_indices: Iterable[int]) -> int:
        """The score-minimising option index among ``candidate_indices``.

        For weight >= 0 the worst option has the lowest value; for weight < 0 the highest
        (it subtracts the most). Value ties go to the lowest index whatever the order of
        ``candidate_indices``. This is the single tie-break rule for scoring, error
        handling and ensemble aggregation (AutoRubric's API reference, "Core Grading", ``worst_option_among``).

        Raises
        ------
        ValueError
            If the criterion is binary or ``candidate_indices`` is empty.
        """
        options = self._require_options("scored options")
        candidates = list(candidate_indices)
        if not candidates:
            raise ValueError("No candidate options to choose among")
        if self.weight < 0:
            return min(candidates, key=lambda i: (-options[i].value, i))
        return min(candidates, key=lambda i: (options[i].value, i))

    def worst_scored_option(self) -> tuple[int, CriterionOption]:
        """``(index, option)`` of the score-minimising non-NA option.

        The multi-choice analogue of UNMET (positive weight) or MET (negative weight);
        NA options are never chosen. Ties go to the lowest index.

        Raises
        ------
        ValueError
            If the criterion is binary or (defensively) has no non-NA option.
        """
        options = self._require_options("scored options")
        scored = [i for i, option in enumerate(options) if not option.na]
        if not scored:
            raise ValueError("Criterion has no non-NA option")
        index = self.worst_option_among(scored)
        return index, options[index]

    def with_guaranteed_na_option(self) -> Criterion:
        """This criterion, or a copy with :data:`CANONICAL_NA_OPTION` appended.

        Returns ``self`` when an NA option already exists; otherwise a copy whose options
        end with the canonical NA option, so indices ``0..N-1`` keep their meaning. Pure:
        the grader and the metrics can both rebuild the same effective option set.

        Raises
        ------
        ValueError
            If the criterion is binary, or if a non-NA option already uses the canonical
            NA label (the copy would have duplicate labels).
        """
        options = self._require_options("options")
        if self.na_option_index is not None:
            return self
        extended = [*options, CANONICAL_NA_OPTION]
        _check_unique_labels(extended)
        return self.model_copy(update={"options": extended})


class CaseInsensitiveEnum(StrEnum):
    """A string enum whose lookup ignores case and surrounding white space (``" Skip "``);
    ``str()`` and f-strings give the value, as AutoRubric prints it."""

    @classmethod
    def _missing_(cls, value: object) -> CaseInsensitiveEnum | None:
        if isinstance(value, str):
            lowered = value.strip().lower()
            for member in cls:
                if member.value == lowered:
                    return member
        return None


class CriterionVerdict(StrEnum):
    """Binary verdict: MET, UNMET, or CANNOT_ASSESS (insufficient evidence).

    ``str(CriterionVerdict.MET)`` and ``f"{verdict}"`` give ``"MET"``, as in AutoRubric.
    """

    MET = "MET"
    UNMET = "UNMET"
    CANNOT_ASSESS = "CANNOT_ASSESS"


class MultiChoiceVerdict(BaseModel):
    """The option selected on a multi-choice criterion.

    Attributes
    ----------
    selected_index : int or None
        Zero-based index into the criterion's original options (stable, for metrics).
        ``None`` only for an abstain synthesised after a failure on a criterion with no
        NA option (``na`` is then True).
    selected_label : str or None
        Label of the selected option; ``None`` in the same case as ``selected_index``.
    value : float
        Score value of the selected option, in [0, 1].
    na : bool
        True when the selection is an abstain (NA option).
    """

    model_config = ConfigDict(frozen=True)

    selected_index: int | None = None
    selected_label: str | None = None
    value: float
    na: bool = False


class AggregatedMultiChoiceVerdict(MultiChoiceVerdict):
    """An ensemble's multi-choice verdict.

    Attributes
    ----------
    aggregated_value : float
        The continuous aggregate (e.g. the mean of the judges' values) before snapping to
        the nearest option; equals ``value`` for mode-style aggregation. ``selected_index``
        and ``value`` describe the snapped option.
    """

    aggregated_value: float


class CriterionJudgment(BaseModel):
    """A judge's structured answer for a binary criterion.

    Holds only what the judge produces; weight and requirement come from the rubric.
    ``explanation`` is the brief justification; ``reasoning`` the optional thinking trace
    it was distilled from.
    """

    model_config = ConfigDict(frozen=True)

    criterion_status: CriterionVerdict = Field(
        description="MET if the submission satisfies the criterion, UNMET if it does not, "
        "CANNOT_ASSESS if there is not enough information to decide"
    )
    explanation: str = Field(description="A short justification of the verdict")
    reasoning: str | None = Field(
        default=None, description="Thinking trace, present only when thinking is enabled"
    )


class MultiChoiceJudgment(BaseModel):
    """A judge's structured answer for a multi-choice criterion.

    ``selected_option`` is 1-indexed in the order the options were shown to the judge;
    the grader maps it back to a zero-based index into the original options.
    """

    model_config = ConfigDict(frozen=True)

    selected_option: int = Field(description="Number of the chosen option (1, 2, 3, ...)")
    explanation: str = Field(description="A short justification of the chosen option")
    reasoning: str | None = Field(
        default=None, description="Thinking trace, present only when thinking is enabled"
    )


class CannotAssessStrategy(CaseInsensitiveEnum):
    """How scoring treats CANNOT_ASSESS (binary) and NA (multi-choice) verdicts.

    - SKIP: drop the criterion from numerator and denominator (default).
    - ZERO: contribute 0, stay in the denominator.
    - PARTIAL: contribute ``partial_credit * weight`` for positive weight, 0 otherwise.
    - FAIL: contribute the worst case: UNMET (0) for positive weight, MET (the full
      negative weight) for negative weight; for multi-choice, the value of
      :meth:`Criterion.worst_scored_option` times the weight.

    Lookup by value is case-insensitive: ``CannotAssessStrategy("SKIP")`` is ``SKIP``.
    """

    SKIP = "skip"
    ZERO = "zero"
    PARTIAL = "partial"
    FAIL = "fail"



class CannotAssessConfig(BaseModel):
    """Scoring settings for CANNOT_ASSESS / NA verdicts.

    Attributes
    ----------
    strategy : CannotAssessStrategy
        Default ``SKIP``.
    partial_credit : float
        Fraction of the weight awarded under ``PARTIAL``, in [0, 1]; default 0.5.

    Raises
    ------
    pydantic.ValidationError
        If ``partial_credit`` is outside [0, 1] or not a finite number.
    """

    model_config = ConfigDict(frozen=True)

    strategy: CannotAssessStrategy = CannotAssessStrategy.SKIP
    partial_credit: float = 0.5

    @field_validator("partial_credit")
    @classmethod
    def _check_partial_credit(cls, value: float) -> float:
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"partial_credit must be in [0, 1], got {value}")
        return value
