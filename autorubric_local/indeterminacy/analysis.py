"""The analysis of one criterion: agreement metrics, downstream metrics, rankings and regret
over a grid of human sensitivities ``beta`` and thresholds ``tau``.

Source: the blog post on "Validating LLM-as-a-Judge Systems under Rating
Indeterminacy" (NeurIPS 2025). Human forced-choice labels
become response sets through ``beta`` (:func:`.model.beta_translation`; the blog post's sensitivity
parameter: "by systematically varying beta^H, we can characterize how meta-evaluation results
change under different levels of indeterminacy"), unless the humans gave response sets
themselves (``human_theta``), which need no ``beta``. Forced-choice metrics (hit rate, Cohen's
kappa, KL human -> judge, JSD) do not depend on ``beta``; the multi-label MSE and the downstream
metrics do, against ``Omega^H(beta)``. For every ``beta`` and ``tau`` each agreement metric
chooses a judge; its regret is how much worse that judge is downstream than the best one
(:func:`.downstream.regret`): in decision consistency ``C^tau`` and in absolute estimation
bias ``|B^tau|``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from autorubric_local.core.errors import InputError
from autorubric_local.indeterminacy.agreement import (
    DEFAULT_EPSILON,
    cohen_kappa,
    hit_rate,
    js_divergence,
    kl_divergence,
    modal_labels,
    multilabel_mse,
)
from autorubric_local.indeterminacy.downstream import (
    decision_consistency,
    estimation_bias,
    rank_judges,
    regret,
)
from autorubric_local.indeterminacy.elicitation import JudgeRatings
from autorubric_local.indeterminacy.model import (
    beta_translation,
    estimate_beta,
    membership_matrix,
    response_sets,
)

__all__ = [
    "AGREEMENT_METRICS",
    "AnalysisSettings",
    "DEFAULT_BETAS",
    "DEFAULT_TAUS",
    "CriterionAnalysis",
    "CriterionRatings",
    "DownstreamValue",
    "JudgeAgreement",
    "Selection",
    "analyse_criterion",
]

DEFAULT_BETAS = tuple(round(0.05 * i, 2) for i in range(13))
"""0, 0.05, ..., 0.6: the blog post reports forced-choice metrics failing from beta^H 0.2-0.3 on."""
DEFAULT_TAUS = (0.3, 0.5)
"""The blog post's example threshold (0.3) and a majority threshold."""

AGREEMENT_METRICS: dict[str, bool] = {
    "hit_rate": True,
    "kappa": True,
    "kl": False,
    "jsd": False,
    "mse": False,
}
"""Agreement metric -> whether higher is better. ``mse`` is the multi-label metric."""


@dataclass(frozen=True)
class CriterionRatings:
    """Everything the analysis of one criterion reads.

    Attributes
    ----------
    criterion : str
        Its key (name, or ``"criterion <i>"``).
    options : tuple of str, length K
        Option labels in index order.
    positive : int
        Index of the positive option (``beta`` adds it to response sets; ``tau`` thresholds it).
    item_ids : tuple of str, length n
    human_forced : ndarray of shape (n, K)
        Human forced-choice distribution per item (label shares; one-hot for one label).
    judges : dict of str to JudgeRatings
        Each judge's ratings of the same n items, in the same order.
    human_theta : ndarray of shape (n, 2**K - 1) or None
        Human response sets when the data has them (then ``beta`` is not used).
    human_translation : ndarray of shape (2**K - 1, K) or None
        A reverse translation ``R-hat`` estimated from a small set of paired human ratings
        (:func:`.model.estimate_reverse_translation`; the blog post's recommendation 3): human
        response sets are ``R-hat O^H`` instead of ``R_beta O^H`` (then ``beta`` is not used).
    """

    criterion: str
    options: tuple[str, ...]
    positive: int
    item_ids: tuple[str, ...]
    human_forced: np.ndarray
    judges: dict[str, JudgeRatings]
    human_theta: np.ndarray | None = None
    human_translation: np.ndarray | None = None

    def __post_init__(self) -> None:
        k, n = len(self.options), len(self.item_ids)
        where = f"criterion {self.criterion!r}"
        if not 2 <= k or not 0 <= self.positive < k:
            raise InputError(f"{where}: positive option {self.positive} not in 0..{k - 1}")
        if self.human_forced.shape != (n, k):
            raise InputError(f"{where}: human_forced has shape {self.human_forced.shape}, expected {(n, k)}")
        if self.human_theta is not None and self.human_theta.shape != (n, len(response_sets(k))):
            raise InputError(f"{where}: human_theta has shape {self.human_theta.shape}")
        if self.human_translation is not None:
            r = self.human_translation
            if r.shape != (len(response_sets(k)), k) or np.any(r < 0) or not np.allclose(r.sum(axis=0), 1.0):
                raise InputError(f"{where}: human_translation must have shape {(len(response_sets(k)), k)} "
                                 "with columns that are distributions")
            if np.any(r * (1.0 - membership_matrix(k).T) > 1e-9):
                raise InputError(f"{where}: human_translation puts mass on a set without its forced choice")
        if not self.judges:
            raise InputError(f"{where}: no judges")
        for name, r in self.judges.items():
            if r.forced.shape != (n, k) or r.theta.shape != (n, len(response_sets(k))):
                raise InputError(f"{where}, judge {name!r}: ratings of shape {r.forced.shape}/{r.theta.shape}, "
                                 f"expected {(n, k)}/{(n, len(response_sets(k)))}")

    @property
    def uses_beta(self) -> bool:
        """Whether human response sets are built through ``beta`` (neither sets nor ``R-hat`` given)."""
        return self.human_theta is None and self.human_translation is None

    def human_omega(self, beta: float) -> np.ndarray:
        """``Omega^H``: from ``human_theta`` when given, else ``Lambda R O^H`` with ``R`` the given
        ``human_translation`` or ``R_beta``; shape (n, K)."""
        k = len(self.options)
        if self.human_theta is not None:
            theta = self.human_theta
        else:
            r = self.human_translation if self.human_translation is not None else beta_translation(k, self.positive, beta)
            theta = self.human_forced @ r.T
        return theta @ membership_matrix(k).T


class JudgeAgreement(BaseModel):
    """One judge's forced-choice agreement with the humans on one criterion (independent of beta).

    ``beta_hat`` is the judge's own sensitivity from its paired modal forced choice and modal
    response set per item (:func:`.model.estimate_beta`); ``None`` when it never chose a
    non-positive option. ``positive_rate`` is the share of items whose modal forced choice is the
    positive option; ``set_size`` the mean size of its response sets.
    """

    model_config = ConfigDict(frozen=True)

    judge: str
    hit_rate: float
    kappa: float | None
    kl: float
    jsd: float
    beta_hat: float | None
    positive_rate: float
    set_size: float


class DownstreamValue(BaseModel):
    """One judge's beta-dependent figures at one ``beta`` (and ``tau`` for C and B)."""

    model_config = ConfigDict(frozen=True)

    judge: str
    beta: float
    tau: float
    mse: float
    consistency: float
    bias: float


class Selection(BaseModel):
    """The judge one agreement metric chooses at one ``beta`` and ``tau``, and its regret.

    ``ranking`` lists judges best first; ``regret_consistency`` is ``max_j C_j - C_chosen``,
    ``regret_bias`` is ``|B_chosen| - min_j |B_j|`` (both >= 0).
    """

    model_config = ConfigDict(frozen=True)

    metric: str
    beta: float
    tau: float
    chosen: str
    ranking: list[str]
    regret_consistency: float | None
    regret_bias: float | None


class CriterionAnalysis(BaseModel):
    """The analysis of one criterion (module docstring)."""

    model_config = ConfigDict(frozen=True)

    criterion: str
    options: list[str]
    positive: str
    n_items: int
    human_positive_rate: float = Field(description="share of human forced-choice labels on the positive option")
    human_sets_given: bool = Field(description="human response sets or R-hat given: one row at beta = 0 stands for all")
    agreement: list[JudgeAgreement]
    downstream: list[DownstreamValue]
    selections: list[Selection]

    def value(self, judge: str, beta: float, tau: float) -> DownstreamValue:
        """The downstream row of ``judge`` at ``beta`` and ``tau``.

        Raises
        ------
        KeyError
            No such row.
        """
        for row in self.downstream:
            if row.judge == judge and np.isclose(row.beta, beta) and np.isclose(row.tau, tau):
                return row
        raise KeyError((judge, beta, tau))

    def selection(self, metric: str, beta: float, tau: float) -> Selection:
        """The selection by ``metric`` at ``beta`` and ``tau``.

        Raises
        ------
        KeyError
            No such row.
        """
        for row in self.selections:
            if row.metric == metric and np.isclose(row.beta, beta) and np.isclose(row.tau, tau):
                return row
        raise KeyError((metric, beta, tau))


def _check_grid(values: Sequence[float], name: str) -> list[float]:
    out = [float(v) for v in values]
    if not out or any(not 0.0 <= v <= 1.0 for v in out) or len(set(out)) != len(out):
        raise InputError(f"{name}: a non-empty list of distinct values in [0, 1], got {list(values)}")
    return sorted(out)


class AnalysisSettings(BaseModel):
    """Grids and constants of :func:`analyse_criterion`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    betas: tuple[float, ...] = DEFAULT_BETAS
    taus: tuple[float, ...] = DEFAULT_TAUS
    epsilon: float = Field(DEFAULT_EPSILON, ge=0.0, lt=0.5)

    @field_validator("betas", "taus", mode="after")
    @classmethod
    def _grid(cls, value: tuple[float, ...], info: object) -> tuple[float, ...]:
        return tuple(_check_grid(value, getattr(info, "field_name", "grid")))


def _agreement(name: str, ratings: CriterionRatings, judge: JudgeRatings, epsilon: float) -> JudgeAgreement:
    k = len(ratings.options)
    human_labels = modal_labels(ratings.human_forced)
    judge_labels = judge.forced_labels
    sizes = membership_matrix(k).sum(axis=0)
    return JudgeAgreement(
        judge=name,
        hit_rate=hit_rate(human_labels, judge_labels),
        kappa=cohen_kappa(human_labels, judge_labels, k),
        kl=kl_divergence(ratings.human_forced, judge.forced, epsilon=epsilon),
        jsd=js_divergence(ratings.human_forced, judge.forced),
        beta_hat=estimate_beta(judge_labels, judge.set_positions, k, ratings.positive),
        positive_rate=float(np.mean(judge_labels == ratings.positive)),
        set_size=float(np.mean(judge.theta @ sizes)),
    )


def analyse_criterion(ratings: CriterionRatings, settings: AnalysisSettings | None = None) -> CriterionAnalysis:
    """Agreement, downstream metrics, rankings and regret of every judge on one criterion.

    Parameters
    ----------
    ratings : CriterionRatings
    settings : AnalysisSettings, optional
        ``betas`` (ignored when humans gave response sets or ``R-hat`` is given: then one row
        at beta = 0 stands for all), ``taus`` and the KL floor ``epsilon``.

    Returns
    -------
    CriterionAnalysis

    Raises
    ------
    InputError
        Inconsistent ratings (see :class:`CriterionRatings`).
    """
    settings = settings or AnalysisSettings()
    agreement = [_agreement(name, ratings, r, settings.epsilon) for name, r in ratings.judges.items()]
    by_name = {a.judge: a for a in agreement}
    betas = list(settings.betas) if ratings.uses_beta else [0.0]
    downstream: list[DownstreamValue] = []
    selections: list[Selection] = []
    for beta in betas:
        human = ratings.human_omega(beta)
        mse = {name: multilabel_mse(human, r.omega) for name, r in ratings.judges.items()}
        for tau in settings.taus:
            rows = {name: DownstreamValue(
                judge=name, beta=beta, tau=tau, mse=mse[name],
                consistency=decision_consistency(r.omega, human, ratings.positive, tau),
                bias=estimation_bias(r.omega, human, ratings.positive, tau),
            ) for name, r in ratings.judges.items()}
            downstream.extend(rows.values())
            consistency = {name: row.consistency for name, row in rows.items()}
            abs_bias = {name: abs(row.bias) for name, row in rows.items()}
            for metric, higher in AGREEMENT_METRICS.items():
                scores: Mapping[str, float | None] = mse if metric == "mse" else \
                    {name: getattr(by_name[name], metric) for name in ratings.judges}
                ranking = rank_judges(scores, higher_is_better=higher)
                selections.append(Selection(
                    metric=metric, beta=beta, tau=tau, chosen=ranking[0], ranking=ranking,
                    regret_consistency=regret(ranking[0], consistency, higher_is_better=True),
                    regret_bias=regret(ranking[0], abs_bias, higher_is_better=False),
                ))
    return CriterionAnalysis(
        criterion=ratings.criterion,
        options=list(ratings.options),
        positive=ratings.options[ratings.positive],
        n_items=len(ratings.item_ids),
        human_positive_rate=float(ratings.human_forced[:, ratings.positive].mean()),
        human_sets_given=not ratings.uses_beta,
        agreement=agreement,
        downstream=downstream,
        selections=selections,
    )
