"""Confidence cascades (AutoRubric 1.6.1's ``autorubric.escalation``): replayed, measured and
calibrated offline from a run of the first stage and a run of the escalation judges
(:mod:`.replay`). The live cascade, in memory, is ``CriterionGrader(escalation=...)``; both
merge reports with the rules of :mod:`autorubric_local.graders.escalation`."""

from autorubric_local.cascades.replay import (
    DEFAULT_THRESHOLDS,
    EscalationCurve,
    EscalationPoint,
    calibrate_escalation,
    escalates,
    escalation_stats,
    replay_escalation,
)

__all__ = ["DEFAULT_THRESHOLDS", "EscalationCurve", "EscalationPoint", "calibrate_escalation", "escalates",
           "escalation_stats", "replay_escalation"]
