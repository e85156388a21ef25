"""What a run's report shows, read from the store into one plain dict (no HTML here).

:func:`report_context` gathers, for one stored run: its settings, the item score
distribution, each criterion's verdict rates, agreement with the ground truth (when any item has
it; :func:`autorubric_local.metrics.compute_metrics`), the position-bias sweeps stored in the same
database, and one entry per item with its submission and every judgment (verdict, probability,
explanation, and the exact prompt where the store keeps it). Figures are PNG data URIs
(:mod:`.figures`). :mod:`.html` renders the dict.

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
from autorubric_local.report.figures import metrics_figures, score_histogram
from autorubric_local.report.sweeps import sweep_sections
from autorubric_local.store import Store

__all__ = ["BINARY_LABELS", "ITEMS_PER_PAGE", "criterion_rates", "find_report_run", "item_page", "report_context",
           "report_summary"]

BINARY_LABELS: tuple[str, ...] = ("MET", "UNMET", "CANNOT_ASSESS")
"""Verdict labels of a binary criterion, in the order the report lists them."""

ITEMS_PER_PAGE = 100
"""Items on one page of a report: a run of 10^5 items is 1,000 pages of 100, each small enough
for a browser, instead of one page holding every item."""

GRADER_HIDDEN: frozenset[str] = frozenset({"judges"})
"""Keys of the stored grader description not listed among the settings (judges have a table)."""


def report_context(
    store: Store, run: str, db_path: str | Path, *, page: int = 1, per_page: int | None = None
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

    Returns
    -------
    dict
        Keys ``run`` (settings), ``scores`` (distribution), ``criteria`` (verdict rates, see
        :func:`criterion_rates`), ``agreement`` (None without ground truth), ``sweeps``,
        ``prompts_stored`` (whether this store can give prompts at all), ``show_judges``
        (several judges or option orders voted), ``show_explanations`` (some judgment has an
        explanation), ``db_path``, ``page`` (``number``, ``count``, ``per_page``, ``first``
        and ``last`` item positions, 0-based) and ``items`` (that page's items, in item order).

    Raises
    ------
    InputError
        No run named ``run`` in the database (the message names the database, the run and
        the runs it holds), a page out of range, or stored rows that no longer validate.
    """
    row = find_report_run(store, run, db_path)
    summary = report_summary(store, row, db_path, per_page=per_page)
    return {**summary, **item_page(store, row, page, summary["page"])}


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
    store: Store, row: Mapping[str, Any], db_path: str | Path, *, per_page: int | None = None
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
              "explanation is not null and explanation != '' as explained"
    judgments = tally.count(store.db.execute(f"select {columns} from judgments where run_id = ?", [row["id"]]))
    criteria = criterion_rates(judgments, _rubric(row))
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
        "agreement": agreement_section(store, row, str(db_path)),
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
        for judge_id, permutation, index, name, verdict, selected, error, explained in rows:
            self.judgments += 1
            self.failed += bool(error)
            self.voters.add((judge_id, permutation))
            self.explained = self.explained or bool(explained)
            yield {"criterion_index": index, "criterion_name": name, "verdict": verdict,
                   "selected_label": selected, "error": error}


def item_page(store: Store, row: Mapping[str, Any], page: int, layout: Mapping[str, Any]) -> dict[str, Any]:
    """``{"page": {...}, "items": [...]}`` for page ``page`` of the summary's page ``layout``
    (``count`` pages of ``per_page`` items, in item order; see :func:`item_entries`), reading
    only that page's rows. ``page`` is ``layout`` with this page's ``number`` and its ``first``
    and ``last`` item positions (0-based).

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
    return {"page": {**layout, "number": page, "first": first, "last": first + len(items) - 1},
            "items": item_entries(store, items, judgments)}


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


def criterion_rates(judgments: Iterable[Mapping[str, Any]],
                    rubric: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """Per criterion, how often each label was given (module docstring).

    Parameters
    ----------
    judgments : iterable of dict
        ``judgments`` rows (``criterion_index``, ``criterion_name``, ``verdict`` or
        ``selected_label``, ``error``), read once.
    rubric : sequence of dict
        The run's rubric (criterion dicts); gives multi-choice criteria their option order.

    Returns
    -------
    list of dict
        In criterion order: ``name``, ``weight`` (the rubric's; None when it does not name the
        criterion), ``scale`` (``binary`` or ``multi``), ``n`` (judgments),
        ``answered``, ``errors`` and ``labels``, a list of ``{"label", "count", "rate"}``
        (``rate`` None when nothing was answered). Binary criteria list MET, UNMET,
        CANNOT_ASSESS; multi-choice ones their options in rubric order, then any other label
        given.
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
        })
    return out


@dataclass
class _CriterionCount:
    n: int = 0
    given: dict[str | None, int] = field(default_factory=dict)
    verdicts: bool = False


def agreement_section(store: Store, row: Mapping[str, Any], db_path: str) -> dict[str, Any] | None:
    """Agreement with the ground truth and its figures; None when no item has ground truth.

    A run whose metrics cannot be computed (e.g. an interrupted run) gets ``{"error": ...}``.
    """
    from autorubric_local.metrics import compute_metrics
    from autorubric_local.runner.streamed import graded_run

    result, dataset = graded_run(store, row, db_path)  # read a page at a time (issue 33)
    if all(item.ground_truth is None for item in dataset):
        return None
    try:
        metrics = compute_metrics(result, dataset)
    except AutorubricError as exc:
        return {"error": str(exc)}
    return {
        "error": None,
        "n_items": metrics.n_items,
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
            {"name": c.name, "scale": c.scale, "support": c.support, "accuracy": c.accuracy, "kappa": c.kappa}
            for c in metrics.per_criterion
        ],
        "warnings": list(metrics.warnings),
        "figures": metrics_figures(metrics, result, dataset),
    }


def item_entries(store: Store, items: Sequence[Mapping[str, Any]],
                 judgments: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One entry per item (item order): its texts, score, error and judgments by criterion."""
    by_item: dict[str, list[Mapping[str, Any]]] = {}
    for j in judgments:
        by_item.setdefault(j["item_id"], []).append(j)
    entries = []
    for item in items:
        report = _json(item.get("report_json")) or {}
        finals = [_final(c) for c in report.get("report") or []]
        weights = [((c.get("criterion") or {}).get("weight")) for c in report.get("report") or []]
        criteria: dict[tuple[int, str], dict[str, Any]] = {}
        for j in by_item.get(item["item_id"], []):
            index = int(j["criterion_index"])
            entry = criteria.setdefault((index, j["criterion_name"]), {
                "name": j["criterion_name"],
                "final": finals[index] if index < len(finals) else None,
                "weight": weights[index] if index < len(weights) else None,
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
