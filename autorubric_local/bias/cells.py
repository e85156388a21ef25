"""The values of a position-bias sweep: its settings, variants and per-judge cells.

A :class:`SweepCell` is one (item, criterion, judge, variant) with its rotations' results and
Grade Scores; :mod:`.sweep` makes them and :mod:`.aggregate` summarises them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from autorubric_local.bias.grade_score import GradeScores
from autorubric_local.bias.unrelated import UnrelatedOption
from autorubric_local.core.errors import InputError
from autorubric_local.core.types import Criterion
from autorubric_local.graders.execution import JudgmentResult

if TYPE_CHECKING:
    from autorubric_local.engine.requests import FormatChat
    from autorubric_local.graders.planning import JudgmentTask

__all__ = ["OwnRotations", "SweepCell", "SweepKind", "SweepSettings", "Variant", "criterion_label"]


def criterion_label(criterion: Criterion, index: int) -> str:
    """What a sweep calls criterion ``index`` (0-based) of a rubric: its name, or
    ``criterion <index + 1>`` (the name its results carry, and what ``criteria`` selects by)."""
    return criterion.name or f"criterion {index + 1}"


class SweepKind(str, Enum):
    """``rubric``: multi-choice criteria of a rubric; ``selection``: pick the best candidate;
    ``comparison``: two systems' responses in both slot orders (items that plan their own
    rotations, :class:`OwnRotations`; :mod:`autorubric_local.comparisons.judging`)."""

    RUBRIC = "rubric"
    SELECTION = "selection"
    COMPARISON = "comparison"


class Variant(str, Enum):
    """``base``: the criterion's own options; ``unrelated``: plus one unrelated option."""

    BASE = "base"
    UNRELATED = "unrelated"


@runtime_checkable
class OwnRotations(Protocol):
    """An item of a ``comparison`` sweep: it plans its own rotations and says what of it a
    stored sweep's content hash covers. Rooms above this one implement it (a comparison's pair
    of responses, :class:`autorubric_local.comparisons.prompts.PairItem`), so the sweep pipeline
    runs them without importing them."""

    def rotation_tasks(self, item_index: int, judge_id: str, format_chat: FormatChat,
                       system_prompt: str | None) -> list[JudgmentTask]:
        """This item's judgment tasks for one judge, every rotation of every question
        (``permutation_index`` the rotation); ``system_prompt`` None: the item's default."""
        ...

    def content(self) -> dict[str, Any]:
        """JSON-ready content the stored sweep's item hash covers, beyond its id, submission,
        query and reference."""
        ...


@dataclass(frozen=True)
class SweepSettings:
    """Validated, immutable settings of a sweep.

    Attributes
    ----------
    kind : SweepKind
    seed : int
        Seeds the base option order, the unrelated options and the bootstrap.
    shuffle_options : bool
        Rotate a seeded shuffle of the options (True) or their original order (False).
    unrelated_option : bool
        Also sweep every criterion with an unrelated option added.
    system_prompt : str or None
        Replaces the default system prompt (of the rubric or the selection prompt).
    n_bootstrap : int, >= 0
        Bootstrap resamples for the confidence intervals (0: no intervals).
    confidence : float in (0, 1)
        Confidence level of the percentile bootstrap intervals.
    criteria : tuple of str or None
        Sweep only the multi-choice criteria of these names (:func:`criterion_label`), in the
        rubric's order whatever the order given; None: every multi-choice criterion. Rubric
        sweeps only. Part of the stored sweep's settings, so a sweep resumed with another set is
        refused (:func:`.checkpoint.check_sweep_resumable`).
    """

    kind: SweepKind = SweepKind.RUBRIC
    seed: int = 0
    shuffle_options: bool = True
    unrelated_option: bool = False
    system_prompt: str | None = None
    n_bootstrap: int = 1000
    confidence: float = 0.95
    criteria: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", SweepKind(self.kind))
        if self.n_bootstrap < 0:
            raise InputError(f"SweepSettings: n_bootstrap must be >= 0, got {self.n_bootstrap}")
        if not 0.0 < self.confidence < 1.0:
            raise InputError(f"SweepSettings: confidence must be in (0, 1), got {self.confidence}")
        if self.criteria is not None:
            if isinstance(self.criteria, str):
                raise InputError(f"SweepSettings: criteria must be a sequence of names, got the string "
                                 f"{self.criteria!r}")
            names = tuple(self.criteria)
            if not names or not all(isinstance(n, str) and n for n in names):
                raise InputError(f"SweepSettings: criteria must name at least one criterion (non-empty strings; "
                                 f"None sweeps every one), got {self.criteria!r}")
            object.__setattr__(self, "criteria", tuple(dict.fromkeys(names)))
            if self.kind is not SweepKind.RUBRIC:
                raise InputError(f"SweepSettings: criteria selects criteria of a rubric sweep, not of a "
                                 f"{self.kind.value} sweep")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready settings (stored with the sweep). ``criteria`` appears only when set, so
        the content hash of a sweep over every criterion is the one it had before the field
        existed (such sweeps stay resumable)."""
        out = {**dataclasses.asdict(self), "kind": self.kind.value}
        if self.criteria is None:
            del out["criteria"]
        else:
            out["criteria"] = list(self.criteria)
        return out


@dataclass(frozen=True)
class SweepCell:
    """One (item, criterion, judge, variant): its rotations' results and scores.

    Attributes
    ----------
    results : tuple of JudgmentResult
        In rotation order (``task.permutation_index`` 0..N-1).
    unrelated : UnrelatedOption or None
        The added option (original index ``N - 1``) in the ``unrelated`` variant.
    preferred : int or None
        Human-preferred original option (selection tasks).
    """

    item_index: int
    item_id: str
    criterion_index: int
    criterion: Criterion
    judge_id: str
    variant: Variant
    results: tuple[JudgmentResult, ...]
    scores: GradeScores
    unrelated: UnrelatedOption | None = None
    preferred: int | None = None

    @property
    def criterion_name(self) -> str:
        """The criterion's name, or ``criterion <1-based index>`` (:func:`criterion_label`)."""
        return criterion_label(self.criterion, self.criterion_index)

    @property
    def unrelated_index(self) -> int | None:
        """Original index of the unrelated option (the last one), if any."""
        return None if self.unrelated is None else self.scores.n_options - 1

    @property
    def unrelated_chosen(self) -> int | None:
        """Rotations in which the judge chose the unrelated option."""
        index = self.unrelated_index
        return None if index is None else self.scores.option_counts[index]

    @property
    def agreement(self) -> float | None:
        """Share of the valid rotations whose choice is the preferred option."""
        if self.preferred is None or self.scores.n_rotations == 0:
            return None
        return self.scores.option_counts[self.preferred] / self.scores.n_rotations

    @property
    def expected_agreement(self) -> float | None:
        """Mean probability given to the preferred option over the valid rotations."""
        if self.preferred is None or not self.scores.option_profile:
            return None
        return self.scores.option_profile[self.preferred]
