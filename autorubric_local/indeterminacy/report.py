"""The result of an indeterminacy analysis over one or several criteria, its tables and rows.

:class:`IndeterminacyReport` holds one :class:`.analysis.CriterionAnalysis` per criterion and
summarises them per judge as **means over criteria** (each criterion weighs the same, as the
spec pools rating tasks): forced-choice agreement, and per ``beta`` (and ``tau``) the
multi-label MSE, decision consistency ``C^tau``, estimation bias ``B^tau`` and each agreement
metric's mean regret. :meth:`IndeterminacyReport.rows` flattens it to one row per figure for
SQLite.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from autorubric_local.indeterminacy.analysis import (
    AGREEMENT_METRICS,
    AnalysisSettings,
    CriterionAnalysis,
)
from autorubric_local.indeterminacy.elicitation import ElicitationSettings

__all__ = ["IndeterminacyReport", "IndeterminacySettings"]

METRIC_TITLES = {"hit_rate": "hit rate", "kappa": "kappa", "kl": "KL(H->J)", "jsd": "JSD", "mse": "MSE (multi-label)"}


class IndeterminacySettings(BaseModel):
    """Every setting of an analysis, stored with it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    analysis: AnalysisSettings = Field(default_factory=AnalysisSettings)
    elicitation: ElicitationSettings = Field(default_factory=ElicitationSettings)
    positive: str | dict[str, str] | None = None
    criteria: list[str] | None = None


def _mean(values: Sequence[float | None]) -> float | None:
    defined = [v for v in values if v is not None]
    return float(np.mean(defined)) if defined else None


def _fmt(value: float | None, width: int = 8, digits: int = 3) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.{digits}f}"


class IndeterminacyReport(BaseModel):
    """An analysis of one or several criteria of one or several graded runs.

    Attributes
    ----------
    sources : list of str
        The runs analysed (where each came from).
    settings : IndeterminacySettings
    criteria : list of CriterionAnalysis
    warnings : list of str
        What was left out and why.
    """

    model_config = ConfigDict(frozen=True)

    sources: list[str]
    settings: IndeterminacySettings
    criteria: list[CriterionAnalysis]
    warnings: list[str] = Field(default_factory=list)

    @property
    def judges(self) -> list[str]:
        """Judge names in first-seen order."""
        seen: dict[str, None] = {}
        for c in self.criteria:
            for a in c.agreement:
                seen.setdefault(a.judge)
        return list(seen)

    @property
    def betas(self) -> list[float]:
        """The betas analysed (one, 0, when every criterion had human response sets)."""
        return sorted({row.beta for c in self.criteria for row in c.downstream})

    @property
    def taus(self) -> list[float]:
        """The thresholds analysed."""
        return sorted({row.tau for c in self.criteria for row in c.downstream})

    def mean_agreement(self, judge: str, metric: str) -> float | None:
        """Mean over criteria of a forced-choice figure (``hit_rate``, ``kappa``, ``kl``, ``jsd``,
        ``beta_hat``, ``positive_rate``, ``set_size``) of ``judge``."""
        return _mean([getattr(a, metric) for c in self.criteria for a in c.agreement if a.judge == judge])

    def mean_downstream(self, judge: str, metric: str, beta: float, tau: float) -> float | None:
        """Mean over criteria of ``mse``, ``consistency``, ``bias`` or ``abs_bias`` at ``beta``, ``tau``."""
        values = []
        for c in self.criteria:
            for row in c.downstream:
                if row.judge == judge and np.isclose(row.beta, beta) and np.isclose(row.tau, tau):
                    values.append(abs(row.bias) if metric == "abs_bias" else getattr(row, metric))
        return _mean(values)

    def mean_regret(self, metric: str, beta: float, tau: float, kind: str = "consistency") -> float | None:
        """Mean over criteria of the regret (``kind``: ``consistency`` or ``bias``) of choosing
        a judge by ``metric`` at ``beta`` and ``tau``."""
        return _mean([getattr(s, f"regret_{kind}") for c in self.criteria for s in c.selections
                      if s.metric == metric and np.isclose(s.beta, beta) and np.isclose(s.tau, tau)])

    def choices(self, metric: str, beta: float, tau: float) -> Counter[str]:
        """How many criteria each judge is chosen on by ``metric`` at ``beta`` and ``tau``."""
        return Counter(s.chosen for c in self.criteria for s in c.selections
                       if s.metric == metric and np.isclose(s.beta, beta) and np.isclose(s.tau, tau))

    def rows(self) -> list[dict[str, Any]]:
        """One row per figure: ``criterion``, ``judge`` (or the choosing ``metric`` for regrets),
        ``beta`` and ``tau`` (None where a figure does not depend on them), ``name``, ``value``."""
        out: list[dict[str, Any]] = []
        for c in self.criteria:
            for a in c.agreement:
                for name in ("hit_rate", "kappa", "kl", "jsd", "beta_hat", "positive_rate", "set_size"):
                    out.append({"criterion": c.criterion, "judge": a.judge, "beta": None, "tau": None,
                                "name": name, "value": getattr(a, name)})
            for row in c.downstream:
                for name in ("mse", "consistency", "bias"):
                    out.append({"criterion": c.criterion, "judge": row.judge, "beta": row.beta,
                                "tau": None if name == "mse" else row.tau, "name": name, "value": getattr(row, name)})
            for s in c.selections:
                out.append({"criterion": c.criterion, "judge": s.chosen, "beta": s.beta, "tau": s.tau,
                            "name": f"regret_consistency[{s.metric}]", "value": s.regret_consistency})
                out.append({"criterion": c.criterion, "judge": s.chosen, "beta": s.beta, "tau": s.tau,
                            "name": f"regret_bias[{s.metric}]", "value": s.regret_bias})
        # mse rows repeat once per tau; keep one
        seen: set[tuple[Any, ...]] = set()
        unique = []
        for row in out:
            key = (row["criterion"], row["judge"], row["beta"], row["tau"], row["name"])
            if key not in seen:
                seen.add(key)
                unique.append(row)
        return unique

    def summary(self, betas: Sequence[float] | None = None) -> str:
        """Plain-text tables: forced-choice agreement per judge; per beta and tau, each judge's
        MSE, C^tau and B^tau; per beta and tau, each metric's mean regret and its choices."""
        judges = self.judges
        width = max([12, *(len(j) for j in judges)])
        shown = [b for b in self.betas if betas is None or any(np.isclose(b, x) for x in betas)]
        lines = [f"Rating indeterminacy: {len(self.criteria)} criteria, judges {', '.join(judges)}",
                 f"items per criterion: {', '.join(str(c.n_items) for c in self.criteria)}; "
                 f"response sets: threshold {self.settings.elicitation.threshold} on label probabilities "
                 f"(Maybe criteria: read directly); means over criteria", ""]
        lines.append("Forced-choice agreement with the humans (independent of beta)")
        lines.append(f"{'judge':<{width}} {'hit rate':>8} {'kappa':>8} {'KL(H->J)':>8} {'JSD':>8} {'beta^J':>8} "
                     f"{'P(pos)':>8} {'|S|':>8}")
        for j in judges:
            lines.append(f"{j:<{width}}" + "".join(" " + _fmt(self.mean_agreement(j, m)) for m in
                                                   ("hit_rate", "kappa", "kl", "jsd", "beta_hat", "positive_rate",
                                                    "set_size")))
        human_rate = _mean([c.human_positive_rate for c in self.criteria])
        lines.append(f"{'humans':<{width}} {'':>8} {'':>8} {'':>8} {'':>8} {'':>8} {_fmt(human_rate)}")
        for tau in self.taus:
            lines += ["", f"Against human multi-label vectors built with beta (tau = {tau}): MSE / C^tau / B^tau"]
            lines.append(f"{'beta':>5} " + " ".join(f"{j[:26]:>26}" for j in judges))
            for beta in shown:
                cells = []
                for j in judges:
                    m, c, b = (self.mean_downstream(j, x, beta, tau) for x in ("mse", "consistency", "bias"))
                    cells.append(f"{_fmt(m, 8)}{_fmt(c, 9)}{_fmt(b, 9)}")
                lines.append(f"{beta:>5.2f} " + " ".join(cells))
        short = {j: f"J{i + 1}" for i, j in enumerate(judges)}
        for tau in self.taus:
            lines += ["", f"Mean regret in C^tau / |B^tau| of choosing a judge by each metric (tau = {tau}), and the "
                          f"judge it chose most often:on how many of the {len(self.criteria)} criteria ("
                          + ", ".join(f"{v} = {k}" for k, v in short.items()) + ")"]
            lines.append(f"{'beta':>5} " + " ".join(f"{METRIC_TITLES[m][:20]:>20}" for m in AGREEMENT_METRICS))
            for beta in shown:
                cells = []
                for m in AGREEMENT_METRICS:
                    rc, rb = self.mean_regret(m, beta, tau, "consistency"), self.mean_regret(m, beta, tau, "bias")
                    name, count = self.choices(m, beta, tau).most_common(1)[0]
                    cells.append(f"{_fmt(rc, 6)} /{_fmt(rb, 6)} {short[name] + ':' + str(count):>5}")
                lines.append(f"{beta:>5.2f} " + " ".join(cells))
        if self.warnings:
            lines += ["", "Warnings:"] + [f"- {w}" for w in self.warnings]
        return "\n".join(lines)
