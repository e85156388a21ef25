"""``EscalationConfig``: which judges take over in a confidence cascade, and when (issue 53).

AutoRubric 1.6.1's ``autorubric.graders.EscalationConfig`` (``docs/cookbook/cascade-grading.md``,
``docs/api/decision-models.md``). A cascade's first stage judges every criterion; a criterion is
*escalated* when the first stage's vote failed, abstained (``CANNOT_ASSESS`` or an NA option) or
has a ``confidence`` below the criterion's threshold (:meth:`EscalationConfig.threshold_for`);
the escalation judges' votes alone then decide it, the first stage's vote kept as superseded,
never used as a fallback. Here the first stage is any judge whose votes carry label
probabilities (a local judge of any backend), so ``confidence`` is read from them
(:attr:`~autorubric_local.core.reports.JudgeVote.confidence`).

Replay and calibration of a cascade from two runs are built
(:mod:`autorubric_local.cascades`); a live cascade (``CriterionGrader(escalation=...)``) is not
yet, and is refused with that reason.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from autorubric_local.core.errors import InputError
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.judges.config import LLMConfig

__all__ = ["EscalationConfig", "check_threshold"]


def check_threshold(value: object, what: str) -> float:
    """``value`` as a threshold: a real number in [0, 1] (not a boolean).

    Raises
    ------
    InputError
        Naming ``what`` and the value.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)) \
            or not 0.0 <= float(value) <= 1.0:
        raise InputError(f"{what} must be a number in [0, 1]; got {value!r}")
    return float(value)


@dataclass(frozen=True, init=False)
class EscalationConfig:
    """A confidence cascade's escalation judges and thresholds (AutoRubric's API).

    Parameters
    ----------
    judges : LLMConfig or sequence of JudgeSpec
        The escalation judges; a bare ``LLMConfig`` becomes ``[JudgeSpec(config, "escalation")]``.
    threshold : float in [0, 1]
        A criterion is escalated when the first stage's confidence is below it: ``0.0``
        escalates only failures and abstentions, ``1.0`` everything short of certainty.
    per_criterion : mapping of str to float in [0, 1], optional
        Thresholds for particular criteria by name (copied); others use ``threshold``.

    Raises
    ------
    InputError
        No judges, a judge that is not a ``JudgeSpec``, a threshold outside [0, 1] or not a
        number, or a ``per_criterion`` key that is not a string.
    """

    judges: list[JudgeSpec]
    threshold: float
    per_criterion: Mapping[str, float] | None = None

    def __init__(self, judges: LLMConfig | Sequence[JudgeSpec], threshold: float,
                 per_criterion: Mapping[str, float] | None = None) -> None:
        specs = [JudgeSpec(judges, "escalation")] if isinstance(judges, LLMConfig) else list(judges)
        if not specs:
            raise InputError("EscalationConfig: judges must name at least one judge")
        for spec in specs:
            if not isinstance(spec, JudgeSpec):
                raise InputError(f"EscalationConfig: judges must be JudgeSpec (or one LLMConfig), got "
                                 f"{type(spec).__name__}")
        object.__setattr__(self, "judges", specs)
        object.__setattr__(self, "threshold", check_threshold(threshold, "EscalationConfig: threshold"))
        if per_criterion is not None:
            if not isinstance(per_criterion, Mapping):
                raise InputError("EscalationConfig: per_criterion must map criterion names to thresholds")
            checked = {}
            for name, value in per_criterion.items():
                if not isinstance(name, str):
                    raise InputError(f"EscalationConfig: per_criterion keys are criterion names, got {name!r}")
                checked[name] = check_threshold(value, f"EscalationConfig: per_criterion[{name!r}]")
            per_criterion = checked
        object.__setattr__(self, "per_criterion", per_criterion)

    def threshold_for(self, name: str | None) -> float:
        """The threshold of the criterion named ``name`` (``per_criterion``'s, else ``threshold``)."""
        if name is not None and self.per_criterion is not None and name in self.per_criterion:
            return self.per_criterion[name]
        return self.threshold
