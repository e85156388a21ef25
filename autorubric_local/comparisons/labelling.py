"""Choosing which comparisons people label (active selection) and the Label Studio round trip.

A comparison run judges, for each prompt, pairs of systems in both slot orders. Human preference
labels of a few comparisons correct the judge's win rates (:mod:`.corrected` for a uniform
sample, :mod:`.active` for the selection made here). :func:`draw_comparison_selection` draws
each judged comparison ``i`` (prompt and pair) for labelling with probability ``pi_i`` that
grows with the judge's uncertainty about the human's verdict, mixed with the uniform rule
(:func:`autorubric_local.estimates.sampling.inclusion_probabilities`), and
:func:`save_comparison_selection` stores every ``pi_i`` and draw before any label exists, as
active inference requires (Zrnic & Candès, "Active Statistical Inference", ICML 2024, arXiv
2403.03208).

The uncertainty (:func:`preference_uncertainty`). A human's verdict on a comparison is
``Y = 1`` (``a`` better), ``0.5`` (a tie) or ``0``; the judge's balanced preference (both slot
orders averaged, :func:`.preferences.balanced_preference`) gives probabilities
``(p_a, p_tie, p_b)`` and the prediction ``f = p_a + p_tie / 2``. Were the judge calibrated, the
conditional variance of ``Y`` would be ``Var(Y | X) = p_a + p_tie / 4 - f²``, and the sampling
rule that minimises the active estimator's variance at ``lam = 1`` is ``pi ∝ sqrt(E[(Y - f)² | X])
= sqrt(Var(Y | X))`` (Zrnic & Candès, Sections 3 and 6). This is their ``sqrt(f(1 - f))`` for
binary labels, extended to the tie: it equals ``sqrt(f(1 - f))`` when ``p_tie = 0`` and is 0
only when the judge is certain. It already grows with the disagreement between the two orders
(a judge that picks ``a`` in one order and ``b`` in the other averages to ``f`` near 0.5), so
the spread across orders is not added on top. The judge need not be calibrated for validity:
any ``pi`` fixed before the labels gives unbiased estimates; calibration only makes the rule
efficient; the uniform mixture bounds the weights.

Which system is shown left in a task is drawn at random per comparison (seeded, independently
of the draws) and stored with the draw, so a labeller sees no fixed position; the export's
answers are mapped back to systems by :func:`read_preference_export`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from autorubric_local.bias.cells import SweepKind, SweepSettings
from autorubric_local.bias.checkpoint import sweep_plan
from autorubric_local.comparisons.data import ComparisonPrompt, SystemFiles, load_comparisons
from autorubric_local.comparisons.judging import StoredComparison, comparison_items
from autorubric_local.comparisons.prompts import Question
from autorubric_local.core.errors import InputError
from autorubric_local.estimates import label_studio, sampling
from autorubric_local.store import Store

__all__ = [
    "ComparisonSelection",
    "SelectedComparison",
    "comparison_selection_rows",
    "draw_comparison_selection",
    "load_comparison_selection",
    "preference_uncertainty",
    "read_preference_export",
    "responses_source",
    "save_comparison_selection",
    "write_label_studio",
]

RULE = "sqrt(p_a + p_tie/4 - f^2) of the balanced preference, mixed with uniform"
"""The rule stored in a selection's ``settings_json``."""


@dataclass(frozen=True)
class SelectedComparison:
    """One judged comparison of a selection: its probability, draw and the side shown.

    Attributes
    ----------
    item_id : str
        The comparison's item id in the sweep (``"<prompt id> <a> vs <b>"``).
    prompt_id, system_a, system_b : str
    inclusion_probability : float in (0, 1]
    drawn : bool
    shown_left : str
        ``system_a`` or ``system_b``: whose response the labelling task shows on the left.
    """

    item_id: str
    prompt_id: str
    system_a: str
    system_b: str
    inclusion_probability: float
    drawn: bool
    shown_left: str


@dataclass(frozen=True)
class ComparisonSelection:
    """A selection of a comparison's comparisons (``selection_id`` 0 until stored)."""

    selection_id: int
    sweep_id: str
    judge_id: str
    question: str
    budget: float
    seed: int | None
    mix: float
    items: tuple[SelectedComparison, ...]
    n_left_out: int = 0
    """Comparisons without a complete judgment by ``judge_id`` on ``question`` (not selectable)."""

    @property
    def drawn(self) -> list[SelectedComparison]:
        """The comparisons chosen for labelling, in the comparison's order."""
        return [c for c in self.items if c.drawn]


def preference_uncertainty(preference: Mapping[str, float]) -> float:
    """Standard deviation of a human verdict ``Y`` in {0, 0.5, 1} under the judge's preference.

    ``u = sqrt(p_a + p_tie / 4 - f²)`` with ``f = p_a + p_tie / 2`` (module docstring); for
    ``p_tie = 0`` it is ``sqrt(f(1 - f))``, the rule of Zrnic & Candès (2024, Section 3).

    Parameters
    ----------
    preference : mapping with ``a``, ``b``, ``tie``
        Probabilities (a balanced preference), each in [0, 1], summing to 1 (to 1e-6).

    Returns
    -------
    float in [0, 0.5]

    Raises
    ------
    InputError
        A missing, non-finite or out-of-range probability, or a sum other than 1.
    """
    try:
        p = np.array([float(preference[k]) for k in ("a", "tie", "b")])
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"preference needs numbers 'a', 'b' and 'tie', got {dict(preference)!r}") from exc
    if not np.isfinite(p).all() or (p < 0).any() or (p > 1).any() or abs(p.sum() - 1.0) > 1e-6:
        raise InputError(f"preference must be probabilities summing to 1, got {dict(preference)!r}")
    f = p[0] + p[1] / 2
    return float(np.sqrt(max(0.0, p[0] + p[1] / 4 - f * f)))


def _judged(comparison: StoredComparison, judge_id: str, question: str) -> tuple[list[Any], int]:
    """The complete judgments of ``judge_id`` on ``question``, and how many of its judgments are not."""
    if comparison.nway:
        raise InputError(f"comparison {comparison.name!r} is N-way (every system at once): label selection "
                         "is for pairwise comparisons")
    if judge_id not in comparison.judge_ids:
        raise InputError(f"comparison {comparison.name!r} has no judge {judge_id!r}; its judges are "
                         f"{list(comparison.judge_ids)}")
    names = [q["name"] for q in comparison.questions]
    if question not in names:
        raise InputError(f"comparison {comparison.name!r} asked no question {question!r}; its questions are {names}")
    mine = [j for j in comparison.judgments if j.judge_id == judge_id and j.question == question]
    complete = [j for j in mine if j.complete]
    return complete, len(mine) - len(complete)


def default_judge(comparison: StoredComparison, judge_id: str | None) -> str:
    """``judge_id``, or the comparison's only judge.

    Raises
    ------
    InputError
        No ``judge_id`` and several judges.
    """
    if judge_id is not None:
        return judge_id
    if len(comparison.judge_ids) != 1:
        raise InputError(f"comparison {comparison.name!r} has {len(comparison.judge_ids)} judges "
                         f"{list(comparison.judge_ids)}: name the one whose preferences set the probabilities")
    return comparison.judge_ids[0]


def draw_comparison_selection(comparison: StoredComparison, *, budget: float, seed: int | None = None,
                              judge_id: str | None = None, question: str = "overall",
                              mix: float = 0.2) -> ComparisonSelection:
    """Draw the comparisons of ``comparison`` to be labelled (not stored: :func:`save_comparison_selection`).

    Every comparison with a complete judgment of ``judge_id`` on ``question`` gets
    ``u_i = preference_uncertainty(balanced preference)``, ``pi = inclusion_probabilities(u,
    budget, mix)``, a draw ``xi_i ~ Bernoulli(pi_i)`` (:func:`.sampling.draw` with ``seed``) and a
    side: ``shown_left`` is ``a`` or ``b`` with probability 1/2 each, from a generator spawned
    from ``seed`` (independent of the draws). The same comparison, seed and settings give the
    same selection.

    Parameters
    ----------
    comparison : StoredComparison
        A pairwise comparison (:func:`.judging.load_comparison`).
    budget : float in (0, N]
        Expected number of comparisons to label (``sum(pi)``); ``N`` the completely judged ones.
    seed : int >= 0 or None
        Seed of the draws and the sides (stored).
    judge_id : str, optional
        The judge whose preferences set the probabilities; default the only one.
    question : str, default "overall"
        The question the labels will answer.
    mix : float in (0, 1], default 0.2
        Weight of the uniform rule (:func:`.sampling.inclusion_probabilities`).

    Returns
    -------
    ComparisonSelection
        With ``selection_id`` 0 and one :class:`SelectedComparison` per judged comparison.

    Raises
    ------
    InputError
        An N-way comparison, an unknown judge or question, no complete judgment, a budget
        outside (0, N], a bad ``mix`` or a negative seed.

    References
    ----------
    T. Zrnic and E. J. Candès, "Active Statistical Inference", ICML 2024, arXiv 2403.03208.
    """
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise InputError(f"seed must be a non-negative integer or None, got {seed!r}")
    judge_id = default_judge(comparison, judge_id)
    judged, left_out = _judged(comparison, judge_id, question)
    if not judged:
        raise InputError(f"comparison {comparison.name!r} has no complete judgment of judge {judge_id!r} on "
                         f"question {question!r}")
    if isinstance(budget, bool) or not isinstance(budget, (int, float, np.integer, np.floating)) or \
            not 0 < float(budget) <= len(judged):
        raise InputError(f"budget must be in (0, {len(judged)}] (the judged comparisons), got {budget!r}")
    u = np.array([preference_uncertainty(j.preference) for j in judged])
    pi = sampling.inclusion_probabilities(u, float(budget), mix)
    drawn = sampling.draw(pi, seed)
    side_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    left_is_a = side_rng.random(len(judged)) < 0.5
    items = tuple(SelectedComparison(j.item_id, j.prompt_id, j.system_a, j.system_b, float(p), bool(d),
                                     j.system_a if la else j.system_b)
                  for j, p, d, la in zip(judged, pi, drawn, left_is_a, strict=True))
    return ComparisonSelection(0, comparison.sweep_id, judge_id, question, float(budget), seed, float(mix), items,
                               left_out)


def save_comparison_selection(db: str | Path, selection: ComparisonSelection) -> ComparisonSelection:
    """Store ``selection`` (from :func:`draw_comparison_selection`) in ``db``; return it with its id."""
    store = Store.open(db)
    try:
        selection_id = store.save_comparison_selection(
            selection.sweep_id, judge_id=selection.judge_id, question=selection.question, budget=selection.budget,
            seed=selection.seed, mix=selection.mix, settings={"rule": RULE, "left_out": selection.n_left_out},
            items=[vars(c) for c in selection.items])
    finally:
        store.close()
    return replace(selection, selection_id=selection_id)


def load_comparison_selection(db: str | Path, comparison: StoredComparison,
                              selection_id: int | None = None) -> ComparisonSelection | None:
    """The comparison's stored selection (default its latest), or None when it has none."""
    store = Store.open_read_only(db)
    try:
        row = store.comparison_selection(comparison.sweep_id, selection_id)
    finally:
        store.close()
    if row is None:
        return None
    items = tuple(SelectedComparison(r["item_id"], r["prompt_id"], r["system_a"], r["system_b"],
                                     float(r["inclusion_probability"]), bool(r["drawn"]), r["shown_left"])
                  for r in row["items"])
    settings = json.loads(row["settings_json"] or "{}")
    return ComparisonSelection(int(row["id"]), row["sweep_id"], row["judge_id"], row["question"], float(row["budget"]),
                               row["seed"], float(row["mix"]), items, int(settings.get("left_out", 0)))


def responses_source(comparison: StoredComparison, data_path: str | None = None, *, data: str | Path | None = None,
                     system_files: Sequence[tuple[str, str]] | None = None) -> Path | SystemFiles | None:
    """Where to read the responses of ``comparison`` for :func:`comparison_selection_rows`.

    Parameters
    ----------
    comparison : StoredComparison
    data_path : str, optional
        The sweep's stored ``data_path`` (where ``compare`` read a comparison file).
    data : str or Path, optional
        A comparison file given now (:func:`~.data.load_comparisons`).
    system_files : sequence of (str, str), optional
        ``(system, file)`` per system given now, read as the comparison read its own
        (:class:`~.data.SystemFiles` with the columns and rubric it stored; ``grade``'s columns
        and the stand-in rubric for a comparison that stored none).

    Returns
    -------
    Path, SystemFiles or None
        ``data``; else ``system_files``; else the systems' files the comparison stored
        (``description["system_files"]``); else the stored ``data_path`` when it is a file; else
        None (nothing to read: :func:`comparison_selection_rows` says so).

    Raises
    ------
    InputError
        Both ``data`` and ``system_files``; a stored systems' file that no longer exists (named,
        with the comparison); a malformed stored ``system_files``.
    """
    if data is not None and system_files:
        raise InputError("give the comparison file or the systems' files, not both")
    if data is not None:
        return Path(data)
    stored_files = comparison.description.get("system_files")
    stored = None if stored_files is None else SystemFiles.from_dict(
        stored_files, where=f"comparison {comparison.name!r}: description")
    if system_files:
        return SystemFiles(tuple(system_files), stored.columns if stored else None, stored.rubric if stored else None)
    if stored is not None:
        for system, path in stored.files:
            if not Path(path).is_file():
                raise InputError(f"{path}: no such file (system {system!r} of comparison {comparison.name!r}); give "
                                 "the systems' files again (--system NAME=FILE)")
        return stored
    path = Path(data_path) if data_path else None
    return path if path is not None and path.is_file() else None


def _prompts_for(comparison: StoredComparison, data: str | Path | SystemFiles | None,
                 stored_plan: Mapping[str, Any] | None,
                 wanted: Sequence[SelectedComparison]) -> dict[str, ComparisonPrompt]:
    """The prompts of the wanted comparisons from the comparison file or the systems' files,
    checked against what was judged."""
    if data is None:
        raise InputError(f"comparison {comparison.name!r}: give the comparison file (--data) or the systems' files "
                         "(--system NAME=FILE) to show its responses")
    if isinstance(data, SystemFiles):
        files = dict(data.files)
        what = "files"
        prompts = {p.prompt_id: p for p in data.load()}
    else:
        files = {}
        what = "file"
        prompts = {p.prompt_id: p for p in load_comparisons(data)}

    def where(a: str, b: str) -> str:  # the file or files a comparison's responses come from
        return ", ".join(dict.fromkeys(files.get(s, "(no file)") for s in (a, b))) if files else str(data)

    chosen = []
    for c in wanted:
        prompt = prompts.get(c.prompt_id)
        if prompt is None or c.system_a not in prompt.responses or c.system_b not in prompt.responses:
            raise InputError(f"{where(c.system_a, c.system_b)}: no responses of {c.system_a!r} and {c.system_b!r} to "
                             f"prompt {c.prompt_id!r} (comparison {c.item_id!r}): not the {what} comparison "
                             f"{comparison.name!r} judged")
        chosen.append((prompt, c.system_a, c.system_b))
    if stored_plan is not None and chosen:
        questions = [Question(q["name"], q["text"], q["weight"]) for q in comparison.questions]
        items = comparison_items(chosen, questions, comparison.scale)
        now = sweep_plan(items, [], SweepSettings(kind=SweepKind.COMPARISON, shuffle_options=False,
                                                  n_bootstrap=0))["items"]
        judged = {key: digest for key, digest in stored_plan.get("items", [])}
        pairs = {c.item_id: (c.system_a, c.system_b) for c in wanted}
        for key, digest in now:
            if key in judged and judged[key] != digest:
                raise InputError(f"{where(*pairs[key])}: comparison {key!r} differs from the one comparison "
                                 f"{comparison.name!r} judged (query, reference or a response changed)")
    return prompts


def comparison_selection_rows(comparison: StoredComparison, selection: ComparisonSelection,
                              data: str | Path | SystemFiles | None,
                              plan: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per drawn comparison, for people to label: ``comparison_id``, ``id`` (the prompt),
    ``a``, ``b``, ``winner`` (null, to fill in with ``a``, ``b`` or ``tie``),
    ``inclusion_probability``, ``left_system``, ``query``, ``reference``, ``response_a`` and
    ``response_b``, with the responses read from ``data`` (a comparison file, or the systems'
    files, :class:`~.data.SystemFiles`; :func:`responses_source` finds them) and checked against
    the stored plan's item hashes (``plan``: the sweep's ``plan_json``, when known).

    Raises
    ------
    InputError
        No ``data``, a file without a drawn comparison's responses, or one whose content differs
        from what was judged (naming the file, or the two systems' files, and the comparison).
    """
    drawn = selection.drawn
    prompts = _prompts_for(comparison, data, plan, drawn) if drawn else {}
    rows = []
    for c in drawn:
        p = prompts[c.prompt_id]
        rows.append({"comparison_id": c.item_id, "id": c.prompt_id, "a": c.system_a, "b": c.system_b, "winner": None,
                     "inclusion_probability": c.inclusion_probability, "left_system": c.shown_left,
                     "query": p.query, "reference": p.reference,
                     "response_a": p.responses[c.system_a], "response_b": p.responses[c.system_b]})
    return rows


def write_label_studio(rows: Sequence[Mapping[str, Any]], question_text: str, path: Path) -> None:
    """Write the rows of :func:`comparison_selection_rows` as Label Studio tasks at ``path`` and
    the labelling config beside it (same name, ``.xml``).

    Raises
    ------
    OSError
        Either file cannot be written.
    """
    tasks = label_studio.pairwise_tasks([{**r, "prompt_id": r["id"], "system_a": r["a"], "system_b": r["b"]}
                                         for r in rows])
    with_reference = any(r.get("reference") for r in rows)
    path.write_text(json.dumps(tasks, indent=1), encoding="utf-8")
    path.with_suffix(".xml").write_text(label_studio.pairwise_labelling_config(question_text, with_reference),
                                        encoding="utf-8")


def read_preference_export(path: str | Path) -> tuple[list[dict[str, str]], list[str]]:
    """Preference labels from a Label Studio export of :func:`write_label_studio`'s tasks, or from
    the filled-in JSONL of :func:`comparison_selection_rows`.

    Returns
    -------
    labels : list of dict
        ``{"id", "a", "b", "winner"}`` per answered comparison (the format of
        :func:`.corrected.load_preference_labels`), the left/right swap undone.
    unanswered : list of str
        The comparison ids left without an answer.

    Raises
    ------
    InputError
        As :func:`autorubric_local.estimates.label_studio.read_pairwise_export`; for JSONL, a line
        that is not an object, lacks ``id``, ``a`` or ``b``, or has a ``winner`` other than ``a``,
        ``b``, ``tie`` or null; every problem names the file, the task or line and the field.
    """
    from autorubric_local.core.checks import jsonl_lines, parse_json
    from autorubric_local.data.validation import ProblemCollector, json_type_name, read_text_file

    text = read_text_file(Path(path))
    if text.lstrip().startswith("["):
        return label_studio.read_pairwise_export(path)
    problems = ProblemCollector(str(path))
    labels: list[dict[str, str]] = []
    unanswered: list[str] = []
    for number, line in jsonl_lines(text):
        try:
            row = parse_json(line)
            if not isinstance(row, dict):
                raise InputError(f"expected a JSON object, got {json_type_name(row)}")
            for name in ("id", "a", "b"):
                if not isinstance(row.get(name), str) or not row[name].strip():
                    raise InputError(f"field {name!r}: " + ("missing" if row.get(name) is None else
                                                            f"expected a non-empty string, got {row[name]!r}"))
            winner = row.get("winner")
            if winner is not None and winner not in ("a", "b", "tie"):
                raise InputError(f"field 'winner': expected 'a', 'b', 'tie' or null, got {winner!r}")
        except InputError as exc:
            problems.add(f"line {number}", str(exc))
            continue
        if winner is None:
            unanswered.append(str(row.get("comparison_id") or f"{row['id']} {row['a']} vs {row['b']}"))
        else:
            labels.append({"id": row["id"], "a": row["a"], "b": row["b"], "winner": winner})
    problems.raise_if_any()
    return labels, unanswered
