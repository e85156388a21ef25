"""Judging comparisons: every pair in both slot orders, on the stored sweep pipeline.

:func:`run_comparison` turns the chosen pairs (:func:`~.data.plan_pairs`) into
:class:`~.prompts.PairItem` s and runs them as a ``comparison`` sweep
(:func:`~autorubric_local.bias.stored.run_stored_sweep`): chunks of whole pairs (both orders of
every question of a pair go to the engine in one workload, over one shared prefix), each chunk
committed in one transaction, resume by name (a killed comparison loses at most the chunk in
flight), a lease against a second writer, Ray actors with ``EvalConfig.distributed``, score mode
(label probabilities) or explain mode (a judge with ``thinking`` reasons before each verdict).

The stored sweep's ``rubric_json`` holds the comparison's description
(:func:`comparison_description`: systems, questions with weights, and each pair's prompt and
systems; the verdict scale, 3 or 5, a description without one being 3; and each response's
style counts, :func:`~.style.style_counts`, for style control; for a comparison joined from
systems' files, those files, ``system_files``), so :func:`load_comparison` reads
a stored comparison back from the database alone: one :class:`PairJudgment` per (pair,
question, judge) with both orders' label probabilities.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorubric_local.bias.cells import SweepKind, SweepSettings
from autorubric_local.bias.stored import StoredSweep, SweepChunkReport, run_stored_sweep
from autorubric_local.comparisons.data import ComparisonPrompt, SystemFiles, plan_pairs
from autorubric_local.comparisons.preferences import (
    LABELS5,
    arena_hard_counts,
    balanced_graded,
    balanced_preference,
    collapsed_verdict,
    graded_preference,
    hard_label,
    hard_verdict,
    swap_rule,
    weighted_swap_counts,
)
from autorubric_local.comparisons.prompts import (
    SCALES,
    NWayItem,
    PairItem,
    Question,
    nway_criterion,
    overall_question,
)
from autorubric_local.comparisons.style import style_counts
from autorubric_local.core.errors import InputError
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.graders.decision_stage import refuse_decision_judges
from autorubric_local.runner.config import EvalConfig
from autorubric_local.store import Store

__all__ = ["COMPARISON_FORMAT", "NWayJudgment", "PairJudgment", "StoredComparison", "comparison_description",
           "comparison_items", "load_comparison", "nway_items", "nway_judgments", "pair_judgments", "read_comparison",
           "run_comparison"]

COMPARISON_FORMAT = "autorubric-local/comparison-v1"
"""``format`` of a comparison's description in ``sweeps.rubric_json``."""

_SLOT_LABELS = ("1", "2", "tie")  # shown answer k -> slot label (prompts.ANSWER_LABELS)


def comparison_items(chosen: Sequence[tuple[ComparisonPrompt, str, str]], questions: Sequence[Question],
                     scale: int = 3) -> list[PairItem]:
    """One :class:`PairItem` per chosen ``(prompt, a, b)``, asking every question on the verdict
    ``scale`` (3 or 5, :mod:`.prompts`).

    Item ids are ``"<prompt id> <a> vs <b>"``.

    Raises
    ------
    InputError
        No question, two questions of the same name, or a scale other than 3 or 5.
    """
    _check_questions(questions)
    criteria = tuple(q.criterion(scale) for q in questions)
    return [PairItem(submission=prompt.query, rubric=criteria, reference_submission=prompt.reference,
                     item_id=f"{prompt.prompt_id} {a} vs {b}", prompt_id=prompt.prompt_id, system_a=a, system_b=b,
                     response_a=prompt.responses[a], response_b=prompt.responses[b], scale=scale)
            for prompt, a, b in chosen]


def _check_questions(questions: Sequence[Question]) -> None:
    if not questions:
        raise InputError("a comparison needs at least one question (the overall one, or a rubric's criteria)")
    names = [q.name for q in questions]
    if len(set(names)) != len(names):
        raise InputError(f"question names must be unique, got {names}")


def nway_items(prompts: Sequence[ComparisonPrompt], questions: Sequence[Question]) -> list[NWayItem]:
    """One :class:`NWayItem` per prompt with every system it has, asking every question; item ids
    are the prompt ids.

    Raises
    ------
    InputError
        No question, or two questions of the same name.
    """
    _check_questions(questions)
    return [NWayItem(submission=p.query, rubric=tuple(nway_criterion(q, tuple(p.responses)) for q in questions),
                     reference_submission=p.reference, item_id=p.prompt_id, prompt_id=p.prompt_id,
                     systems=tuple(p.responses), responses=tuple(p.responses.values()))
            for p in prompts]


def comparison_description(items: Sequence[PairItem | NWayItem], questions: Sequence[Question]) -> dict[str, Any]:
    """JSON-ready description stored as the sweep's ``rubric_json``: ``format``, ``mode``
    (``pairs`` or ``nway``), ``scale`` (3 or 5), ``systems`` (in order of first appearance),
    ``questions`` (``name``, ``text``, ``weight``), ``pairs``: per item ``item_id``,
    ``prompt_id`` and ``a``, ``b`` (pairs) or ``systems`` (N-way, in the item's slot order of
    rotation 0), and ``style``: per prompt id and system the response's
    :func:`~.style.style_counts` (what style control reads; the texts themselves are not stored)."""
    nway = bool(items) and isinstance(items[0], NWayItem)
    entries: list[dict[str, Any]] = []
    systems: list[str] = []
    style: dict[str, dict[str, dict[str, int]]] = {}
    for item in items:
        if isinstance(item, NWayItem):
            entries.append({"item_id": item.item_id, "prompt_id": item.prompt_id, "systems": list(item.systems)})
            systems += item.systems
            shown = zip(item.systems, item.responses, strict=True)
        else:
            entries.append({"item_id": item.item_id, "prompt_id": item.prompt_id, "a": item.system_a, "b": item.system_b})
            systems += (item.system_a, item.system_b)
            shown = zip((item.system_a, item.system_b), (item.response_a, item.response_b), strict=True)
        for system, text in shown:
            style.setdefault(item.prompt_id, {})[system] = style_counts(text)
    scale = items[0].scale if items and isinstance(items[0], PairItem) else 3
    return {
        "format": COMPARISON_FORMAT, "mode": "nway" if nway else "pairs", "scale": scale,
        "systems": list(dict.fromkeys(systems)),
        "questions": [{"name": q.name, "text": q.text, "weight": q.weight} for q in questions],
        "pairs": entries, "style": style,
    }


@dataclass(frozen=True)
class PairJudgment:
    """One judge's answers to one question about one pair, in both slot orders.

    Attributes
    ----------
    item_id, prompt_id, system_a, system_b, judge_id, question : str
    ab, ba : dict of str to float, or None
        The judge's probabilities of the slot labels ``"1"``, ``"2"``, ``"tie"`` (``scale`` 3) or
        of :data:`~.preferences.LABELS5` (``scale`` 5) in order ``ab`` (``a`` in slot 1) and
        order ``ba``; None when that judgment failed.
    errors : tuple of str
        The failed orders' errors (empty when both have probabilities).
    scale : int, 3 or 5
        The verdict scale (:mod:`.preferences` for what a 5-point verdict counts).
    """

    item_id: str
    prompt_id: str
    system_a: str
    system_b: str
    judge_id: str
    question: str
    ab: dict[str, float] | None
    ba: dict[str, float] | None
    errors: tuple[str, ...] = ()
    scale: int = 3

    @property
    def complete(self) -> bool:
        """Both orders have probabilities."""
        return self.ab is not None and self.ba is not None

    @property
    def preference(self) -> dict[str, float] | None:
        """Balanced position calibration (:func:`~.preferences.balanced_preference`):
        ``{"a", "b", "tie"}``; on the 5-point scale the balanced grades as three probabilities
        (:func:`~.preferences.graded_preference`: ``P(a) + P(tie) / 2`` is the expected grade).
        None unless complete."""
        if self.ab is None or self.ba is None:
            return None
        if self.scale == 5:
            return graded_preference(balanced_graded(self.ab, self.ba))
        return balanced_preference(self.ab, self.ba)

    @property
    def graded(self) -> dict[str, float] | None:
        """The 5-point balanced grades (:func:`~.preferences.balanced_graded`, keys
        :data:`~.preferences.GRADES`); None on the 3-point scale or unless complete."""
        if self.scale != 5 or self.ab is None or self.ba is None:
            return None
        return balanced_graded(self.ab, self.ba)

    @property
    def verdicts(self) -> tuple[str, str] | None:
        """Each order's hard verdict (slot labels ``"1"``, ``"2"``, ``"tie"``,
        :func:`~.preferences.hard_verdict`; on the 5-point scale the direction of the most
        probable label, :func:`~.preferences.collapsed_verdict`); None unless complete."""
        if self.ab is None or self.ba is None:
            return None
        if self.scale == 5:
            return collapsed_verdict(self.ab), collapsed_verdict(self.ba)
        return hard_verdict(self.ab), hard_verdict(self.ba)

    @property
    def labels(self) -> tuple[str, str] | None:
        """Each order's most probable 5-point label (:func:`~.preferences.hard_label`); None on
        the 3-point scale or unless complete."""
        if self.scale != 5 or self.ab is None or self.ba is None:
            return None
        return hard_label(self.ab), hard_label(self.ba)

    def bradley_terry_counts(self, method: str) -> tuple[float, float, float] | None:
        """``(wins, ties, losses)`` of ``a`` as Bradley-Terry counts them: on the 3-point scale
        one comparison (``soft``: the preference; ``swap``: the swap verdict); on the 5-point
        scale Arena-Hard-Auto's games, a strong verdict weighing 3
        (:func:`~.preferences.arena_hard_counts` of the balanced grades, or
        :func:`~.preferences.weighted_swap_counts`). None unless complete."""
        if self.ab is None or self.ba is None:
            return None
        if self.scale == 5:
            if method == "soft":
                return arena_hard_counts(balanced_graded(self.ab, self.ba))
            return weighted_swap_counts(self.ab, self.ba)
        if method == "soft":
            p = balanced_preference(self.ab, self.ba)
            return p["a"], p["tie"], p["b"]
        verdict = swap_rule(hard_verdict(self.ab), hard_verdict(self.ba))
        return float(verdict == "a"), float(verdict == "tie"), float(verdict == "b")

    @property
    def swap_verdict(self) -> str | None:
        """The MT-Bench swap rule's verdict, ``"a"``, ``"b"`` or ``"tie"``; None unless complete."""
        verdicts = self.verdicts
        return None if verdicts is None else swap_rule(*verdicts)


@dataclass(frozen=True)
class NWayJudgment:
    """One judge's answers to one question about one prompt's N systems, in every rotation.

    Attributes
    ----------
    item_id, prompt_id, judge_id, question : str
    systems : tuple of str
    rotations : tuple of (dict of str to float, or None)
        Per rotation, the judge's probability that each system is the best (mapped back from
        slots); None where that rotation failed.
    chosen_slots : tuple of (int or None)
        Per rotation, the slot (0-based) of the most probable answer.
    errors : tuple of str
    """

    item_id: str
    prompt_id: str
    systems: tuple[str, ...]
    judge_id: str
    question: str
    rotations: tuple[dict[str, float] | None, ...]
    chosen_slots: tuple[int | None, ...]
    errors: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Every rotation has probabilities."""
        return all(r is not None for r in self.rotations)

    @property
    def preference(self) -> dict[str, float] | None:
        """The mean over rotations of each system's probability (every system in every slot once:
        balanced position calibration over N slots); None unless complete."""
        if not self.complete:
            return None
        return {s: sum(r[s] for r in self.rotations if r is not None) / len(self.rotations) for s in self.systems}

    @property
    def chosen(self) -> tuple[str | None, ...]:
        """The system chosen (most probable) in each rotation."""
        return tuple(None if r is None else max(self.systems, key=r.__getitem__) for r in self.rotations)


@dataclass(frozen=True)
class StoredComparison:
    """A stored comparison read back: its sweep id and name, description and judgments.

    Attributes
    ----------
    sweep_id, name : str
    description : dict
        :func:`comparison_description`.
    judge_ids : tuple of str
    judgments : tuple of PairJudgment
        By pair, question, then judge (pairwise comparisons; empty for an N-way one).
    nway : tuple of NWayJudgment
        By prompt, question, then judge (N-way comparisons; empty for a pairwise one).
    status : str
        The sweep's status (``finished``, ``interrupted``, ``running``, ``failed``).
    resumed_rotations : int
        Rotation rows already stored when this session began (0 when read with :func:`load_comparison`).
    """

    sweep_id: str
    name: str
    description: dict[str, Any]
    judge_ids: tuple[str, ...]
    judgments: tuple[PairJudgment, ...]
    status: str
    resumed_rotations: int = 0
    nway: tuple[NWayJudgment, ...] = ()

    @property
    def systems(self) -> tuple[str, ...]:
        return tuple(self.description["systems"])

    @property
    def questions(self) -> tuple[dict[str, Any], ...]:
        return tuple(self.description["questions"])

    @property
    def scale(self) -> int:
        """The verdict scale, 3 or 5 (a comparison stored without one is 3)."""
        return int(self.description.get("scale", 3))


def run_comparison(
    prompts: Sequence[ComparisonPrompt],
    judges: Sequence[JudgeSpec],
    questions: Sequence[Question] | None = None,
    config: EvalConfig | None = None,
    *,
    baseline: str | None = None,
    pairs: Sequence[tuple[str, str]] | None = None,
    system_prompt: str | None = None,
    data_path: str | None = None,
    system_files: SystemFiles | None = None,
    on_chunk: Callable[[SweepChunkReport], None] | None = None,
    stop: threading.Event | None = None,
    n_way: bool = False,
    scale: int = 3,
) -> StoredComparison:
    """Judge every chosen pair of ``prompts`` in both orders and store it (module docstring).

    Parameters
    ----------
    prompts : sequence of ComparisonPrompt
        From :func:`~.data.load_comparisons`.
    judges : sequence of JudgeSpec
        A judge's ``system_prompt`` replaces ``system_prompt``; judges with ``thinking`` reason first.
    questions : sequence of Question, optional
        Default: the overall question only (:func:`~.prompts.overall_question`); with a rubric,
        :func:`~.prompts.rubric_questions` (and the overall one, if wanted).
    config : EvalConfig, optional
        As for :func:`~autorubric_local.bias.stored.run_stored_sweep`: ``db_path``,
        ``experiment_name`` (the comparison's name), ``resume``, ``chunk_judgments``,
        ``distributed``, the lease timings.
    baseline, pairs
        Which pairs (:func:`~.data.plan_pairs`).
    system_prompt : str, optional
        Replaces :data:`~.prompts.PAIRWISE_SYSTEM_PROMPT`.
    data_path : str, optional
        Where the prompts came from (stored).
    system_files : SystemFiles, optional
        The systems' files the prompts were joined from (:class:`~.data.SystemFiles`), stored in
        the description as ``system_files`` (:meth:`~.data.SystemFiles.to_dict`), so that ``label
        select`` can read the responses again; give them by absolute path
        (:meth:`~.data.SystemFiles.resolved`). A resumed comparison keeps the ones it started with.
    on_chunk, stop
        As for :func:`~autorubric_local.bias.stored.run_stored_sweep`.
    n_way : bool, default False
        Show every system of a prompt in one judgment, in each of the N rotations of the slots
        (:class:`~.prompts.NWayItem`), instead of pairs in both orders; ``baseline`` and
        ``pairs`` do not apply.
    scale : {3, 5}, default 3
        The verdict scale: ``1``, ``2``, tie; or Arena-Hard's ``1>>2 1>2 1=2 2>1 2>>1``
        (:mod:`.prompts`, :mod:`.preferences`). Pairs only.

    Returns
    -------
    StoredComparison
        Read back from the database (:func:`load_comparison`), with ``resumed_rotations``.

    Raises
    ------
    InputError
        Bad pairs or questions; a scale other than 3 or 5, or the 5-point scale with
        ``n_way``; a stored comparison of that name whose content differs.
    RunLockedError
        Another live process is writing this comparison.
    EvalInterruptedError
        ``stop`` was set, or Ctrl-C; committed chunks are kept for a resume.
    """
    refuse_decision_judges(judges, "run_comparison", "a comparison asks an LLM judge which response is better "
                           "(a prompt), which a decision model is not")
    config = config or EvalConfig(show_progress=False)
    questions = list(questions) if questions is not None else [overall_question()]
    if n_way and (baseline is not None or pairs is not None):
        raise InputError("an N-way comparison shows every system at once: no baseline or pairs")
    if scale not in SCALES:
        raise InputError(f"scale must be one of {list(SCALES)}, got {scale!r}")
    if n_way and scale != 3:
        raise InputError("the 5-point scale compares two responses; an N-way comparison picks the best of N")
    items: Sequence[PairItem | NWayItem] = (nway_items(prompts, questions) if n_way else
                                            comparison_items(plan_pairs(prompts, baseline=baseline, pairs=pairs),
                                                             questions, scale))
    settings = SweepSettings(kind=SweepKind.COMPARISON, shuffle_options=False, system_prompt=system_prompt,
                             n_bootstrap=0)
    description = comparison_description(items, questions)
    if system_files is not None:
        description["system_files"] = system_files.to_dict()
    stored: StoredSweep = run_stored_sweep(items, judges, settings, config, rubric=description, data_path=data_path,
                                           on_chunk=on_chunk, stop=stop)
    path = config.database_path(stored.name)
    result = load_comparison(path, stored.sweep_id)
    return StoredComparison(result.sweep_id, result.name, result.description, result.judge_ids, result.judgments,
                            result.status, stored.resumed_rotations, result.nway)


def load_comparison(path: str | Path, key: str) -> StoredComparison:
    """Read the comparison ``key`` (its name or sweep id; the latest of a name) from the
    database at ``path`` (:func:`read_comparison`).

    Raises
    ------
    InputError
        No sweep of that name or id, or a sweep that is not a comparison.
    """
    store = Store.open_read_only(path)  # a read-only file, folder or mount is read without writing to it
    try:
        return read_comparison(store, key, where=str(path))
    finally:
        store.close()


def read_comparison(store: Store, key: str, where: str = "database") -> StoredComparison:
    """Read the comparison ``key`` (its name or sweep id) from an open ``store``; ``where``
    names the database in errors.

    Raises
    ------
    InputError
        No sweep of that name or id, or a sweep that is not a comparison.
    """
    row = store.find_sweep(key)
    if row is None:
        raise InputError(f"{where}: no comparison named {key!r}")
    description = json.loads(row["rubric_json"]) if row.get("rubric_json") else None
    if row.get("kind") != SweepKind.COMPARISON.value or not isinstance(description, dict) \
            or description.get("format") != COMPARISON_FORMAT:
        raise InputError(f"{where}: sweep {key!r} ({row['id']}) is a {row.get('kind')} sweep, not a comparison")
    judge_ids = tuple(j["judge_id"] for j in json.loads(row["judges_json"]))
    rows = store.sweep_judgments(row["id"])
    if description.get("mode") == "nway":
        return StoredComparison(row["id"], row["name"], description, judge_ids, (), row["status"],
                                nway=tuple(nway_judgments(description, judge_ids, rows)))
    judgments = pair_judgments(description, judge_ids, rows)
    return StoredComparison(row["id"], row["name"], description, judge_ids, tuple(judgments), row["status"])


def nway_judgments(description: Mapping[str, Any], judge_ids: Sequence[str],
                   rows: Sequence[Mapping[str, Any]]) -> list[NWayJudgment]:
    """One :class:`NWayJudgment` per (prompt, question, judge) whose N rotations are all stored,
    from ``sweep_judgments`` rows (probabilities in slot order, mapped to systems by
    ``option_order_json``)."""
    by_key = {(r["item_id"], r["criterion_index"], r["judge_id"], r["rotation"]): r for r in rows if r["variant"] == "base"}
    out = []
    for entry in description["pairs"]:
        systems = tuple(entry["systems"])
        for q_index, question in enumerate(description["questions"]):
            for judge_id in judge_ids:
                found = [by_key.get((entry["item_id"], q_index, judge_id, r)) for r in range(len(systems))]
                if any(f is None for f in found):
                    continue
                rotations, slots, errors = [], [], []
                for f in found:
                    assert f is not None
                    if f["error"] is not None or not f["probabilities_json"]:
                        rotations.append(None)
                        slots.append(None)
                        errors.append(f["error"] or "no probabilities")
                        continue
                    order = json.loads(f["option_order_json"])
                    values = json.loads(f["probabilities_json"])
                    rotations.append({systems[order[k]]: float(values[k]) for k in range(len(systems))})
                    slots.append(f["chosen_position"])
                out.append(NWayJudgment(entry["item_id"], entry["prompt_id"], systems, judge_id, question["name"],
                                        tuple(rotations), tuple(slots), tuple(errors)))
    return out


def pair_judgments(description: Mapping[str, Any], judge_ids: Sequence[str],
                   rows: Sequence[Mapping[str, Any]]) -> list[PairJudgment]:
    """One :class:`PairJudgment` per (pair, question, judge) of ``description`` whose two orders
    are both stored (a pair not yet judged is left out), from ``sweep_judgments`` rows; the
    labels are the description's ``scale``'s (3 when it has none).

    Raises
    ------
    InputError
        A stored scale other than 3 or 5.
    """
    scale = int(description.get("scale", 3))
    if scale not in SCALES:
        raise InputError(f"comparison description: field 'scale': must be one of {list(SCALES)}, got {scale!r}")
    labels = _SLOT_LABELS if scale == 3 else LABELS5
    by_key: dict[tuple[str, int, str, int], Mapping[str, Any]] = {
        (r["item_id"], r["criterion_index"], r["judge_id"], r["rotation"]): r for r in rows if r["variant"] == "base"}
    out = []
    for pair in description["pairs"]:
        for q_index, question in enumerate(description["questions"]):
            for judge_id in judge_ids:
                ab = by_key.get((pair["item_id"], q_index, judge_id, 0))
                ba = by_key.get((pair["item_id"], q_index, judge_id, 1))
                if ab is None or ba is None:
                    continue
                errors = tuple(r["error"] for r in (ab, ba) if r["error"] is not None)
                out.append(PairJudgment(pair["item_id"], pair["prompt_id"], pair["a"], pair["b"], judge_id,
                                        question["name"], _slot_probabilities(ab, labels),
                                        _slot_probabilities(ba, labels), errors, scale))
    return out


def _slot_probabilities(row: Mapping[str, Any], labels: Sequence[str] = _SLOT_LABELS) -> dict[str, float] | None:
    """A stored rotation's probabilities, shown-answer order, as slot ``labels``; None on error."""
    if row["error"] is not None or not row["probabilities_json"]:
        return None
    values = json.loads(row["probabilities_json"])
    return dict(zip(labels, (float(v) for v in values), strict=True))
