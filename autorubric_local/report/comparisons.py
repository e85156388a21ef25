"""A stored comparison's own report page (``autorubric-local report CMP``).

``report`` given a comparison's name or sweep id (and no run of that name) writes one
self-contained ``index.html``: results first (per judge and question the Bradley-Terry ranking
with its interval and win rates, the win-rate heat map, position consistency with its interval
and the slot-1 / slot-2 shares of the conflicts' verdicts), then the table of pairs, then the
settings (judges, questions, data path and content hash, scale). Everything shown is computed by
:mod:`autorubric_local.comparisons.ranking` (:func:`rank_systems`, :func:`position_bias`); the
heat map is :func:`~.figures.win_rate_heatmap`. System names, prompt ids and question texts come
from the comparison file and are escaped by the template environment (:mod:`.pages`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autorubric_local.core.errors import AutorubricError
from autorubric_local.report.figures import win_rate_heatmap
from autorubric_local.report.pages import REPORT_FILE, default_out_dir, environment
from autorubric_local.store import Store

__all__ = ["COMPARISON_TEMPLATE", "MAX_PAIR_ROWS", "comparison_context", "find_comparison", "write_comparison_report"]

COMPARISON_TEMPLATE = "comparison.html.j2"
MAX_PAIR_ROWS = 2000
"""Rows of the table of pairs shown at most (the page says how many were left out)."""


def find_comparison(store: Store, key: str) -> dict[str, Any] | None:
    """The stored sweep row of the comparison ``key`` (its name, the latest of a name, or sweep
    id), or None when there is none or that sweep is not a comparison."""
    if not store.db["sweeps"].exists():
        return None
    row = store.find_sweep(key)
    if row is None or row.get("kind") != "comparison":
        return None
    return row


def comparison_context(store: Store, row: dict[str, Any], *, n_bootstrap: int = 200,
                       n_bootstrap_consistency: int = 1000) -> dict[str, Any]:
    """What the comparison page of the sweep ``row`` shows, as a plain dict.

    Parameters
    ----------
    store : Store
    row : dict
        The comparison's ``sweeps`` row (:func:`find_comparison`).
    n_bootstrap : int
        Cluster-bootstrap resamples of the Bradley-Terry intervals (90%, over prompts).
    n_bootstrap_consistency : int
        Resamples of the position-consistency interval (90%).

    Returns
    -------
    dict
        ``comparison`` (``name``, ``id``, ``status``, ``started_utc``, ``finished_utc``,
        ``data_path``, ``content_hash``, ``package_version``, ``scale``, ``mode``, ``systems``,
        ``questions`` (``name``, ``text``, ``weight``), ``judges`` (stored judge rows)),
        ``results`` (per judge and question: ``judge_id``, ``question``, ``error`` (why there is
        no ranking, else None), ``systems`` (``system``, ``score``, ``low``, ``high``,
        ``win_rate``, ``n``), ``n_prompts``, ``figure`` (data URI), ``bias`` (None for the
        weighted rubric or when not computable; else ``n``, ``consistency``, ``low``, ``high``,
        ``conflict_rate``, ``primacy``, ``recency``, ``error``)), ``pairs`` (rows ``prompt_id``,
        ``systems``, ``judge_id``, ``question``, ``preference`` (P(a), P(tie), P(b) balanced over
        both orders, or None), ``verdicts`` (the system each order's hard verdict chose, or ``"tie"``; order ab then
        ba; None unless both orders were judged),
        ``errors``), ``pairs_total`` and ``pairs_shown``.

    Raises
    ------
    InputError
        The sweep is not a readable comparison (:func:`~autorubric_local.comparisons.judging.read_comparison`).
    """
    from autorubric_local.comparisons.judging import read_comparison
    from autorubric_local.comparisons.ranking import RUBRIC, position_bias, rank_systems

    comparison = read_comparison(store, row["id"])
    names = [q["name"] for q in comparison.questions]
    weighted = len(names) > 1 and any(q.get("weight") for q in comparison.questions)
    questions = names + ([RUBRIC] if weighted else [])
    results = []
    for judge_id in comparison.judge_ids:
        for question in questions:
            entry: dict[str, Any] = {"judge_id": judge_id, "question": question, "error": None, "bias": None}
            try:
                ranked = rank_systems(comparison, judge_id=judge_id, question=question, n_bootstrap=n_bootstrap)
            except AutorubricError as exc:  # not yet judged, systems not linked both ways, ...
                entry["error"] = str(exc)
            else:
                entry.update(
                    systems=[{"system": r.system, "score": r.score, "low": r.score_low, "high": r.score_high,
                              "win_rate": r.win_rate, "n": r.n_comparisons} for r in ranked.systems],
                    n_prompts=ranked.n_prompts,
                    figure=win_rate_heatmap([r.system for r in ranked.systems], ranked.win_matrix,
                                            f"{comparison.name}, judge {judge_id}: win rates ({question})"),
                )
            if question != RUBRIC:
                entry["bias"] = _bias(comparison, judge_id, question, n_bootstrap_consistency, position_bias)
            results.append(entry)
    pairs = _pairs(comparison)
    judges = json.loads(row["judges_json"]) if row.get("judges_json") else []
    return {
        "comparison": {
            "name": row["name"], "id": row["id"], "status": row["status"], "started_utc": row.get("started_utc"),
            "finished_utc": row.get("finished_utc"), "data_path": row.get("data_path"),
            "content_hash": row.get("content_hash"), "package_version": row.get("package_version"),
            "scale": comparison.scale, "mode": comparison.description.get("mode", "pairs"),
            "systems": list(comparison.systems), "questions": list(comparison.questions), "judges": judges,
        },
        "results": results,
        "pairs": pairs[:MAX_PAIR_ROWS],
        "pairs_total": len(pairs),
        "pairs_shown": min(len(pairs), MAX_PAIR_ROWS),
    }


def _bias(comparison: Any, judge_id: str, question: str, n_bootstrap: int, position_bias: Any) -> dict[str, Any]:
    try:
        bias = position_bias(comparison, judge_id=judge_id, question=question, n_bootstrap=n_bootstrap)
    except AutorubricError as exc:
        return {"error": str(exc)}
    m = bias.measures
    return {"error": None, "n": m.n, "consistency": m.consistency, "low": bias.consistency_low,
            "high": bias.consistency_high, "conflict_rate": m.conflict_rate, "primacy": m.primacy,
            "recency": m.recency}


def _pairs(comparison: Any) -> list[dict[str, Any]]:
    if comparison.nway:
        return [{"prompt_id": j.prompt_id, "systems": list(j.systems), "judge_id": j.judge_id,
                 "question": j.question, "preference": None, "verdicts": None, "errors": list(j.errors)}
                for j in comparison.nway]
    rows = []
    for j in comparison.judgments:
        preference = j.preference
        verdicts = None
        if j.verdicts is not None:  # slot labels to systems: order ab puts a in slot 1, order ba puts b there
            ab, ba = j.verdicts
            verdicts = ({"1": j.system_a, "2": j.system_b}.get(ab, ab), {"1": j.system_b, "2": j.system_a}.get(ba, ba))
        rows.append({
            "prompt_id": j.prompt_id, "systems": [j.system_a, j.system_b], "judge_id": j.judge_id,
            "question": j.question,
            "preference": None if preference is None else (preference["a"], preference["tie"], preference["b"]),
            "verdicts": verdicts, "errors": list(j.errors),
        })
    return rows


def write_comparison_report(store: Store, row: dict[str, Any], out_dir: str | Path | None = None) -> Path:
    """Write the page of the comparison ``row`` (:func:`comparison_context`) to
    ``out_dir/index.html`` (default :func:`~.pages.default_out_dir` of its name) and return its path.

    Raises
    ------
    InputError
        As :func:`comparison_context`.
    """
    context = comparison_context(store, row)
    folder = Path(out_dir) if out_dir is not None else default_out_dir(row["name"])
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("items-*.html"):  # pages of an earlier run report in the same folder
        stale.unlink()
    page = folder / REPORT_FILE
    page.write_text(environment().get_template(COMPARISON_TEMPLATE).render(**context), encoding="utf-8")
    return page
