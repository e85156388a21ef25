"""What a run's report shows, read from the store into one plain dict (no HTML here).

:func:`report_context` gathers, for one stored run: its settings, the item score
distribution, each criterion's verdict rates, agreement with the ground truth (when any item has
it; :func:`autorubric_local.metrics.compute_metrics`), the position-bias sweeps stored in the same
database, and one entry per item with its submission and every judgment (verdict, probability,
explanation, and the exact prompt where the store keeps it). Figures are PNG data URIs
(:mod:`.figures`). :mod:`.html` renders the dict.

Human labels (:mod:`.labels`): the dataset's ground truth or labels imported by ``estimate
--labels`` / ``metrics --labels``, one source chosen as :func:`.labels.choose_labels` says. The
agreement figures are :func:`~autorubric_local.metrics.compute_metrics`'s on that source, and
each item's criteria carry the human label beside the judges' final verdict.

Off-label mass: each criterion counts its judgments whose backend reported an off-label mass
(the first-step probability outside the allowed labels), their mean, and those above the
threshold (:data:`~autorubric_local.core.reports.OFF_LABEL_THRESHOLD`, as ``grade`` flags
them); the summary warns about every criterion with a judgment above it.

Verdict rates are counted over judgment rows: every judge's vote in every option order is one
judgment. A criterion's rate of a label is ``count(label) / answered``, where ``answered`` is
its judgments without an error; failed judgments are counted apart (``errors``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autorubric_local.core.errors import AutorubricError, InputError
from autorubric_local.core.reports import OFF_LABEL_THRESHOLD
from autorubric_local.report.figures import metrics_figures, score_histogram
from autorubric_local.report.labels import LabelChoice, LabelledItems, choose_labels, page_labels, relabelled
from autorubric_local.report.sweeps import sweep_sections
from autorubric_local.store import Store

__all__ = ["BINARY_LABELS", "ITEMS_PER_PAGE", "criterion_rates", "find_report_run", "item_page", "off_label_warnings",
           "report_context", "report_summary"]

BINARY_LABELS: tuple[str, ...] = ("MET", "UNMET", "CANNOT_ASSESS")
"""Verdict labels of a binary criterion, in the order the report lists them."""

ITEMS_PER_PAGE = 100
"""Items on one page of a report: a run of 10^5 items is 1,000 pages of 100, each small enough
for a browser, instead of one page holding every item."""

GRADER_HIDDEN: frozenset[str] = frozenset({"judges"})
"""Keys of the stored grader description not listed among the settings (judges have a table)."""


def report_context(
    store: Store, run: str, db_path: str | Path, *, page: int = 1, per_page: int | None = None,
    label_source: str | None = None, off_label_threshold: float = OFF_LABEL_THRESHOLD,
) -> dict[str, Any]:
    """Everything the report of ``run`` shows, as a plain dict: the run's summary and one page
    of its items (:func:`report_summary` and :func:`item_page`).

    Parameters
    ----------
    store : Store
        The open results database.
    run : str
        A run name (the latest run of that name) or id.
    db_path : str or Path
        The database file, named in the report and in errors.
    page : int, default 1
        Which page of items (1-based).
    per_page : int or None
        Items a page; default :data:`ITEMS_PER_PAGE`.
    label_source : str or None
        The human labels to compare with (:func:`.labels.choose_labels`): ``"dataset"`` or a
        stored source; default the dataset's ground truth, else the run's stored labels.
    off_label_threshold : float in [0, 1], default 0.5
        Off-label mass above which a judgment is counted in the warnings.

    Returns
    -------
    dict
        Keys ``run`` (settings), ``scores`` (distribution), ``criteria`` (verdict rates, see
        :func:`criterion_rates`), ``labels`` (``source`` and ``description`` of the human
        labels; None without any), ``agreement`` (None without labels), ``warnings`` (lines
        for the summary: :func:`off_label_warnings`), ``off_label_threshold``, ``sweeps``,
        ``prompts_stored`` (whether this store can give prompts at all), ``show_judges``
        (several judges or option orders voted), ``show_explanations`` (some judgment has an
        explanation), ``db_path``, ``page`` (``number``, ``count``, ``per_page``, ``first``
        and ``last`` item positions, 0-based) and ``items`` (that page's items, in item order).

    Raises
    ------
    InputError
        No run named ``run`` in the database (the message names the database, the run and
        the runs it holds), a label source the run does not have, a page out of range, or
        stored rows that no longer validate.
    """
    row = find_report_run(store, run, db_path)
    summary = report_summary(store, row, db_path, per_page=per_page, label_source=label_source,
                             off_label_threshold=off_label_threshold)
    return {**summary, **item_page(store, row, page, summary["page"], labels=summary["labels"])}


def find_report_run(store: Store, run: str, db_path: str | Path) -> dict[str, Any]:
    """The stored run row of ``run`` (a name or id).

    Raises
    ------
    InputError
        No such run (the message names the database and lists its runs).
    """
    row = store.find_run(run)
    if row is None:
        names = ", ".join(repr(name) for name in store.run_names()) or "none"
        raise InputError(f"{db_path}: no run named {run!r} (runs: {names})")
    return row


def report_summary(
    store: Store, row: Mapping[str, Any], db_path: str | Path, *, per_page: int | None = None,
    label_source: str | None = None, off_label_threshold: float = OFF_LABEL_THRESHOLD,
) -> dict[str, Any]:
    """Every key of :func:`report_context` but ``items``, with ``page`` of page 1.

    Memory stays bounded by the number of items' scores, not their texts or judgments: item
    rows are read without their texts, and judgments are streamed through
    :func:`criterion_rates` and counted as they come.
    """
    per_page = ITEMS_PER_PAGE if per_page is None else per_page
    if per_page < 1:
        raise InputError(f"report: items per page must be >= 1, got {per_page}")
    items = list(store.db.execute(
        "select score, error, report_json is not null as done from items where run_id = ? order by item_index",
        [row["id"]],
    ).fetchall())
    scores = [float(score) for score, _, _ in items if score is not None]
    tally = _JudgmentTally()
    columns = "judge_id, permutation_index, criterion_index, criterion_name, verdict, selected_label, error, " \
              "explanation is not null and explanation != '' as explained, off_label_mass"
    judgments = tally.count(store.db.execute(f"select {columns} from judgments where run_id = ?", [row["id"]]))
    criteria = criterion_rates(judgments, _rubric(row), off_label_threshold=off_label_threshold)
    labels = choose_labels(store, row, label_source)
    return {
        "db_path": str(db_path),
        "run": run_settings(row, [{"report_json": 1 if done else None, "error": error} for _, error, done in items],
                            (), counts=(tally.judgments, tally.failed)),
        "scores": {
            "n": len(scores),
            "mean": sum(scores) / len(scores) if scores else None,
            "min": min(scores) if scores else None,
            "max": max(scores) if scores else None,
            "figure": score_histogram(scores) if scores else None,
        },
        "criteria": criteria,
        "labels": None if labels is None else {"source": labels.source, "description": labels.describe()},
        "agreement": None if labels is None else agreement_section(store, row, str(db_path), labels),
        "warnings": off_label_warnings(criteria, off_label_threshold),
        "off_label_threshold": off_label_threshold,
        "sweeps": sweep_sections(store),
        "prompts_stored": hasattr(store, "judgment_prompt"),
        "show_judges": len(tally.voters) > 1,
        "show_explanations": tally.explained,
        "page": {"number": 1, "count": max(1, -(-len(items) // per_page)), "per_page": per_page,
                 "total_items": len(items)},
    }


class _JudgmentTally:
    """Counts judgment rows as they stream to :func:`criterion_rates`: how many, how many
    failed, which (judge, option order) pairs voted, and whether any was explained."""

    def __init__(self) -> None:
        self.judgments = 0
        self.failed = 0
        self.voters: set[tuple[str, int | None]] = set()
        self.explained = False

    def count(self, rows: Any) -> Iterator[dict[str, Any]]:
        for judge_id, permutation, index, name, verdict, selected, error, explained, off_label in rows:
            self.judgments += 1
            self.failed += bool(error)
            self.voters.add((judge_id, permutation))
            self.explained = self.explained or bool(explained)
            yield {"criterion_index": index, "criterion_name": name, "verdict": verdict,
                   "selected_label": selected, "error": error, "off_label_mass": off_label}


def item_page(store: Store, row: Mapping[str, Any], page: int, layout: Mapping[str, Any], *,
              labels: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``{"page": {...}, "items": [...]}`` for page ``page`` of the summary's page ``layout``
    (``count`` pages of ``per_page`` items, in item order; see :func:`item_entries`), reading
    only that page's rows. ``page`` is ``layout`` with this page's ``number`` and its ``first``
    and ``last`` item positions (0-based). ``labels``: the summary's ``labels`` (its
    ``source``), whose labels of the page's items are put beside the verdicts.

    Raises
    ------
    InputError
        ``page`` outside 1..``count``.
    """
    per_page, count = layout["per_page"], layout["count"]
    if not 1 <= page <= count:
        raise InputError(f"report: page {page} does not exist (pages 1 to {count})")
    first = (page - 1) * per_page
    items = list(store.db["items"].rows_where("run_id = ?", [row["id"]], order_by="item_index",
                                              limit=per_page, offset=first))
    ids = [item["item_id"] for item in items]
    judgments: list[dict[str, Any]] = []
    for start in range(0, len(ids), 500):  # SQLite's limit on bound parameters
        batch = ids[start:start + 500]
        judgments += store.db["judgments"].rows_where(
            f"run_id = ? and item_id in ({', '.join('?' * len(batch))})", [row["id"], *batch],
            order_by="item_id, criterion_index, judge_id, permutation_index")
    human = None if labels is None else page_labels(store, row, labels["source"], items)
    return {"page": {**layout, "number": page, "first": first, "last": first + len(items) - 1},
            "items": item_entries(store, items, judgments, human)}


def run_settings(row: Mapping[str, Any], items: Sequence[Mapping[str, Any]],
                 judgments: Sequence[Mapping[str, Any]], *, counts: tuple[int, int] | None = None) -> dict[str, Any]:
    """The run's identity, times, status, judges, grader settings and counts (``counts``: the
    judgments and failed judgments when counted elsewhere, instead of from ``judgments``)."""
    grader = _json(row.get("grader_json")) or {}
    settings = {key: _show(value) for key, value in grader.items() if key not in GRADER_HIDDEN}
    done = [item for item in items if item.get("report_json") is not None]
    return {
        "name": row["name"],
        "id": row["id"],
        "started_utc": row["started_utc"],
        "finished_utc": row.get("finished_utc"),
        "status": row["status"],
        "data_path": row.get("data_path"),
        "package_version": row.get("package_version"),
        "content_hash": row.get("content_hash"),
        "wall_seconds": row.get("wall_seconds"),
        "total_items": row.get("total_items") or len(items),
        "graded_items": len(done),
        "failed_items": sum(1 for item in done if item.get("error")),
        "judgments": len(judgments) if counts is None else counts[0],
        "failed_judgments": sum(1 for j in judgments if j.get("error")) if counts is None else counts[1],
        "judges": [
            {key: judge.get(key) for key in ("judge_id", "model", "model_id", "weight", "backend")}
            for judge in _json(row.get("judges_json")) or []
        ],
        "grader": settings,
    }


def criterion_rates(judgments: Iterable[Mapping[str, Any]], rubric: Sequence[Mapping[str, Any]] = (), *,
                    off_label_threshold: float = OFF_LABEL_THRESHOLD) -> list[dict[str, Any]]:
    """Per criterion, how often each label was given, and its judgments' off-label mass
    (module docstring).

    Parameters
    ----------
    judgments : iterable of dict
        ``judgments`` rows (``criterion_index``, ``criterion_name``, ``verdict`` or
        ``selected_label``, ``error``, optionally ``off_label_mass``), read once.
    rubric : sequence of dict
        The run's rubric (criterion dicts); gives multi-choice criteria their option order.
    off_label_threshold : float in [0, 1], default 0.5
        Off-label mass above which an answered judgment counts in ``off_label["above"]``.

    Returns
    -------
    list of dict
        In criterion order: ``name``, ``weight`` (the rubric's; None when it does not name the
        criterion), ``scale`` (``binary`` or ``multi``), ``n`` (judgments),
        ``answered``, ``errors`` and ``labels``, a list of ``{"label", "count", "rate"}``
        (``rate`` None when nothing was answered). Binary criteria list MET, UNMET,
        CANNOT_ASSESS; multi-choice ones their options in rubric order, then any other label
        given. ``off_label`` is ``{"known", "mean", "above", "share"}``: the answered judgments
        whose off-label mass is known, its mean over them, how many exceed
        ``off_label_threshold`` and their share of ``known`` (``mean`` and ``share`` None when
        none is known).
    """
    options = {c.get("name"): [o.get("label") for o in c.get("options") or []] for c in rubric}
    weights = {c.get("name"): c.get("weight") for c in rubric}
    groups: dict[tuple[int, str], _CriterionCount] = {}
    for j in judgments:  # counted as they come: ``judgments`` may be a stream of a large run's rows
        count = groups.setdefault((int(j["criterion_index"]), j["criterion_name"]), _CriterionCount())
        count.n += 1
        if j.get("error"):
            continue
        count.given[_label(j)] = count.given.get(_label(j), 0) + 1  # dict: labels in first-given order
        count.verdicts = count.verdicts or j.get("verdict") is not None
        mass = j.get("off_label_mass")
        if mass is not None:
            count.off_label_known += 1
            count.off_label_sum += float(mass)
            count.off_label_above += float(mass) > off_label_threshold
    out = []
    for (_, name), count in sorted(groups.items()):
        answered = sum(count.given.values())
        binary = count.verdicts or not options.get(name)
        labels = list(BINARY_LABELS) if binary else list(options[name])
        labels += [label for label in count.given if label not in labels and label is not None]
        out.append({
            "name": name,
            "weight": weights.get(name),
            "scale": "binary" if binary else "multi",
            "n": count.n,
            "answered": answered,
            "errors": count.n - answered,
            "labels": [
                {"label": label, "count": count.given.get(label, 0),
                 "rate": count.given.get(label, 0) / answered if answered else None}
                for label in labels
            ],
            "off_label": {
                "known": count.off_label_known,
                "mean": count.off_label_sum / count.off_label_known if count.off_label_known else None,
                "above": count.off_label_above,
                "share": count.off_label_above / count.off_label_known if count.off_label_known else None,
            },
        })
    return out


def off_label_warnings(criteria: Sequence[Mapping[str, Any]], threshold: float = OFF_LABEL_THRESHOLD) -> list[str]:
    """One line for each criterion of ``criteria`` (:func:`criterion_rates`) with a judgment
    above ``threshold``, naming the criterion, how many and what share of its judgments, and
    their mean off-label mass; empty when no judgment is above it (or none reported one)."""
    lines = []
    for c in criteria:
        off = c.get("off_label") or {}
        if off.get("above"):
            lines.append(
                f"{c['name']}: {off['above']} of {off['known']} judgments ({off['share']:.0%}) put more than "
                f"{threshold:.0%} of the first-step probability outside the allowed labels (mean off-label mass "
                f"{off['mean']:.2f}): the judge did not keep to the answer format there, so its label "
                "probabilities and verdicts on this criterion mean less than they seem")
    return lines


@dataclass
class _CriterionCount:
    n: int = 0
    given: dict[str | None, int] = field(default_factory=dict)
    verdicts: bool = False
    off_label_known: int = 0
    off_label_sum: float = 0.0
    off_label_above: int = 0


def agreement_section(store: Store, row: Mapping[str, Any], db_path: str,
                      labels: LabelChoice | None = None) -> dict[str, Any] | None:
    """Agreement of the judges' final verdicts with the human labels of ``labels`` (default:
    :func:`.labels.choose_labels`'s; None when the run has no labels) and its figures, by
    :func:`~autorubric_local.metrics.compute_metrics` (CANNOT_ASSESS and NA pairs excluded, as
    ``metrics`` does by default).

    ``partial`` counts the items labelled on some criteria only, left out (the metrics compare
    whole items); ``per_criterion`` gives each criterion's ``labelled`` items among those
    compared and its ``support`` (pairs left after the exclusions). A run whose metrics cannot
    be computed (e.g. an interrupted run, or no item labelled whole) gets ``{"error": ...}``.
    """
    from autorubric_local.metrics import compute_metrics
    from autorubric_local.runner.results import graded_run

    labels = choose_labels(store, row) if labels is None else labels
    if labels is None:
        return None
    result, dataset = graded_run(store, row, db_path)  # read a page at a time (issue 33)
    dataset = relabelled(store, row, labels.source, dataset)
    partial = 0
    if isinstance(dataset.items, LabelledItems):
        complete, partial = dataset.items.complete(), len(dataset.items.partial)
        if not complete:
            return {"error": f"no item is labelled on every criterion in {labels.source} ({partial} partly "
                             "labelled; the metrics compare whole items)", "partial": partial}
    try:
        metrics = compute_metrics(result, dataset)
    except AutorubricError as exc:
        return {"error": str(exc), "partial": partial}
    return {
        "error": None,
        "partial": partial,
        "n_items": metrics.n_items,
        "accuracy": metrics.criterion_accuracy,
        "kappa": metrics.mean_kappa,
        "headline": [
            ("criterion accuracy", metrics.criterion_accuracy),
            ("precision (MET)", metrics.criterion_precision),
            ("recall (MET)", metrics.criterion_recall),
            ("F1 (MET)", metrics.criterion_f1),
            ("mean Cohen's kappa", metrics.mean_kappa),
            ("score RMSE", metrics.score_rmse),
            ("score MAE", metrics.score_mae),
            ("score Spearman", None if metrics.score_spearman is None else metrics.score_spearman.coefficient),
            ("ECE of P(MET)", None if metrics.calibration is None else metrics.calibration.ece),
            ("Brier score of P(MET)", None if metrics.calibration is None else metrics.calibration.brier_score),
        ],
        "per_criterion": [
            {"name": c.name, "scale": c.scale, "labelled": c.support + c.n_excluded, "support": c.support,
             "accuracy": c.accuracy, "kappa": c.kappa}
            for c in metrics.per_criterion
        ],
        "warnings": list(metrics.warnings),
        "figures": metrics_figures(metrics, result, dataset),
    }


def item_entries(store: Store, items: Sequence[Mapping[str, Any]], judgments: Sequence[Mapping[str, Any]],
                 human: Mapping[str, Sequence[str | None]] | None = None) -> list[dict[str, Any]]:
    """One entry per item (item order): its texts, score, error and judgments by criterion.

    ``human`` (:func:`.labels.page_labels`) gives each criterion its ``human`` label (None when
    unlabelled) and ``agrees``: whether the final verdict is that label (None without a label
    or a final verdict)."""
    by_item: dict[str, list[Mapping[str, Any]]] = {}
    for j in judgments:
        by_item.setdefault(j["item_id"], []).append(j)
    entries = []
    for item in items:
        report = _json(item.get("report_json")) or {}
        finals = [_final(c) for c in report.get("report") or []]
        weights = [((c.get("criterion") or {}).get("weight")) for c in report.get("report") or []]
        truth = (human or {}).get(item["item_id"]) or []
        criteria: dict[tuple[int, str], dict[str, Any]] = {}
        for j in by_item.get(item["item_id"], []):
            index = int(j["criterion_index"])
            final = finals[index] if index < len(finals) else None
            label = truth[index] if index < len(truth) else None
            entry = criteria.setdefault((index, j["criterion_name"]), {
                "name": j["criterion_name"],
                "final": final,
                "weight": weights[index] if index < len(weights) else None,
                "human": label,
                "agrees": None if label is None or final is None else label == final,
                "judgments": [],
            })
            entry["judgments"].append(_judgment(store, j))
        entries.append({
            "item_id": item["item_id"],
            "index": item.get("item_index"),
            "submission": item.get("submission") or "",
            "query": item.get("query"),
            "reference": item.get("reference_submission"),
            "score": item.get("score"),
            "pending": item.get("report_json") is None,
            "error": item.get("error") or report.get("error"),
            "criteria": [criteria[key] for key in sorted(criteria)],
        })
    return entries


def _judgment(store: Store, j: Mapping[str, Any]) -> dict[str, Any]:
    label = _label(j)
    probabilities = _json(j.get("label_probabilities_json")) or {}
    return {
        "judge_id": j["judge_id"],
        "permutation_index": j.get("permutation_index"),
        "label": label,
        "probability": probabilities.get(label) if label is not None else None,
        "explanation": j.get("explanation"),
        "error": j.get("error") or None,
        "prompt": _prompt(store, j),
    }


def _prompt(store: Store, j: Mapping[str, Any]) -> str | None:
    """The judgment's exact prompt when the store keeps prompts (``Store.judgment_prompt``)."""
    read = getattr(store, "judgment_prompt", None)
    if read is None:
        return None
    text = read(j["run_id"], j["item_id"], int(j["criterion_index"]), j["judge_id"], int(j["permutation_index"]))
    return text if isinstance(text, str) else None


def _label(j: Mapping[str, Any]) -> str | None:
    return j.get("verdict") if j.get("verdict") is not None else j.get("selected_label")


def _final(criterion: Mapping[str, Any]) -> str | None:
    """The ensemble's final verdict or selected label of one criterion report dict."""
    if criterion.get("final_verdict") is not None:
        return str(criterion["final_verdict"])
    choice = criterion.get("final_multi_choice_verdict") or {}
    return choice.get("selected_label")


def _rubric(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    rubric = _json(row.get("rubric_json"))
    return [c for c in rubric if isinstance(c, dict)] if isinstance(rubric, list) else []


def _json(text: str | None) -> Any:
    return json.loads(text) if text else None


def _show(value: Any) -> str:
    """A setting as short text: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)
