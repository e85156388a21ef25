"""Judge-corrected Bradley-Terry coefficients: a few human preference labels correct the judge's
soft preferences by prediction-powered inference (PPI++) for the logistic M-estimator.

Model and target. Each comparison of systems ``a`` and ``b`` has the design row
``x = e_a - e_b`` (length S, the ±1 design of Bradley & Terry, Biometrika 1952) with one
system's column dropped: that system is the *reference*, its coefficient fixed at 0, so each
other coefficient is that system's log-odds of beating the reference (ties aside). The target
``beta`` is the logistic regression, without intercept, of the human outcome ``Y`` (1 when a
human prefers ``a``, 0.5 for a tie, 0 when ``b``) on ``x`` over the compared population: the
root of ``E[x (sigma(x . beta) - Y)] = 0``. When humans follow the Bradley-Terry model with ties
as half a win (``E[Y | x] = sigma(x . beta)``), it is the strengths themselves.

Estimators, from ``n`` labelled comparisons (a uniformly random subset, for validity) and the
judge's prediction ``f = P(a wins) + P(tie) / 2`` (balanced over both slot orders) on all of
them:

- *classical*: the logistic fit on the labels alone, with its sandwich (Huber-White) interval:
  ``ppi_py.ppi_logistic_ci(..., lam=0)``, which is ``ppi_py.classical_logistic_ci`` with weights;
- *PPI++*: ``ppi_py.ppi_logistic_ci`` with the power-tuned ``lam`` (``lam=None``, tuned for the
  total variance over the coefficients), which minimises ``lam L_N(f) - lam L_n(f) + L_n(Y)``
  with ``L`` the logistic loss on the unlabelled (``N``) and labelled (``n``) comparisons;
  Angelopoulos, Duchi, Zrnic, "PPI++: Efficient prediction-powered inference", arXiv 2311.01453
  (Sec. 3, generalized linear models; ``lam = 0`` is classical, ``lam = 1`` plain PPI of
  Angelopoulos et al., Science 2023, arXiv 2301.09633);
- *judge alone*: the soft Bradley-Terry fit of ``f`` on every comparison
  (:func:`~.bradley_terry.fit_bradley_terry`), no interval (it estimates the judge's strengths,
  not the humans').

Ties. ``ppi_py`` starts its fit from scikit-learn's ``LogisticRegression(...).fit(X, Y)``, a
classifier that refuses a fractional ``Y``, so a labelled tie is split into two rows of weight
1/2 (``Y = 1`` and ``Y = 0``, same ``x`` and ``f``; ``ppi_py``'s ``w``): the point estimate is
exactly that of ``Y = 0.5``, and the variance, which treats the two half-rows as separate
observations, is at least the exact one (per tie ``(mu - 1/2)^2 / 2 + 1/8 >= (mu - 1/2)^2``
with ``mu`` the fitted probability), so ties make the intervals a little conservative, never
too narrow. Intervals below :data:`~autorubric_local.estimates.methods.MIN_LABELS_FOR_COVERAGE`
labels carry the same note as ``estimate``'s.

Coverage of both intervals against known strengths with a biased judge is simulated in
``tests/test_compare_corrected_bt.py`` and, with more repetitions, in
``scripts/sim_ppi_bradley_terry.py`` (output in ``scripts/results/``).

``ppi_py`` compiles its logistic statistics with numba on first use: the first call in a
process takes some seconds.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from autorubric_local.comparisons.bradley_terry import fit_bradley_terry, pair_counts
from autorubric_local.comparisons.corrected import LabelledPreference, PreferenceLabel, labelled_preferences
from autorubric_local.comparisons.judging import StoredComparison
from autorubric_local.core.errors import InputError
from autorubric_local.estimates.api import SMALL_N_NOTE
from autorubric_local.estimates.methods import MIN_LABELS_FOR_COVERAGE, Interval

__all__ = ["CorrectedCoefficient", "CorrectedCoefficients", "corrected_bradley_terry", "ppi_logistic_coefficients"]


@dataclass(frozen=True)
class CorrectedCoefficient:
    """One system's Bradley-Terry coefficient (log-odds of beating the reference, ties aside).

    Attributes
    ----------
    system : str
    n_comparisons, n_labelled : int
        The system's comparisons, and how many of them a human labelled.
    judge : float
        The judge-alone soft fit (NaN when the judge's preferences do not identify it).
    classical, ppi : Interval
        Labels alone, and PPI++ (``lam`` the tuned weight); for the reference system both are
        exactly 0 with a zero-width interval and the note ``"reference"``.
    """

    system: str
    n_comparisons: int
    n_labelled: int
    judge: float
    classical: Interval
    ppi: Interval


@dataclass(frozen=True)
class CorrectedCoefficients:
    """Corrected Bradley-Terry coefficients of one judge and question.

    Attributes
    ----------
    judge_id, question, reference : str
    coefficients : tuple of CorrectedCoefficient
        The reference first, then the other systems in the comparison's order.
    n_comparisons, n_labelled : int
    confidence : float
    """

    judge_id: str
    question: str
    reference: str
    coefficients: tuple[CorrectedCoefficient, ...]
    n_comparisons: int
    n_labelled: int
    confidence: float


def _split_ties(x: np.ndarray, y: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows with ``y`` in {0, 1} and weights: a ``y = 0.5`` row becomes ``(x, 1, f)`` and
    ``(x, 0, f)`` of weight 1/2 each (module docstring)."""
    tie = y == 0.5
    xs = np.concatenate([x[~tie], x[tie], x[tie]])
    ys = np.concatenate([y[~tie], np.ones(tie.sum()), np.zeros(tie.sum())])
    fs = np.concatenate([f[~tie], f[tie], f[tie]])
    ws = np.concatenate([np.ones((~tie).sum()), np.full(2 * tie.sum(), 0.5)])
    return xs, ys, fs, ws


def ppi_logistic_coefficients(x_labelled: np.ndarray, y: np.ndarray, f_labelled: np.ndarray,
                              x_unlabelled: np.ndarray, f_unlabelled: np.ndarray,
                              alpha: float) -> tuple[Interval, ...]:
    """Classical and PPI++ logistic-regression coefficients with intervals (module docstring).

    Parameters
    ----------
    x_labelled : ndarray of shape (n, d)
        Design rows of the labelled comparisons (no intercept column).
    y : ndarray of shape (n,)
        Human outcomes, each 0, 0.5 (a tie) or 1.
    f_labelled : ndarray of shape (n,)
        The judge's predictions of ``y`` on them, in [0, 1].
    x_unlabelled : ndarray of shape (N, d)
    f_unlabelled : ndarray of shape (N,)
    alpha : float in (0, 1)
        One minus the confidence level.

    Returns
    -------
    tuple of Interval, length 2 d
        The ``d`` classical coefficients, then the ``d`` PPI++ ones (``lam`` and
        ``n_effective = Var_classical / Var_ppi * n`` set on these).

    Raises
    ------
    InputError
        Shapes disagree, ``y`` outside {0, 0.5, 1}, ``f`` outside [0, 1], fewer than 2 labelled
        or 1 unlabelled comparisons, or ``alpha`` outside (0, 1).
    """
    import ppi_py  # the PPI authors' package: the estimates, lam and the intervals
    from ppi_py.ppi import _calc_lam_glm, _logistic_get_stats

    x_l, x_u = np.asarray(x_labelled, dtype=float), np.asarray(x_unlabelled, dtype=float)
    y, f_l, f_u = (np.asarray(v, dtype=float) for v in (y, f_labelled, f_unlabelled))
    if not 0.0 < alpha < 1.0:
        raise InputError(f"alpha must be in (0, 1), got {alpha!r}")
    if x_l.ndim != 2 or x_u.ndim != 2 or x_l.shape[1] != x_u.shape[1] or not (len(x_l) == len(y) == len(f_l)) \
            or len(x_u) != len(f_u):
        raise InputError("design rows, outcomes and predictions must agree in shape")
    if len(y) < 2 or len(f_u) < 1:
        raise InputError(f"need 2 or more labelled and 1 or more unlabelled comparisons, got {len(y)} and {len(f_u)}")
    if not np.isin(y, (0.0, 0.5, 1.0)).all():
        raise InputError("outcomes must be 0, 0.5 or 1")
    if not (np.isfinite(f_l).all() and np.isfinite(f_u).all() and 0 <= min(f_l.min(), f_u.min())
            and max(f_l.max(), f_u.max()) <= 1):
        raise InputError("judge predictions must be in [0, 1]")
    xs, ys, fs, ws = _split_ties(x_l, y, f_l)
    with _quiet_sklearn():
        cl_low, cl_high = ppi_py.ppi_logistic_ci(xs, ys, fs, x_u, f_u, alpha=alpha, lam=0, w=ws)
        # ppi_logistic_ci(lam=None) tunes lam inside without returning it. Its steps, to report lam:
        # fit at lam = 1, tune lam there, refit, tune again at the refit point (tested equal to it).
        w_norm, w_unlabelled = ws / ws.sum() * len(ws), np.ones(len(f_u))
        lam = 1.0
        for _ in range(2):
            point = ppi_py.ppi_logistic_pointestimate(xs, ys, fs, x_u, f_u, lam=lam, w=ws)
            stats = _logistic_get_stats(point, xs, ys, fs, x_u, f_u, w_norm, w_unlabelled, True)
            lam = float(_calc_lam_glm(*stats, clip=True))
        low, high = ppi_py.ppi_logistic_ci(xs, ys, fs, x_u, f_u, alpha=alpha, lam=lam, w=ws)
    classical = _symmetric(cl_low, cl_high, alpha, None)
    classical = [Interval(**{**vars(c), "n_effective": float(len(y))}) for c in classical]
    ppi = _symmetric(low, high, alpha, lam)
    ppi = [Interval(**{**vars(p), "n_effective": None if not p.std_error else
                       float(len(y) * (c.std_error / p.std_error) ** 2)})  # type: ignore[operator]
           for p, c in zip(ppi, classical, strict=True)]
    return (*classical, *ppi)


@contextmanager
def _quiet_sklearn() -> Iterator[None]:
    """Silence the one FutureWarning scikit-learn >= 1.8 gives for ``ppi_py``'s
    ``LogisticRegression(penalty=None)`` (its starting point), nothing else."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="'penalty' was deprecated", category=FutureWarning)
        yield


def _symmetric(low: np.ndarray, high: np.ndarray, alpha: float, lam: float | None) -> list[Interval]:
    """Wald intervals ``estimate ± z se`` from ``ppi_py``'s bounds: the estimate is their midpoint,
    ``se`` their half-width over ``z_{1 - alpha/2}``."""
    from scipy.stats import norm

    z = float(norm.ppf(1 - alpha / 2))
    return [Interval(float((lo + hi) / 2), float(lo), float(hi), float((hi - lo) / (2 * z)), lam=lam)
            for lo, hi in zip(np.atleast_1d(low), np.atleast_1d(high), strict=True)]


def _check_linked(systems: Sequence[str], a: np.ndarray, b: np.ndarray, y: np.ndarray) -> None:
    """Ford's condition on the labels (Ford, Amer. Math. Monthly 1957): the classical fit is
    finite iff the graph with an edge ``i -> j`` wherever a human judged ``i`` at least as good
    as ``j`` is strongly connected (``scipy.sparse.csgraph.connected_components``)."""
    size = len(systems)
    forward = np.concatenate([a[y > 0], b[y < 1]])
    backward = np.concatenate([b[y > 0], a[y < 1]])
    graph = coo_matrix((np.ones(len(forward)), (forward, backward)), shape=(size, size))
    n_parts, part = connected_components(graph, directed=True, connection="strong")
    if n_parts > 1:
        groups = [[systems[k] for k in range(size) if part[k] == g] for g in range(n_parts)]
        raise InputError(f"the labelled comparisons do not link every system both ways (groups {groups}): some "
                         "system never lost to (or never beat) the others in a human label, directly or through a "
                         "chain, so its coefficient has no finite estimate; label more comparisons of it")


def corrected_bradley_terry(comparison: StoredComparison, labels: Sequence[PreferenceLabel], *, judge_id: str,
                            question: str = "overall", confidence: float = 0.9,
                            reference: str | None = None) -> CorrectedCoefficients:
    """Classical and PPI++ Bradley-Terry coefficients of the comparison's systems (module docstring).

    Parameters
    ----------
    comparison : StoredComparison
        A pairwise comparison (N-way comparisons have no pair judgments to correct).
    labels : sequence of PreferenceLabel
        A uniformly random sample of the comparisons (for PPI++'s validity).
    judge_id : str
    question : str
        A question's name (the labels say which response is better on it).
    confidence : float in (0, 1)
    reference : str, optional
        The system whose coefficient is 0 (default: the first judged system in the comparison's
        order).

    Returns
    -------
    CorrectedCoefficients
        Coefficients in log-odds units against ``reference``.

    Raises
    ------
    InputError
        As :func:`~.corrected.labelled_preferences`; ``confidence`` outside (0, 1); an unknown
        reference; fewer than 2 judged systems; fewer than 2 labelled comparisons; labels that
        do not link every system both ways (Ford's condition; the groups are named); labels whose
        information matrix is singular (few labels, near-perfect separation).

    Notes
    -----
    With every comparison labelled, PPI++ is the classical estimate (noted on each interval).
    """
    if not 0.0 < confidence < 1.0:
        raise InputError(f"confidence must be in (0, 1), got {confidence!r}")
    rows = labelled_preferences(comparison, labels, judge_id=judge_id, question=question)
    systems = [s for s in comparison.systems if any(s in (r.a, r.b) for r in rows)]
    if len(systems) < 2:
        raise InputError(f"judge {judge_id!r}, question {question!r}: fewer than 2 systems with a complete judgment")
    reference = systems[0] if reference is None else reference
    if reference not in systems:
        raise InputError(f"reference {reference!r} is not among the judged systems {systems}")
    order = [reference, *(s for s in systems if s != reference)]
    index = {s: k for k, s in enumerate(order)}
    a = np.array([index[r.a] for r in rows])
    b = np.array([index[r.b] for r in rows])
    f = np.array([r.judge for r in rows])
    labelled = np.array([r.label is not None for r in rows])
    y = np.array([r.label.outcome_for(r.a) if r.label is not None else np.nan for r in rows])
    n = int(labelled.sum())
    if n < 2:
        raise InputError(f"judge {judge_id!r}, question {question!r}: {n} labelled comparison(s); need 2 or more")
    _check_linked(order, a[labelled], b[labelled], y[labelled])
    x = np.zeros((len(rows), len(order)))
    x[np.arange(len(rows)), a] = 1.0
    x[np.arange(len(rows)), b] = -1.0
    x = x[:, 1:]
    alpha = 1.0 - confidence
    d = len(order) - 1
    notes = [SMALL_N_NOTE] if n < MIN_LABELS_FOR_COVERAGE else []
    if n == len(rows):
        # every comparison labelled: no unlabelled set, PPI++ is the classical fit; ppi_py needs
        # unlabelled rows, given here as the labelled ones with lam = 0 (they are then unused)
        import ppi_py

        xs, ys, fs, ws = _split_ties(x, y, f)
        with _quiet_sklearn():
            low, high = ppi_py.ppi_logistic_ci(xs, ys, fs, xs, fs, alpha=alpha, lam=0, w=ws)
        classical = [Interval(**{**vars(c), "n_effective": float(n)}) for c in _symmetric(low, high, alpha, None)]
        exact = "every comparison is labelled: PPI++ is the classical estimate here"
        ppi = [Interval(c.estimate, c.ci_low, c.ci_high, c.std_error, lam=0.0, n_effective=c.n_effective, note=exact)
               for c in classical]
    else:
        try:
            found = ppi_logistic_coefficients(x[labelled], y[labelled], f[labelled], x[~labelled], f[~labelled],
                                              alpha)
        except np.linalg.LinAlgError as exc:  # ppi_py inverts the labels' information matrix
            raise InputError(f"judge {judge_id!r}, question {question!r}: the {n} labels' information matrix is "
                             "singular (too few labels, or labelled outcomes the systems separate almost "
                             "perfectly): no interval can be given; label more comparisons") from exc
        classical, ppi = list(found[:d]), list(found[d:])
    if notes:
        classical = [Interval(**{**vars(c), "note": "; ".join(filter(None, [c.note, *notes]))}) for c in classical]
        ppi = [Interval(**{**vars(c), "note": "; ".join(filter(None, [c.note, *notes]))}) for c in ppi]
    judge = _judge_alone(order, rows)
    zero = Interval(0.0, 0.0, 0.0, 0.0, note="reference")
    out = []
    for k, system in enumerate(order):
        mine = (a == k) | (b == k)
        c, p = (zero, zero) if k == 0 else (classical[k - 1], ppi[k - 1])
        out.append(CorrectedCoefficient(system, int(mine.sum()), int((mine & labelled).sum()), judge[k], c, p))
    return CorrectedCoefficients(judge_id, question, reference, tuple(out), len(rows), n, confidence)


def _judge_alone(order: Sequence[str], rows: Sequence[LabelledPreference]) -> list[float]:
    """The soft Bradley-Terry fit of the judge's preferences, against ``order[0]`` (NaN when
    they do not identify it)."""
    data = pair_counts([r.prompt_id for r in rows], [r.a for r in rows], [r.b for r in rows],
                       [r.judge for r in rows], np.zeros(len(rows)), [1.0 - r.judge for r in rows], systems=order)
    try:
        beta = fit_bradley_terry(data).beta
    except InputError:  # the judge's preferences alone do not link the systems (e.g. all 0 or 1)
        return [float("nan")] * len(order)
    return [float(v - beta[0]) for v in beta]
