"""Rankings of systems and position bias, from a comparison's pair judgments.

- :func:`outcomes`: each pair's outcome for one judge and question, as (wins, ties, losses) of
  system ``a``: ``soft``, the balanced preference (the mean over both orders of the judge's
  probabilities mapped to systems, Wang et al., arXiv 2305.17926); or ``swap``, the MT-Bench
  swap rule's hard verdict (Zheng et al., arXiv 2306.05685). The question ``rubric`` is the
  weighted-rubric preference: ``sum_q w_q pref_q / sum_q w_q`` over the rubric's questions
  (weights ``|w|``); a pair counts only when every question of it is complete.
- :func:`rank_systems`: Bradley-Terry strengths of those outcomes
  (:func:`~.bradley_terry.bootstrap_bradley_terry`: ties as half a win, or the Davidson /
  Rao-Kupper tie models; percentile cluster-bootstrap intervals over prompts), shown on Chatbot
  Arena's scale (``400 beta / ln 10 + 1000``), with each system's win rate (``wins + ties / 2``
  over its comparisons) and the win-rate matrix. On the 5-point scale Bradley-Terry fits
  Arena-Hard-Auto's weighted games (a strong verdict counts 3) and the win rates are the
  expected grades (:mod:`.preferences`).
- :func:`rank_style_controlled`: the same outcomes ranked with the responses' style (length,
  markdown) as covariates, Chatbot Arena's and Arena-Hard's style control (:mod:`.style`).
- :func:`position_bias`: position consistency, conflict rate, primacy and recency
  (:func:`~.preferences.position_consistency`; Shi et al., arXiv 2406.07791), with a
  percentile cluster-bootstrap interval over prompts for the consistency (Efron & Tibshirani
  1993, ch. 13; resampling prompts keeps a prompt's comparisons together). Its coverage is
  tested by simulation (``tests/test_compare.py``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from autorubric_local.comparisons.bradley_terry import ARENA_SCALE, bootstrap_bradley_terry, pair_counts
from autorubric_local.comparisons.judging import NWayJudgment, PairJudgment, StoredComparison
from autorubric_local.comparisons.preferences import PositionConsistency, consistent, position_consistency
from autorubric_local.comparisons.style import (
    FEATURES,
    StyleCoefficient,
    StyleRanking,
    StyleSystemRank,
    bootstrap_style_controlled,
    style_comparisons,
    style_features,
)
from autorubric_local.core.errors import InputError
from autorubric_local.estimates.methods import bounded_mean_interval
from autorubric_local.metrics.resampling import resample_indices

__all__ = ["METHODS", "RUBRIC", "Outcome", "PositionBias", "Ranking", "SystemRank", "default_question",
           "outcomes", "position_bias", "rank_style_controlled", "rank_systems"]

METHODS = ("soft", "swap")
RUBRIC = "rubric"
"""The question name of the weighted-rubric preference."""


@dataclass(frozen=True)
class Outcome:
    """One pair's outcome for system ``a`` (wins + ties + losses = 1; for Bradley-Terry on the
    5-point scale, :func:`outcomes` with ``weighted``, Arena-Hard's game counts, 1 to 3)."""

    prompt_id: str
    a: str
    b: str
    wins: float
    ties: float
    losses: float


def default_question(comparison: StoredComparison) -> str:
    """``overall`` when the comparison asked it, else :data:`RUBRIC`."""
    names = [q["name"] for q in comparison.questions]
    return "overall" if "overall" in names or not names else RUBRIC


def _one(judgment: PairJudgment, method: str, weighted: bool = False) -> tuple[float, float, float]:
    if weighted:
        counts = judgment.bradley_terry_counts(method)
        assert counts is not None
        return counts
    if method == "soft":
        p = judgment.preference
        assert p is not None
        return p["a"], p["tie"], p["b"]
    verdict = judgment.swap_verdict
    return float(verdict == "a"), float(verdict == "tie"), float(verdict == "b")


def outcomes(comparison: StoredComparison, *, judge_id: str, question: str, method: str = "soft",
             weighted: bool = False) -> list[Outcome]:
    """Each complete pair's outcome for ``judge_id`` on ``question`` (module docstring).

    ``weighted``: the counts Bradley-Terry fits (:meth:`~.judging.PairJudgment.bradley_terry_counts`:
    on the 5-point scale a strong verdict counts 3 games, Arena-Hard-Auto's weighting; the same
    as unweighted on the 3-point scale and for N-way comparisons).

    Raises
    ------
    InputError
        An unknown method, judge or question, or a weighted-rubric preference of a comparison
        with no weighted question.
    """
    if method not in METHODS:
        raise InputError(f"method must be one of {list(METHODS)}, got {method!r}")
    if judge_id not in comparison.judge_ids:
        raise InputError(f"judge {judge_id!r} is not among the comparison's judges {list(comparison.judge_ids)}")
    weights = {q["name"]: float(q["weight"]) for q in comparison.questions}
    if question == RUBRIC:
        wanted = {name: w for name, w in weights.items() if w > 0}
        if not wanted:
            raise InputError("the comparison has no rubric question (it asked only the overall one); "
                             "rank on --question overall")
    elif question in weights:
        wanted = {question: 1.0}
    else:
        raise InputError(f"question {question!r} is not among the comparison's {[*weights, RUBRIC]}")
    if comparison.nway:
        return _nway_outcomes(comparison, judge_id, wanted, method)
    by_pair: dict[str, dict[str, PairJudgment]] = defaultdict(dict)
    for judgment in comparison.judgments:
        if judgment.judge_id == judge_id and judgment.question in wanted and judgment.complete:
            by_pair[judgment.item_id][judgment.question] = judgment
    out = []
    total = sum(wanted.values())
    for answers in by_pair.values():
        if len(answers) < len(wanted):
            continue
        parts = np.array([np.array(_one(answers[name], method, weighted)) * w
                          for name, w in wanted.items()]).sum(axis=0) / total
        first = next(iter(answers.values()))
        out.append(Outcome(first.prompt_id, first.system_a, first.system_b, *map(float, parts)))
    return out


def _nway_one(judgment: NWayJudgment, method: str) -> dict[tuple[str, str], tuple[float, float, float]]:
    """Each pair of an N-way judgment's systems as (wins, ties, losses) of the first. ``soft``:
    Luce's choice axiom, ``P(s beats t) = p_s / (p_s + p_t)`` with ``p`` the preference balanced
    over rotations (Luce, *Individual Choice Behavior*, 1959; under it best-of-N choices follow
    the Bradley-Terry model of the pairs). ``swap``: the system chosen in every rotation beats each
    other one and the other pairs are ties; rotations that disagree make every pair a tie (the
    MT-Bench rule over N orders)."""
    out: dict[tuple[str, str], tuple[float, float, float]] = {}
    systems = judgment.systems
    p = judgment.preference
    assert p is not None
    chosen = set(judgment.chosen)
    winner = next(iter(chosen)) if len(chosen) == 1 else None
    for i, s in enumerate(systems):
        for t in systems[i + 1:]:
            if method == "soft":
                total = p[s] + p[t]
                out[(s, t)] = (p[s] / total, 0.0, p[t] / total) if total > 0 else (0.0, 1.0, 0.0)
            elif winner == s:
                out[(s, t)] = (1.0, 0.0, 0.0)
            elif winner == t:
                out[(s, t)] = (0.0, 0.0, 1.0)
            else:
                out[(s, t)] = (0.0, 1.0, 0.0)
    return out


def _nway_outcomes(comparison: StoredComparison, judge_id: str, wanted: dict[str, float], method: str) -> list[Outcome]:
    by_item: dict[str, dict[str, NWayJudgment]] = defaultdict(dict)
    for judgment in comparison.nway:
        if judgment.judge_id == judge_id and judgment.question in wanted and judgment.complete:
            by_item[judgment.item_id][judgment.question] = judgment
    total = sum(wanted.values())
    out = []
    for answers in by_item.values():
        if len(answers) < len(wanted):
            continue
        first = next(iter(answers.values()))
        parts = {name: _nway_one(answers[name], method) for name in wanted}
        for pair in parts[next(iter(wanted))]:
            value = sum(np.array(parts[name][pair]) * w for name, w in wanted.items()) / total
            out.append(Outcome(first.prompt_id, pair[0], pair[1], *map(float, value)))
    return out


@dataclass(frozen=True)
class SystemRank:
    """One system's place: Bradley-Terry strength (centred ``beta`` and the Arena-scale score)
    with its interval, win rate over its comparisons and how many it had."""

    system: str
    beta: float
    score: float
    score_low: float
    score_high: float
    win_rate: float
    n_comparisons: int


@dataclass(frozen=True)
class Ranking:
    """Systems ranked by Bradley-Terry strength, best first.

    Attributes
    ----------
    judge_id, question, method, tie_model : str
    systems : tuple of SystemRank
    win_matrix : dict of (str, str) to float
        ``(i, j)`` -> ``i``'s mean ``wins + ties / 2`` against ``j`` (pairs compared only).
    n_prompts, n_comparisons : int
    confidence : float
    n_bootstrap : int
        Resamples used.
    """

    judge_id: str
    question: str
    method: str
    tie_model: str
    systems: tuple[SystemRank, ...]
    win_matrix: dict[tuple[str, str], float]
    n_prompts: int
    n_comparisons: int
    confidence: float
    n_bootstrap: int


def rank_systems(comparison: StoredComparison, *, judge_id: str, question: str, method: str = "soft",
                 tie_model: str = "half", n_bootstrap: int = 200, confidence: float = 0.9,
                 seed: int = 0) -> Ranking:
    """Rank the comparison's systems for one judge and question (module docstring).

    Raises
    ------
    InputError
        As :func:`outcomes`; no complete comparison; and as
        :func:`~.bradley_terry.bootstrap_bradley_terry` (systems not linked by wins and losses
        both ways, Ford's condition; too few prompts for an interval).
    """
    found = outcomes(comparison, judge_id=judge_id, question=question, method=method)
    if not found:
        raise InputError(f"judge {judge_id!r}, question {question!r}: no complete comparison to rank")
    systems = [s for s in comparison.systems if any(s in (o.a, o.b) for o in found)]
    counted = found if comparison.scale == 3 else outcomes(comparison, judge_id=judge_id, question=question,
                                                           method=method, weighted=True)
    data = pair_counts([o.prompt_id for o in counted], [o.a for o in counted], [o.b for o in counted],
                       [o.wins for o in counted], [o.ties for o in counted], [o.losses for o in counted],
                       systems=systems)
    fitted = bootstrap_bradley_terry(data, n_bootstrap=n_bootstrap, confidence=confidence, seed=seed,
                                     tie_model=tie_model)
    sums: dict[tuple[str, str], list[float]] = defaultdict(list)
    for o in found:
        sums[(o.a, o.b)].append(o.wins + o.ties / 2)
        sums[(o.b, o.a)].append(o.losses + o.ties / 2)
    matrix = {key: float(np.mean(values)) for key, values in sums.items()}
    ranks = []
    for k, system in enumerate(data.systems):
        mine = [v for (i, _), values in sums.items() if i == system for v in values]
        ranks.append(SystemRank(system, float(fitted.fit.beta[k]), float(ARENA_SCALE * fitted.fit.beta[k] + 1000.0),
                                float(ARENA_SCALE * fitted.ci_low[k] + 1000.0),
                                float(ARENA_SCALE * fitted.ci_high[k] + 1000.0), float(np.mean(mine)), len(mine)))
    ranks.sort(key=lambda r: -r.beta)
    return Ranking(judge_id, question, method, tie_model, tuple(ranks), matrix, len(data.prompts), len(found),
                   confidence, fitted.n_bootstrap)


def rank_style_controlled(comparison: StoredComparison, *, judge_id: str, question: str, method: str = "soft",
                          n_bootstrap: int = 200, confidence: float = 0.9, seed: int = 0) -> StyleRanking:
    """Style-controlled ranking of a stored comparison for one judge and question: the outcomes
    Bradley-Terry fits (:func:`outcomes` with ``weighted``; ties half a win), the
    style counts stored with the comparison (``description["style"]``), :mod:`.style`.

    Raises
    ------
    InputError
        As :func:`outcomes`; no complete comparison; a comparison stored without its
        responses' style counts (judged before style control was added: judge it again); and as
        :func:`~.style.bootstrap_style_controlled`.

    Returns
    -------
    StyleRanking
        Systems best first with centred strengths (log-odds) and Arena-scale scores with their
        percentile intervals; each varying feature's coefficient (log-odds per root mean square
        of its normalised difference) with its interval; the features left out.
    """
    style = comparison.description.get("style")
    if not isinstance(style, dict):
        raise InputError(f"comparison {comparison.name!r} ({comparison.sweep_id}) was stored without its responses' "
                         "style counts (before style control was added); judge it again with `compare` under a "
                         "new --run to rank it with --style-control")
    found = outcomes(comparison, judge_id=judge_id, question=question, method=method, weighted=True)
    if not found:
        raise InputError(f"judge {judge_id!r}, question {question!r}: no complete comparison to rank")
    raw = []
    for o in found:
        try:
            raw.append(style_features(style[o.prompt_id][o.a], style[o.prompt_id][o.b]))
        except KeyError as exc:
            raise InputError(f"comparison {comparison.name!r}: prompt {o.prompt_id!r}: no stored style counts of "
                             f"system {exc.args[0]!r}") from None
    systems = [s for s in comparison.systems if any(s in (o.a, o.b) for o in found)]
    data = style_comparisons([o.prompt_id for o in found], [o.a for o in found], [o.b for o in found],
                             [o.wins for o in found], [o.ties for o in found], [o.losses for o in found], raw,
                             systems=systems)
    fitted = bootstrap_style_controlled(data, n_bootstrap=n_bootstrap, confidence=confidence, seed=seed)
    ranks = [StyleSystemRank(s, float(fitted.fit.beta[k]), float(ARENA_SCALE * fitted.fit.beta[k] + 1000.0),
                             float(ARENA_SCALE * fitted.beta_low[k] + 1000.0),
                             float(ARENA_SCALE * fitted.beta_high[k] + 1000.0)) for k, s in enumerate(data.systems)]
    ranks.sort(key=lambda r: -r.beta)
    coefficients = tuple(StyleCoefficient(name, float(fitted.fit.gamma[k]), float(fitted.gamma_low[k]),
                                          float(fitted.gamma_high[k]), float(data.sd[k]))
                         for k, name in enumerate(data.features))
    return StyleRanking(judge_id, question, method, tuple(ranks), coefficients,
                        tuple(f for f in FEATURES if f not in data.features), len(data.prompts), len(found),
                        confidence, fitted.n_bootstrap)


@dataclass(frozen=True)
class PositionBias:
    """Position bias of one judge on one question: :class:`~.preferences.PositionConsistency`
    with a cluster-bootstrap interval of the consistency over prompts (None below 2 prompts or
    with ``n_bootstrap = 0``)."""

    judge_id: str
    question: str
    measures: PositionConsistency
    n_prompts: int
    consistency_low: float | None
    consistency_high: float | None
    confidence: float


def consistency_interval(prompt_ids: Sequence[str], consistent: Sequence[bool], *, n_bootstrap: int,
                         confidence: float, seed: int) -> tuple[float, float] | None:
    """Percentile cluster-bootstrap interval of the share of consistent comparisons: prompts are
    drawn with replacement, each resample's share is its consistent comparisons over its
    comparisons (Efron & Tibshirani 1993, ch. 13). When every resample gives the same share (all
    comparisons consistent, or none), the percentile interval would have zero width; it is then
    Wilson's score interval with the number of prompts as n
    (:func:`~autorubric_local.estimates.methods.bounded_mean_interval`, as ``estimate`` does for
    labels that are all equal). None below 2 prompts or with no resamples.

    Parameters
    ----------
    prompt_ids : sequence of str, length n
    consistent : sequence of bool, length n
    n_bootstrap : int, >= 0
    confidence : float in (0, 1)
    seed : int
    """
    names = list(dict.fromkeys(prompt_ids))
    if len(names) < 2 or n_bootstrap == 0:
        return None
    index = {p: k for k, p in enumerate(names)}
    hits = np.zeros(len(names))
    totals = np.zeros(len(names))
    for prompt, value in zip(prompt_ids, consistent, strict=True):
        hits[index[prompt]] += bool(value)
        totals[index[prompt]] += 1
    rng = np.random.default_rng(seed)
    draws = np.stack(list(resample_indices(rng, len(names), n_bootstrap)))
    shares = hits[draws].sum(axis=1) / totals[draws].sum(axis=1)
    low, high = np.quantile(shares, [(1 - confidence) / 2, (1 + confidence) / 2])
    if low == high:  # every resample alike (e.g. every comparison consistent): no zero-width interval
        return bounded_mean_interval(float(hits.sum() / totals.sum()), len(names), 0.0, 1.0, 1 - confidence)
    return float(low), float(high)


def position_bias(comparison: StoredComparison, *, judge_id: str, question: str, n_bootstrap: int = 1000,
                  confidence: float = 0.9, seed: int = 0) -> PositionBias:
    """Position consistency of ``judge_id``'s complete judgments on ``question`` (a question's
    name; not :data:`RUBRIC`), with its interval (module docstring).

    Raises
    ------
    InputError
        An unknown judge or question, or no complete judgment.
    """
    names = [q["name"] for q in comparison.questions]
    if question not in names:
        raise InputError(f"question {question!r} is not among the comparison's {names}")
    pool: Sequence[PairJudgment | NWayJudgment] = comparison.nway or comparison.judgments
    chosen = [j for j in pool if j.judge_id == judge_id and j.question == question and j.complete]
    if not chosen:
        raise InputError(f"judge {judge_id!r}, question {question!r}: no complete judgment")
    if comparison.nway:
        measures, agree = _nway_consistency([j for j in chosen if isinstance(j, NWayJudgment)])
    else:
        verdicts = [j.verdicts for j in chosen if isinstance(j, PairJudgment) and j.verdicts is not None]
        measures, agree = position_consistency(verdicts), [consistent(*v) for v in verdicts]
    interval = consistency_interval([j.prompt_id for j in chosen], agree, n_bootstrap=n_bootstrap,
                                    confidence=confidence, seed=seed)
    return PositionBias(judge_id, question, measures, len({j.prompt_id for j in chosen}),
                        None if interval is None else interval[0], None if interval is None else interval[1],
                        confidence)


def _nway_consistency(chosen: Sequence[NWayJudgment]) -> tuple[PositionConsistency, list[bool]]:
    """Position consistency of N-way judgments: the share whose N rotations all chose the same
    system (the N-slot form of Shi et al.'s measure); among the others' choices, the shares in
    slot 1 (primacy) and in the last slot (recency). Also each judgment's consistency."""
    agree = [len(set(j.chosen)) == 1 for j in chosen]
    slots = [(slot, len(j.systems)) for j, same in zip(chosen, agree, strict=True) if not same
             for slot in j.chosen_slots]
    first = sum(slot == 0 for slot, _ in slots)
    last = sum(slot == n - 1 for slot, n in slots)
    share = sum(agree) / len(chosen)
    return PositionConsistency(len(chosen), share, 1.0 - share, first / len(slots) if slots else None,
                               last / len(slots) if slots else None), agree
