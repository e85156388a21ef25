"""Align judge verdicts with ground truth: the one place that reads results and datasets.

Alignment rules (documented once here, used by every metric):

- Items: ``EvalResult.item_results[k].item_idx`` indexes ``dataset``. Each index must be in
  range and appear once, with the dataset's submission, otherwise
  :class:`~autorubric_local.core.errors.InputError` (so must a result longer than the dataset).
  Dataset items the result does not cover (an interrupted run), items without ground truth
  and failed items (``report.score is None``) are left out and counted in the warnings.
- Criteria: each item is read against its effective rubric (``dataset.get_item_rubric``).
  Criteria are matched across items by **key**: the criterion's ``name``, or
  ``"criterion <i>"`` (0-based position) when it has none. All criteria sharing a key must
  have the same kind (binary, or the same option labels and scale type), otherwise
  ``InputError``: per-item rubrics with different criteria should name them.
- A criterion judgment whose call failed (``error`` set) is not a verdict: the pair is
  dropped and counted in ``n_excluded``.
- Codes: binary ``UNMET=0, MET=1, CANNOT_ASSESS=2``; multi-choice: the original option
  index in the criterion with a guaranteed NA option
  (:meth:`Criterion.with_guaranteed_na_option`, so an abstain without a selected option
  maps to the appended canonical NA). Any NA option maps to the first NA index.
- The CANNOT_ASSESS / NA modes (:class:`CannotAssessMode`, :class:`NAMode`) are applied
  here, before any metric sees the pairs.
- Off-label mass (:func:`off_label_masses`) is read from the votes of every compared item and
  criterion, before any mode drops the pair: it describes the judge, not the agreement.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import (
    CriterionReport,
    EnsembleCriterionReport,
    EnsembleEvaluationReport,
    EvaluationReport,
)
from autorubric_local.core.types import (
    CannotAssessStrategy,
    Criterion,
    CriterionVerdict,
)
from autorubric_local.metrics.types import (
    CannotAssessMode,
    CriterionType,
    GradedItemResult,
    GradedRun,
    NAMode,
    Scale,
)

if TYPE_CHECKING:  # pragma: no cover
    from autorubric_local.data.dataset import RubricDataset

__all__ = [
    "AlignedData",
    "CriterionPairs",
    "JudgeView",
    "align",
    "binary_p_met",
    "classify_criteria",
    "classify_criterion",
    "criterion_key",
    "extract_all_verdicts_from_report",
    "extract_verdicts_from_report",
    "filter_cannot_assess",
    "filter_na_multi_choice",
    "get_option_value",
    "human_scoring",
    "is_na_option",
    "judge_code",
    "off_label_masses",
    "resolve_ground_truth",
    "verdict_to_binary",
    "verdict_to_string",
]

UNMET, MET, CANNOT_ASSESS = 0, 1, 2
BINARY_LABELS = ["UNMET", "MET", "CANNOT_ASSESS"]
_BINARY_CODE = {CriterionVerdict.UNMET: UNMET, CriterionVerdict.MET: MET,
                CriterionVerdict.CANNOT_ASSESS: CANNOT_ASSESS}

JudgeView = str | None
"""Which judge to read: ``None`` for the ensemble's final verdict, else a ``judge_id``."""


# ---- spec helpers --------------------------------------------------------------------------


Verdict = CriterionVerdict | str | None
"""One verdict as the converters take it: a :class:`CriterionVerdict`, its name, an option
label (:func:`verdict_to_string` only), or ``None`` (no verdict)."""


def _many(verdicts: object) -> bool:
    """Whether a converter's argument is a list of verdicts (AutoRubric's form) rather than one
    verdict: any sequence but a string (a :class:`CriterionVerdict` is a string)."""
    return isinstance(verdicts, Sequence) and not isinstance(verdicts, str)


def _to_binary(verdict: Verdict) -> int | None:
    if verdict is None:
        return None
    try:
        v = CriterionVerdict(verdict.upper() if isinstance(verdict, str) else verdict)
    except ValueError:
        raise InputError(f"not a binary verdict: {verdict!r} (MET, UNMET, CANNOT_ASSESS)") from None
    return {CriterionVerdict.MET: 1, CriterionVerdict.UNMET: 0}.get(v)


@overload
def verdict_to_binary(verdicts: Verdict) -> int | None: ...
@overload
def verdict_to_binary(verdicts: Sequence[Verdict]) -> list[int | None]: ...
def verdict_to_binary(verdicts: Verdict | Sequence[Verdict]) -> int | None | list[int | None]:
    """``1`` for MET, ``0`` for UNMET, ``None`` for CANNOT_ASSESS or a missing verdict.

    Parameters
    ----------
    verdicts : CriterionVerdict, str, None, or a sequence of them
        One verdict (a verdict name ignores case), or a list or tuple of verdicts, as
        AutoRubric 1.6.1 takes them (``autorubric.metrics.verdict_to_binary(verdicts)``).

    Returns
    -------
    int or None, or list of int or None
        One value for one verdict; a list of the same length, in order, for a sequence.
        AutoRubric's list form gives ``0`` for CANNOT_ASSESS (MET vs rest); here it is
        ``None`` in both forms: apply :func:`filter_cannot_assess` first for 0/1 values.

    Raises
    ------
    InputError
        A string that is not a verdict name (MET, UNMET, CANNOT_ASSESS).
    """
    if _many(verdicts):
        return [_to_binary(v) for v in verdicts]  # type: ignore[union-attr]
    return _to_binary(verdicts)  # type: ignore[arg-type]


def _to_string(verdict: Verdict) -> str:
    if verdict is None:
        return "None"
    if isinstance(verdict, CriterionVerdict):
        return verdict.value
    return str(verdict)


@overload
def verdict_to_string(verdicts: Verdict) -> str: ...
@overload
def verdict_to_string(verdicts: Sequence[Verdict]) -> list[str]: ...
def verdict_to_string(verdicts: Verdict | Sequence[Verdict]) -> str | list[str]:
    """A verdict (or option label) as display text; ``"None"`` for a missing verdict.

    Parameters
    ----------
    verdicts : CriterionVerdict, str, None, or a sequence of them
        One verdict, or a list or tuple of them (AutoRubric 1.6.1's form,
        ``autorubric.metrics.verdict_to_string(verdicts)``).

    Returns
    -------
    str, or list of str
        ``"MET"``, ``"UNMET"``, ``"CANNOT_ASSESS"``, a label as given; a list in order for a
        sequence.
    """
    if _many(verdicts):
        return [_to_string(v) for v in verdicts]  # type: ignore[union-attr]
    return _to_string(verdicts)  # type: ignore[arg-type]


def extract_verdicts_from_report(
    report: EnsembleEvaluationReport,
    num_criteria: int | None = None,
) -> list[CriterionVerdict | str | None]:
    """The final verdict of each criterion, in rubric order, as ground truth is written.

    Parameters
    ----------
    report : EnsembleEvaluationReport
    num_criteria : int >= 0, optional
        The rubric's number of criteria (AutoRubric 1.6.1's parameter, required there). When
        given, a report without criteria (a failed item) gives ``num_criteria`` ``None``s,
        and a report of another length is refused. AutoRubric gives UNMET for a failed item's
        criteria and for a multi-choice criterion; a failed judgment is no verdict here.

    Returns
    -------
    list of CriterionVerdict or str or None
        Binary: a :class:`CriterionVerdict`; multi-choice: the selected option label (the
        canonical NA label for an abstain without an option); ``None`` when the criterion's
        judgment failed. Empty for a report without criteria when ``num_criteria`` is not
        given.

    Raises
    ------
    InputError
        ``num_criteria`` is not an integer >= 0, or differs from the report's criteria.
    """
    if num_criteria is not None:
        if isinstance(num_criteria, bool) or not isinstance(num_criteria, (int, np.integer)) or num_criteria < 0:
            raise InputError(f"num_criteria must be an integer >= 0, got {num_criteria!r}")
        if report.report is None:
            return [None] * int(num_criteria)
        if len(report.report) != num_criteria:
            raise InputError(f"the report has {len(report.report)} criteria but num_criteria={num_criteria}")
    out: list[CriterionVerdict | str | None] = []
    for cr in report.report or []:
        if cr.error is not None:
            out.append(None)
        elif cr.final_verdict is not None:
            out.append(cr.final_verdict)
        elif cr.final_multi_choice_verdict is not None:
            effective = cr.criterion.with_guaranteed_na_option()
            code = _mc_code(effective, cr.final_multi_choice_verdict.selected_index,
                            cr.final_multi_choice_verdict.na)
            out.append(effective.options[code].label if effective.options else None)
        else:
            out.append(None)
    return out


def filter_cannot_assess(
    pred_verdicts: Sequence[Verdict],
    true_verdicts: Sequence[Verdict],
    mode: CannotAssessMode | str = CannotAssessMode.EXCLUDE,
) -> tuple[list[str], list[str]]:
    """Apply a CANNOT_ASSESS mode to paired binary verdict lists (AutoRubric 1.6.1,
    ``autorubric.metrics.filter_cannot_assess``, in its argument order: the judge's, then the
    ground truth's).

    Parameters
    ----------
    pred_verdicts, true_verdicts : sequence of CriterionVerdict or str or None, same length
        The judge's and the ground truth's verdicts, pair ``k`` at position ``k``. ``None``
        entries (missing verdicts) are always dropped, with their pair. The mode treats both
        sides alike, so the result does not depend on which list comes first: each list comes
        back in the position it was given.
    mode : CannotAssessMode or str, default "exclude"
        EXCLUDE drops pairs with CANNOT_ASSESS on either side; AS_UNMET turns it into UNMET on
        both sides; AS_CATEGORY keeps it.

    Returns
    -------
    (pred, true) : two lists of verdict names (upper case), same length

    Raises
    ------
    InputError
        Lists of different lengths, or an unknown mode.
    """
    mode = _ca_mode(mode)
    if len(pred_verdicts) != len(true_verdicts):
        raise InputError(f"pred_verdicts and true_verdicts differ in length: "
                         f"{len(pred_verdicts)} != {len(true_verdicts)}")
    out_p: list[str] = []
    out_t: list[str] = []
    ca = CriterionVerdict.CANNOT_ASSESS.value
    for p, t in zip(pred_verdicts, true_verdicts, strict=True):
        if p is None or t is None:
            continue
        ps, ts = _to_string(p).upper(), _to_string(t).upper()
        if mode is CannotAssessMode.EXCLUDE and ca in (ps, ts):
            continue
        if mode is CannotAssessMode.AS_UNMET:
            ps = "UNMET" if ps == ca else ps
            ts = "UNMET" if ts == ca else ts
        out_p.append(ps)
        out_t.append(ts)
    return out_p, out_t


def classify_criterion(criterion: Criterion) -> CriterionType:
    """The metrics family of a criterion (AutoRubric 1.6.1,
    ``autorubric.metrics.classify_criterion``).

    Returns
    -------
    {"binary", "ordinal", "nominal"}
        ``"binary"`` for a criterion without options (MET/UNMET/CANNOT_ASSESS), else its
        ``scale_type``: ordinal options have an order (weighted kappa, rank correlations,
        adjacent accuracy apply), nominal ones do not.
    """
    if criterion.options is None:
        return "binary"
    return "ordinal" if criterion.scale_type == "ordinal" else "nominal"


def classify_criteria(criteria: Iterable[Criterion]) -> list[CriterionType]:
    """:func:`classify_criterion` of each criterion, in order (a list, or a ``Rubric``)."""
    return [classify_criterion(c) for c in criteria]


def _option_index(criterion: Criterion, index: object, what: str) -> int:
    """``index`` checked as an option index of the multi-choice ``criterion``."""
    name = criterion.name or criterion.requirement[:40]
    if criterion.options is None:
        raise InputError(f"criterion {name!r} is binary: it has no options ({what})")
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise InputError(f"criterion {name!r}: option index must be an integer, got {index!r}")
    if not 0 <= int(index) < len(criterion.options):
        raise InputError(f"criterion {name!r}: option index {index} out of range "
                         f"[0, {len(criterion.options)})")
    return int(index)


def get_option_value(criterion: Criterion, index: int) -> float:
    """Score value in [0, 1] of option ``index`` (0-based) of a multi-choice criterion.

    Raises
    ------
    InputError
        (a ``ValueError``, as in AutoRubric) The criterion is binary, or ``index`` is not an
        integer in ``[0, len(options))``.
    """
    i = _option_index(criterion, index, "no option value")
    assert criterion.options is not None
    return criterion.options[i].value


def is_na_option(criterion: Criterion, index: int) -> bool:
    """Whether option ``index`` (0-based) of a multi-choice criterion is an NA option.

    Raises
    ------
    InputError
        As :func:`get_option_value`.
    """
    i = _option_index(criterion, index, "no NA option")
    assert criterion.options is not None
    return criterion.options[i].na


def resolve_ground_truth(
    ground_truth: Sequence[CriterionVerdict | str | int],
    criteria: Sequence[Criterion],
) -> list[CriterionVerdict | int]:
    """Ground truth in the form the metrics compare: a verdict per binary criterion, an option
    index per multi-choice one (AutoRubric 1.6.1, ``autorubric.metrics.resolve_ground_truth``).

    Parameters
    ----------
    ground_truth : sequence of CriterionVerdict, str or int, length ``len(criteria)``
        Binary: a :class:`CriterionVerdict` or its name (``"MET"``, ``"UNMET"``,
        ``"CANNOT_ASSESS"``). Multi-choice: an option label (matched ignoring case and
        surrounding white space, :meth:`Criterion.find_option_by_label`) or a 0-based option
        index.
    criteria : sequence of Criterion
        The rubric's criteria (a list, or ``Rubric.rubric``), in ground-truth order.

    Returns
    -------
    list of CriterionVerdict or int
        One entry per criterion: the verdict (binary) or the option index (multi-choice), in
        the criterion's own options (an NA label gives the NA option's index).

    Raises
    ------
    InputError
        (a ``ValueError``, as in AutoRubric) Lengths differ; a binary value that is not a
        verdict name; a label that is not an option; an index out of range; a value of another
        type (a boolean is not an index).
    """
    from autorubric_local.data.validation import parse_ground_truth_value

    if len(ground_truth) != len(criteria):
        raise InputError(f"ground truth has {len(ground_truth)} value(s) but there are "
                         f"{len(criteria)} criteria")
    out: list[CriterionVerdict | int] = []
    for j, (value, criterion) in enumerate(zip(ground_truth, criteria, strict=True)):
        if criterion.options is not None and not isinstance(value, str):
            out.append(_option_index(criterion, value, f"ground truth [{j}]"))
            continue
        parsed = parse_ground_truth_value(value, criterion, j, where=f"ground truth [{j}]")
        out.append(parsed if isinstance(parsed, CriterionVerdict)
                   else criterion.find_option_by_label(parsed))
    return out


def extract_all_verdicts_from_report(
    report: EvaluationReport | EnsembleEvaluationReport,
    criteria: Sequence[Criterion],
) -> list[CriterionVerdict | int | None]:
    """The verdict of every criterion of a report, binary and multi-choice (AutoRubric 1.6.1,
    ``autorubric.metrics.extract_all_verdicts_from_report``).

    Parameters
    ----------
    report : EvaluationReport or EnsembleEvaluationReport
        One grader's report (``verdict`` / ``multi_choice_verdict`` per criterion) or an
        ensemble's (``final_verdict`` / ``final_multi_choice_verdict``).
    criteria : sequence of Criterion
        The rubric's criteria, in report order.

    Returns
    -------
    list of CriterionVerdict or int or None, length ``len(criteria)``
        Binary: the :class:`CriterionVerdict`. Multi-choice: the selected option's 0-based
        index; an abstain without a selected option is the index of the criterion's NA option
        in :meth:`Criterion.with_guaranteed_na_option` (``len(options)`` when the criterion
        defines none, as AutoRubric's grader appends one). ``None`` when there is no verdict:
        the criterion's judgment failed (``error`` set), or the report has no criteria (a
        failed item). AutoRubric gives UNMET for a binary criterion of a report without
        criteria; a failed judgment is not a verdict here.

    Raises
    ------
    InputError
        The report's criterion list and ``criteria`` differ in length.
    """
    rows: Sequence[CriterionReport | EnsembleCriterionReport] | None = report.report
    if rows is None:
        return [None] * len(criteria)
    if len(rows) != len(criteria):
        raise InputError(f"the report has {len(rows)} criteria but {len(criteria)} were given")
    out: list[CriterionVerdict | int | None] = []
    for cr, criterion in zip(rows, criteria, strict=True):
        if cr.error is not None:
            out.append(None)
            continue
        if isinstance(cr, EnsembleCriterionReport):
            verdict, choice = cr.final_verdict, cr.final_multi_choice_verdict
        else:
            verdict, choice = cr.verdict, cr.multi_choice_verdict
        if criterion.options is None:
            out.append(verdict)
        elif choice is None:
            out.append(None)
        elif choice.selected_index is not None and not choice.na:
            out.append(choice.selected_index)
        else:  # an abstain: the NA option it selected, else the first (maybe appended) NA option
            effective = criterion.with_guaranteed_na_option()
            assert effective.options is not None
            picked = choice.selected_index
            chose_na = picked is not None and 0 <= picked < len(effective.options) and effective.options[picked].na
            out.append(picked if chose_na else effective.na_option_index)
    return out


def filter_na_multi_choice(
    pred_indices: Sequence[int],
    true_indices: Sequence[int],
    criterion: Criterion,
    mode: NAMode | str = NAMode.EXCLUDE,
) -> tuple[list[int], list[int], int, int, int]:
    """Apply an NA mode to paired option indices of one multi-choice criterion (AutoRubric's
    1.6.1, ``autorubric.metrics.filter_na_multi_choice``; the multi-choice analogue of
    :func:`filter_cannot_assess`).

    Parameters
    ----------
    pred_indices, true_indices : sequence of int, shape (n_pairs,)
        Judge and ground-truth option indices into ``criterion.options``.
    criterion : Criterion
        The multi-choice criterion; every option with ``na=True`` is NA. Pass
        :meth:`Criterion.with_guaranteed_na_option` when an index may be the appended NA.
    mode : NAMode or str, default "exclude"
        ``exclude`` drops a pair with NA on either side; ``as_unmet`` maps NA to
        :meth:`Criterion.worst_scored_option` (the score-minimising scored option, weight-sign
        aware) on both sides; ``as_category`` keeps NA as one more class.

    Returns
    -------
    (pred, true, na_agreement, na_false_positive, na_false_negative)
        ``pred``/``true``: the pairs after the mode, in order. The counts do not depend on
        the mode: pairs where both sides are NA, the judge alone said NA, the ground truth
        alone did. A criterion without NA options returns the pairs unchanged and zeros.

    Raises
    ------
    InputError
        (a ``ValueError``) An unknown mode; lists of different lengths; an index out of
        range; a binary criterion; ``as_category`` on an ordinal criterion with an NA option
        (NA has no position on the scale, so a weighted kappa over the result would give it
        the distance of its index; ``compute_metrics`` instead keeps NA only in the unweighted
        figures of such a criterion).
    """
    na = _na_mode(mode)
    if criterion.options is None:
        raise InputError(f"criterion {criterion.name!r} is binary: it has no NA options "
                         "(filter_cannot_assess applies the CANNOT_ASSESS modes)")
    if len(pred_indices) != len(true_indices):
        raise InputError(f"pred_indices and true_indices differ in length: "
                         f"{len(pred_indices)} != {len(true_indices)}")
    pred = [_option_index(criterion, p, "NA filter") for p in pred_indices]
    true = [_option_index(criterion, t, "NA filter") for t in true_indices]
    is_na = [o.na for o in criterion.options]
    if not any(is_na):
        return pred, true, 0, 0, 0
    if na is NAMode.AS_CATEGORY and criterion.scale_type == "ordinal":
        raise InputError(f"criterion {criterion.name!r}: na_mode 'as_category' is refused for an "
                         "ordinal criterion with an NA option (NA has no position on the scale); "
                         "use 'exclude' or 'as_unmet'")
    worst = criterion.worst_scored_option()[0] if na is NAMode.AS_UNMET else -1
    out_p: list[int] = []
    out_t: list[int] = []
    both = judge_only = truth_only = 0
    for p, t in zip(pred, true, strict=True):
        both += is_na[p] and is_na[t]
        judge_only += is_na[p] and not is_na[t]
        truth_only += is_na[t] and not is_na[p]
        if na is NAMode.EXCLUDE and (is_na[p] or is_na[t]):
            continue
        if na is NAMode.AS_UNMET:
            p, t = (worst if is_na[p] else p), (worst if is_na[t] else t)
        out_p.append(p)
        out_t.append(t)
    return out_p, out_t, both, judge_only, truth_only


# ---- aligned pairs ---------------------------------------------------------------------------


@dataclass
class CriterionPairs:
    """Aligned (human, judge) pairs of one criterion key, after the CA/NA mode.

    ``item_pos`` indexes :attr:`AlignedData.item_ids` (shape (n_pairs,)); ``human``/``judge``
    are integer codes into ``labels``. Ordinal criteria also carry ``position``
    (code -> scale position, -1 for NA) and ``human_value``/``judge_value`` (option values;
    the judge's continuous ensemble value when it has one; NaN for NA).
    ``cal_*`` hold the (item, human 0/1, P(MET)) triples for calibration (binary only).
    ``off_label`` holds the known off-label masses of the criterion's votes
    (:func:`off_label_masses`), one per vote, in item order. ``raw`` counts the judged pairs
    by ``(human, judge)`` code **before** the CA/NA mode (failed judgments left out);
    ``n_absent`` counts the compared items whose report of the criterion has no vote at all
    of the viewed judge (always 0 for the ensemble view).
    """

    key: str
    index: int
    criterion: Criterion
    scale: Scale
    labels: list[str]
    item_pos: list[int] = field(default_factory=list)
    human: list[int] = field(default_factory=list)
    judge: list[int] = field(default_factory=list)
    human_value: list[float] = field(default_factory=list)
    judge_value: list[float] = field(default_factory=list)
    n_excluded: int = 0
    position: list[int] = field(default_factory=list)
    cal_item_pos: list[int] = field(default_factory=list)
    cal_y: list[int] = field(default_factory=list)
    cal_p: list[float] = field(default_factory=list)
    off_label: list[float] = field(default_factory=list)
    raw: dict[tuple[int, int], int] = field(default_factory=dict)
    n_absent: int = 0

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(item_pos, human, judge)`` as integer arrays of shape (n_pairs,)."""
        return (np.asarray(self.item_pos, dtype=int), np.asarray(self.human, dtype=int),
                np.asarray(self.judge, dtype=int))


@dataclass
class AlignedData:
    """Everything the metrics need, for one judge view.

    ``human_score``/``judge_score``: item scores over the items in ``score_item_pos``.
    """

    item_ids: list[str]
    criteria: list[CriterionPairs]
    score_item_pos: list[int] = field(default_factory=list)
    human_score: list[float] = field(default_factory=list)
    judge_score: list[float] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def criterion_key(criterion: Criterion, index: int) -> str:
    """The alignment key of a criterion: its name, else ``"criterion <index>"``."""
    return criterion.name if criterion.name else f"criterion {index}"


def _ca_mode(mode: CannotAssessMode | str) -> CannotAssessMode:
    try:
        return CannotAssessMode(mode)
    except ValueError:
        allowed = [m.value for m in CannotAssessMode]
        raise InputError(f"cannot_assess must be one of {allowed}, got {mode!r}") from None


def _na_mode(mode: NAMode | str) -> NAMode:
    try:
        return NAMode(mode)
    except ValueError:
        allowed = [m.value for m in NAMode]
        raise InputError(f"na_mode must be one of {allowed}, got {mode!r}") from None


def _mc_code(effective: Criterion, selected_index: int | None, na: bool) -> int:
    na_index = effective.na_option_index
    assert na_index is not None and effective.options is not None
    if na or selected_index is None:
        return na_index
    if not 0 <= selected_index < len(effective.options):
        raise InputError(f"criterion {effective.name!r}: selected index {selected_index} out of range")
    return na_index if effective.options[selected_index].na else selected_index


def _signature(criterion: Criterion) -> tuple[object, ...]:
    if criterion.options is None:
        return ("binary",)
    return (criterion.scale_type, tuple(o.label for o in criterion.options))


def binary_p_met(probabilities: dict[str, float] | None) -> float | None:
    """P(MET) renormalised over MET and UNMET: ``p_MET / (p_MET + p_UNMET)``; ``None`` when
    there are no probabilities or both are 0."""
    if not probabilities:
        return None
    met, unmet = probabilities.get("MET", 0.0), probabilities.get("UNMET", 0.0)
    return met / (met + unmet) if met + unmet > 0 else None


def judge_code(
    cr: EnsembleCriterionReport, effective: Criterion, judge: JudgeView
) -> tuple[int, float | None, float | None] | None:
    """The judge's code for one criterion report, with its continuous value (ordinal) and
    P(MET) (binary); ``None`` when there is no usable verdict (failed call, judge absent)."""
    if judge is None:
        if cr.error is not None:
            return None
        if cr.final_verdict is not None:
            return _BINARY_CODE[cr.final_verdict], None, binary_p_met(cr.label_probabilities)
        mc = cr.final_multi_choice_verdict
        if mc is None:
            return None
        code = _mc_code(effective, mc.selected_index, mc.na)
        value = None if effective.options[code].na else mc.aggregated_value  # type: ignore[index]
        return code, value, None
    for vote in cr.votes:
        if vote.judge_id == judge and vote.error is None:
            return _BINARY_CODE[vote.verdict], None, binary_p_met(vote.label_probabilities)
    for mvote in cr.multi_choice_votes:
        if mvote.judge_id == judge and mvote.error is None:
            code = _mc_code(effective, mvote.selected_index, mvote.na)
            value = None if effective.options[code].na else mvote.value  # type: ignore[index]
            return code, value, None
    return None


def off_label_masses(cr: EnsembleCriterionReport, judge: JudgeView) -> list[float]:
    """The known ``off_label_mass`` values of a criterion report's votes, in vote order: every
    judge's (``judge=None``) or that judge's only; votes without one (failed, or a backend
    that does not report it) are left out."""
    votes = [*cr.votes, *cr.multi_choice_votes]
    return [v.off_label_mass for v in votes
            if v.off_label_mass is not None and (judge is None or v.judge_id == judge)]


def human_code(effective: Criterion, truth: CriterionVerdict | str) -> int:
    """The code of one ground-truth value (see the module docstring)."""
    if effective.options is None:
        return _BINARY_CODE[CriterionVerdict(truth)]
    return _mc_code(effective, effective.find_option_by_label(str(truth)), False)


def _new_pairs(key: str, index: int, criterion: Criterion) -> CriterionPairs:
    scale = classify_criterion(criterion)
    if criterion.options is None:
        return CriterionPairs(key, index, criterion, scale, list(BINARY_LABELS))
    effective = criterion.with_guaranteed_na_option()
    assert effective.options is not None
    pairs = CriterionPairs(key, index, effective, scale, [o.label for o in effective.options])
    scored = sorted((o.value, i) for i, o in enumerate(effective.options) if not o.na)
    position = [-1] * len(effective.options)
    for rank, (_, i) in enumerate(scored):
        position[i] = rank
    pairs.position = position
    return pairs


def _apply_mode(pairs: CriterionPairs, h: int, j: int, ca: CannotAssessMode,
                na: NAMode) -> tuple[int, int] | None:
    crit = pairs.criterion
    if crit.options is None:
        if ca is CannotAssessMode.EXCLUDE and CANNOT_ASSESS in (h, j):
            return None
        if ca is CannotAssessMode.AS_UNMET:
            h, j = (UNMET if h == CANNOT_ASSESS else h), (UNMET if j == CANNOT_ASSESS else j)
        return h, j
    na_index = crit.na_option_index
    if na is NAMode.EXCLUDE and na_index in (h, j):
        return None
    if na is NAMode.AS_UNMET:
        worst, _ = crit.worst_scored_option()
        h, j = (worst if h == na_index else h), (worst if j == na_index else j)
    return h, j


def human_scoring(eval_result: GradedRun) -> dict[str, Any]:
    """Scoring settings for the ground truth: the run's own (``EvalResult.grader_settings``),
    so that human and judge item scores follow the same rules (``normalize``, CANNOT_ASSESS
    strategy and partial credit); the defaults when the run did not record them."""
    settings = getattr(eval_result, "grader_settings", None) or {}
    cannot = settings.get("cannot_assess_config") or {}
    return {
        "normalize": bool(settings.get("normalize", True)),
        "cannot_assess_strategy": CannotAssessStrategy(cannot.get("strategy", "skip")),
        "partial_credit": float(cannot.get("partial_credit", 0.5)),
    }


def align(
    eval_result: GradedRun,
    dataset: RubricDataset,
    judge: JudgeView = None,
    cannot_assess: CannotAssessMode | str = CannotAssessMode.EXCLUDE,
    na_mode: NAMode | str = NAMode.EXCLUDE,
    score_of: Callable[[EnsembleEvaluationReport], float | None] | None = None,
) -> AlignedData:
    """Pair every judged criterion and item score with its ground truth.

    Parameters
    ----------
    eval_result : GradedRun
        A graded run, e.g. ``EvalResult``.
    dataset : RubricDataset
        The dataset the run graded, with ground truth.
    judge : str or None
        ``None``: the final (ensemble) verdicts and ``report.score``; a judge id: that
        judge's votes and ``report.judge_scores[judge]``.
    cannot_assess, na_mode : CannotAssessMode, NAMode or their string values

    Raises
    ------
    InputError
        Result and dataset do not match, an unknown mode, or criteria sharing a key differ.
    """
    ca, na = _ca_mode(cannot_assess), _na_mode(na_mode)
    scoring = human_scoring(eval_result)
    results = eval_result.item_results
    n_results = len(results)
    if n_results > len(dataset):
        raise InputError(
            f"the result has {n_results} items but the dataset has {len(dataset)}; "
            "pass the dataset the run graded"
        )
    if not isinstance(results, (list, tuple)):
        try:  # a stream (a stored run read a page at a time): one pass, holding one item at a time
            return _align_ordered(eval_result, results, n_results, dataset, judge, ca, na, score_of, scoring)
        except _OutOfOrder:
            pass
    listed = list(results)  # in memory already, or a stream out of item order
    seen: set[int] = set()
    for r in listed:
        _check_item(r, dataset, seen)
        seen.add(r.item_idx)
    return _align_ordered(eval_result, sorted(listed, key=lambda r: r.item_idx), n_results, dataset,
                          judge, ca, na, score_of, scoring)


def _check_item(r: GradedItemResult, dataset: RubricDataset, seen: set[int]) -> None:
    """Refuse an item outside the dataset, seen before, or with another submission."""
    if not 0 <= r.item_idx < len(dataset) or r.item_idx in seen:
        raise InputError(f"result item_idx {r.item_idx} is out of range or repeated")
    if r.item.submission != dataset[r.item_idx].submission:
        raise InputError(f"item {r.item_idx}: the result's submission differs from the dataset's")


class _OutOfOrder(Exception):
    """A streamed result not in ``item_idx`` order: :func:`align` sorts it and starts again."""


def _align_ordered(
    eval_result: GradedRun,
    results: Iterable[GradedItemResult],
    n_results: int,
    dataset: RubricDataset,
    judge: JudgeView,
    ca: CannotAssessMode,
    na: NAMode,
    score_of: Callable[[EnsembleEvaluationReport], float | None] | None,
    scoring: dict[str, Any],
) -> AlignedData:
    """:func:`align` over ``results`` in ``item_idx`` order, in one pass.

    Every item is validated (range, repeats, submission) as it comes; the first error the
    pairing raises is held back until all items have been validated, so a result that does not
    match its dataset is refused with the same message as when every item was checked first.
    """
    state = _Pairing(AlignedData(item_ids=[], criteria=[]), judge, ca, na, score_of, scoring)
    last = -1
    failure: InputError | None = None
    for r in results:
        if 0 <= r.item_idx < last:
            raise _OutOfOrder  # or repeated from earlier: told apart in the given order
        _check_item(r, dataset, {last})
        last = r.item_idx
        if failure is None:
            try:
                state.add(r, dataset)
            except InputError as exc:  # raised below once every item is validated
                failure = exc
    if failure is not None:
        raise failure
    return state.finish(eval_result, n_results, len(dataset))


@dataclass
class _Pairing:
    """The pairs of :func:`align` as items are added in ``item_idx`` order."""

    data: AlignedData
    judge: JudgeView
    ca: CannotAssessMode
    na: NAMode
    score_of: Callable[[EnsembleEvaluationReport], float | None] | None
    scoring: dict[str, Any]
    by_key: dict[str, CriterionPairs] = field(default_factory=dict)
    signatures: dict[str, tuple[object, ...]] = field(default_factory=dict)
    n_no_truth: int = 0
    n_failed: int = 0
    n_failed_criteria: int = 0
    n_absent: int = 0

    def add(self, r: GradedItemResult, dataset: RubricDataset) -> None:
        data, judge, ca, na = self.data, self.judge, self.ca, self.na
        by_key, signatures = self.by_key, self.signatures
        truth = dataset[r.item_idx].ground_truth
        if truth is None:
            self.n_no_truth += 1
            return
        report = r.report
        if report.score is None or report.report is None:
            self.n_failed += 1
            return
        rubric = dataset.get_item_rubric(r.item_idx)
        if len(report.report) != len(rubric) or len(truth) != len(rubric):
            raise InputError(
                f"item {r.item_idx}: rubric has {len(rubric)} criteria, report "
                f"{len(report.report)}, ground truth {len(truth)}"
            )
        pos = len(data.item_ids)
        data.item_ids.append(r.item_id or f"item-{r.item_idx}")
        for index, (criterion, cr, gt) in enumerate(zip(rubric, report.report, truth, strict=True)):
            key = criterion_key(criterion, index)
            sig = _signature(criterion)
            if key not in by_key:
                by_key[key] = _new_pairs(key, index, criterion)
                signatures[key] = sig
                data.criteria.append(by_key[key])
            elif signatures[key] != sig:
                raise InputError(
                    f"item {r.item_idx}: criterion {key!r} differs from an earlier item's "
                    "criterion of the same key; name per-item criteria distinctly"
                )
            pairs = by_key[key]
            pairs.off_label.extend(off_label_masses(cr, judge))
            h = human_code(pairs.criterion, gt)
            got = judge_code(cr, pairs.criterion, judge)
            if got is None:
                pairs.n_excluded += 1
                if judge is not None and not any(v.judge_id == judge for v in (*cr.votes, *cr.multi_choice_votes)):
                    pairs.n_absent += 1  # not consulted on it (a cascade's escalation judge)
                    self.n_absent += 1
                else:
                    self.n_failed_criteria += 1
                continue
            j, j_value, p_met = got
            pairs.raw[(h, j)] = pairs.raw.get((h, j), 0) + 1
            if p_met is not None and h != CANNOT_ASSESS:
                pairs.cal_item_pos.append(pos)
                pairs.cal_y.append(int(h == MET))
                pairs.cal_p.append(p_met)
            elif p_met is not None and ca is CannotAssessMode.AS_UNMET:
                pairs.cal_item_pos.append(pos)
                pairs.cal_y.append(0)
                pairs.cal_p.append(p_met)
            mapped = _apply_mode(pairs, h, j, ca, na)
            if mapped is None:
                pairs.n_excluded += 1
                continue
            mh, mj = mapped
            pairs.item_pos.append(pos)
            pairs.human.append(mh)
            pairs.judge.append(mj)
            if pairs.scale == "ordinal":
                opts = pairs.criterion.options
                assert opts is not None
                pairs.human_value.append(np.nan if opts[mh].na else opts[mh].value)
                if opts[mj].na:
                    pairs.judge_value.append(np.nan)
                else:
                    remapped = mj != j
                    pairs.judge_value.append(
                        opts[mj].value if remapped or j_value is None else j_value)
        score = report.score if self.score_of is None else self.score_of(report)
        if score is None:
            return
        rubric_score = dataset.compute_weighted_score(list(truth), rubric=rubric, **self.scoring)
        data.score_item_pos.append(pos)
        data.human_score.append(float(rubric_score))
        data.judge_score.append(float(score))

    def finish(self, eval_result: GradedRun, n_results: int, n_dataset: int) -> AlignedData:
        """The pairs, with the warnings on what was left out."""
        data = self.data
        who = "the ensemble" if self.judge is None else f"judge {self.judge!r}"
        settings = getattr(eval_result, "grader_settings", None) or {}
        if settings.get("length_penalty"):
            data.warnings.append("judge scores include the grader's length penalty; human scores do not")
        if n_results < n_dataset:
            data.warnings.append(f"{n_dataset - n_results} dataset item(s) not in the result "
                                 "(not graded) left out")
        if self.n_no_truth:
            data.warnings.append(f"{self.n_no_truth} item(s) without ground truth left out")
        if self.n_failed:
            data.warnings.append(f"{self.n_failed} failed item(s) left out ({who})")
        if self.n_absent:
            data.warnings.append(f"{self.n_absent} criterion judgment(s) where {who} gave no vote "
                                 "(not consulted) left out")
        if self.n_failed_criteria:
            data.warnings.append(
                f"{self.n_failed_criteria} criterion judgment(s) without a verdict (failed call) "
                f"left out ({who})"
            )
        return data
