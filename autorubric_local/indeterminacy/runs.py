"""Ratings of graded runs: human labels from the dataset, judge ratings from label probabilities.

The one place that reads runs for the indeterminacy analysis. Rules:

- Items are matched across runs by item id (``ItemResult.item_id``); criteria by key (the
  criterion's name, or ``"criterion <i>"``; :func:`autorubric_local.metrics.extract.criterion_key`).
  A criterion is analysed over the items where the human label and every judge's rating exist
  (the others are counted in the report's warnings): failed items and criteria, votes without
  label probabilities, CANNOT_ASSESS or NA human labels.
- Options: a binary criterion has options ``(MET, UNMET)``; a Maybe criterion
  (:func:`.elicitation.maybe_criterion`) the same two real options, read with
  :func:`.elicitation.elicit_maybe`; a multi-choice criterion its non-NA options in order.
- Judges: every vote of a run (one per judge; a vote over several option orders already holds
  their mean); a judge is named by its run's label, or ``label/judge_id`` when the run has
  several judges. Its probabilities over the options are renormalised (CANNOT_ASSESS and NA
  mass left out) and elicited with :func:`.elicitation.elicit`.
- Human labels: the item's ground truth, one forced-choice label per item. Two runs that give
  the same item different labels are an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from autorubric_local.core.errors import InputError
from autorubric_local.core.types import Criterion, CriterionVerdict
from autorubric_local.indeterminacy.analysis import CriterionRatings
from autorubric_local.indeterminacy.elicitation import (
    ElicitationSettings,
    JudgeRatings,
    elicit,
    elicit_maybe,
    maybe_spec,
)
from autorubric_local.indeterminacy.model import MAX_OPTIONS
from autorubric_local.metrics.extract import criterion_key
from autorubric_local.metrics.types import GradedRun

__all__ = ["RunSource", "collect_ratings", "criterion_options"]

BINARY_OPTIONS = ("MET", "UNMET")


@dataclass(frozen=True)
class RunSource:
    """A graded run to analyse.

    Attributes
    ----------
    label : str
        Names its judges (``label``, or ``label/judge_id`` for a panel).
    result : GradedRun
        E.g. from :func:`autorubric_local.runner.load_result`.
    where : str
        Where it came from, for error messages (e.g. ``"q1.sqlite, run q1-smol"``).
    """

    label: str
    result: GradedRun
    where: str = ""


@dataclass
class _Criterion:
    options: tuple[str, ...]
    maybe: dict[str, str] | None
    human: dict[str, int] = field(default_factory=dict)
    judges: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)


def criterion_options(criterion: Criterion) -> tuple[tuple[str, ...], dict[str, str] | None]:
    """The analysed options of a criterion and, for a Maybe criterion, its labels (module docstring)."""
    if criterion.options is None:
        return BINARY_OPTIONS, None
    spec = maybe_spec(criterion)
    if spec is not None:
        return (spec["positive"], spec["negative"]), spec
    return tuple(o.label for o in criterion.options if not o.na), None


def _human_index(label: object, options: tuple[str, ...], maybe: dict[str, str] | None, where: str,
                 na: tuple[str, ...] = ()) -> int | None:
    """Option index of a ground-truth label; ``None`` for CANNOT_ASSESS, an NA option (``na``:
    the criterion's NA option labels), MAYBE or missing."""
    if label is None:
        return None
    text = label.value if isinstance(label, CriterionVerdict) else str(label)
    if text.strip().upper() == CriterionVerdict.CANNOT_ASSESS.value:
        return None
    if text.strip().lower() in {o.strip().lower() for o in na}:
        return None
    lowered = [o.strip().lower() for o in options]
    if text.strip().lower() in lowered:
        return lowered.index(text.strip().lower())
    if maybe is not None and text.strip().lower() == maybe["maybe"].strip().lower():
        return None
    raise InputError(f"{where}: ground truth {text!r} is not one of the options {list(options)}")


def _judge_vector(probabilities: Mapping[str, float] | None, wanted: tuple[str, ...], where: str) -> np.ndarray | None:
    if probabilities is None:
        return None
    lookup = {k.strip().lower(): v for k, v in probabilities.items()}
    missing = [w for w in wanted if w.strip().lower() not in lookup]
    if missing:
        raise InputError(f"{where}: field label_probabilities has no entry for {missing} (has {list(probabilities)})")
    vector = np.array([lookup[w.strip().lower()] for w in wanted], dtype=float)
    if not np.all(np.isfinite(vector)) or np.any(vector < 0):
        raise InputError(f"{where}: field label_probabilities has a negative or non-finite value: {vector.tolist()}")
    return vector if vector.sum() > 0 else None


def _positive_index(key: str, options: tuple[str, ...], criterion: Criterion,
                    positive: str | Mapping[str, str] | None) -> int:
    chosen = positive.get(key) if isinstance(positive, Mapping) else positive
    if chosen is None:
        if criterion.options is None or maybe_spec(criterion) is not None:
            return 0
        values = [o.value for o in criterion.options if not o.na]
        return int(np.argmax(values))
    lowered = [o.strip().lower() for o in options]
    if chosen.strip().lower() not in lowered:
        if isinstance(positive, Mapping):
            raise InputError(f"criterion {key!r}: positive option {chosen!r} is not one of {list(options)}")
        return 0 if criterion.options is None else int(np.argmax([o.value for o in criterion.options if not o.na]))
    return lowered.index(chosen.strip().lower())


def collect_ratings(sources: Sequence[RunSource], *, positive: str | Mapping[str, str] | None = None,
                    elicitation: ElicitationSettings | None = None,
                    criteria: Sequence[str] | None = None) -> tuple[list[CriterionRatings], list[str]]:
    """Human and judge ratings of every criterion the runs share (module docstring).

    Parameters
    ----------
    sources : sequence of RunSource
        One or several graded runs of the same items.
    positive : str or mapping of criterion key to str, optional
        The positive option: one label for every criterion that has it (others keep their
        default), or one per criterion key (then it must be an option). Default: MET for binary
        and Maybe criteria, the highest-valued option for multi-choice ones.
    elicitation : ElicitationSettings, optional
    criteria : sequence of str, optional
        Only these criterion keys.

    Returns
    -------
    (ratings, warnings)
        One :class:`CriterionRatings` per criterion with at least one compared item, in rubric
        order; warnings name what was left out.

    Raises
    ------
    InputError
        No source, two judges with the same name, a ground-truth label that is not an option,
        runs that disagree on a label, label probabilities missing an option, an unknown
        criterion in ``criteria`` or ``positive``; each names the run, item and field.
    """
    if not sources:
        raise InputError("no runs to analyse")
    elicitation = elicitation or ElicitationSettings()
    found: dict[str, _Criterion] = {}
    kinds: dict[str, Criterion] = {}
    human_from: dict[tuple[str, str], str] = {}
    warnings: list[str] = []
    judge_names: set[str] = set()
    for source in sources:
        where_run = source.where or source.label
        ids = sorted({v.judge_id for r in source.result.item_results if r.report.report
                      for cr in r.report.report for v in [*cr.votes, *cr.multi_choice_votes]})
        names = {j: source.label if len(ids) == 1 else f"{source.label}/{j}" for j in ids}
        clash = judge_names & set(names.values())
        if clash:
            raise InputError(f"{where_run}: judge name {sorted(clash)[0]!r} used twice (give the runs different labels)")
        judge_names |= set(names.values())
        for r in source.result.item_results:
            report, truth = r.report, r.item.ground_truth
            if report.score is None or not report.report:
                continue
            for index, cr in enumerate(report.report):
                key = criterion_key(cr.criterion, index)
                if criteria is not None and key not in criteria:
                    continue
                options, maybe = criterion_options(cr.criterion)
                where = f"{where_run}, item {r.item_id!r}, criterion {key!r}"
                entry = found.get(key)
                if entry is None:
                    entry = found[key] = _Criterion(options, maybe)
                    kinds[key] = cr.criterion
                elif entry.options != options:
                    raise InputError(f"{where}: options {list(options)} differ from another run's {list(entry.options)}")
                elif (entry.maybe is None) != (maybe is None):
                    # A Maybe criterion and a plain binary one share the options (MET, UNMET) but
                    # are read differently: one analysis cannot mix them.
                    raise InputError(f"{where}: a {'Maybe' if maybe else 'plain binary'} criterion, but another run "
                                     f"graded it as a {'Maybe' if entry.maybe else 'plain binary'} one; analyse "
                                     "Maybe and plain runs separately (--run)")
                if truth is not None and index < len(truth):
                    na = tuple(o.label for o in cr.criterion.options or () if o.na)
                    h = _human_index(truth[index], options, maybe, f"{where}, field ground_truth[{index}]", na)
                    if h is not None:
                        if r.item_id in entry.human and entry.human[r.item_id] != h:
                            raise InputError(f"{where}, field ground_truth[{index}]: label {options[h]!r} differs from "
                                             f"{options[entry.human[r.item_id]]!r} in {human_from[(key, r.item_id)]}")
                        entry.human[r.item_id] = h
                        human_from[(key, r.item_id)] = where_run
                if cr.error is not None:
                    continue
                wanted = (*options, maybe["maybe"]) if maybe else options
                for vote in [*cr.votes, *cr.multi_choice_votes]:
                    if vote.error is not None:
                        continue
                    vector = _judge_vector(vote.label_probabilities, wanted, f"{where}, judge {vote.judge_id!r}")
                    if vector is not None:
                        entry.judges.setdefault(names[vote.judge_id], {})[r.item_id] = vector
    if criteria is not None:
        unknown = [c for c in criteria if c not in found]
        if unknown:
            raise InputError(f"criteria not in the runs: {unknown} (have {list(found)})")
    if isinstance(positive, Mapping):
        unknown = [c for c in positive if c not in found]
        if unknown:
            raise InputError(f"positive option given for criteria not in the runs: {unknown}")
    out: list[CriterionRatings] = []
    for key, entry in found.items():
        if not entry.judges:
            warnings.append(f"criterion {key!r}: no judge ratings; left out")
            continue
        if len(entry.options) > MAX_OPTIONS:
            warnings.append(f"criterion {key!r}: {len(entry.options)} options, more than the {MAX_OPTIONS} the "
                            "response-set model handles (2**K - 1 sets); left out")
            continue
        common = [i for i in entry.human if all(i in votes for votes in entry.judges.values())]
        dropped = len(set().union(entry.human, *entry.judges.values())) - len(common)
        if dropped:
            warnings.append(f"criterion {key!r}: {dropped} item(s) without a human label or a rating of every judge left out")
        if not common:
            continue
        k = len(entry.options)
        human = np.zeros((len(common), k))
        human[np.arange(len(common)), [entry.human[i] for i in common]] = 1.0
        judges: dict[str, JudgeRatings] = {}
        for name, votes in entry.judges.items():
            p = np.stack([votes[i] for i in common])
            judges[name] = elicit_maybe(p, elicitation) if entry.maybe else elicit(p, elicitation)
        out.append(CriterionRatings(key, entry.options, _positive_index(key, entry.options, kinds[key], positive),
                                    tuple(common), human, judges))
    return out, warnings
