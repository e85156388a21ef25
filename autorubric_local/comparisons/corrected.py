"""Judge-corrected win rates: a few human preference labels correct the judge's preferences by
prediction-powered inference (PPI++), as ``estimate`` does for pass rates.

For a pair of systems ``(s, t)`` the target is the human win rate of ``s`` over ``t``: the mean of
``Y = 1`` (a human prefers ``s``), ``0.5`` (a tie) or ``0`` over the prompts both were compared on.
The judge gives every comparison a prediction ``f = P(s wins) + P(tie) / 2`` (its soft preference,
balanced over both slot orders). With ``Y`` on a uniformly random labelled subset, the PPI++
estimate (:func:`~autorubric_local.estimates.methods.ppi_mean`: ``ppi_py``, power-tuned) uses
``f`` on every comparison and ``Y - lam f`` on the labelled ones; the classical estimate uses the
labels alone (:func:`~autorubric_local.estimates.methods.classical_mean`). Both are kept in
[0, 1] and never of zero width (:func:`~autorubric_local.estimates.methods.within_range`), and
noted below 50 labels, as ``estimate``'s are.
Coverage of both against a known truth is simulated in ``tests/test_compare.py``.

Preference labels are JSONL, one labelled comparison a line::

    {"id": "p1", "a": "sys-a", "b": "sys-b", "winner": "a"}

``id`` is the prompt's id, ``a`` and ``b`` the two systems (either order), ``winner`` ``"a"``,
``"b"`` or ``"tie"`` (``a`` and ``b`` as named on the line). Every problem names the file, the
line and the field.

References: Angelopoulos, Bates, Fannjiang, Jordan, Zrnic, "Prediction-powered inference",
Science 2023 (arXiv 2301.09633); Angelopoulos, Duchi, Zrnic, "PPI++: Efficient
prediction-powered inference", arXiv 2311.01453.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from autorubric_local.comparisons.judging import StoredComparison
from autorubric_local.core.checks import check_keys, jsonl_lines, parse_json
from autorubric_local.core.errors import InputError
from autorubric_local.data.validation import ProblemCollector, json_type_name, read_text_file
from autorubric_local.estimates.api import SMALL_N_NOTE
from autorubric_local.estimates.methods import (
    MIN_LABELS_FOR_COVERAGE,
    Interval,
    classical_mean,
    ppi_mean,
    with_notes,
    within_range,
)

__all__ = ["LABEL_FIELDS", "CorrectedWinRate", "LabelledPreference", "PreferenceLabel", "corrected_win_rates",
           "labelled_preferences", "load_preference_labels"]

LABEL_FIELDS: tuple[str, ...] = ("id", "a", "b", "winner")


@dataclass(frozen=True)
class PreferenceLabel:
    """A human's verdict on one comparison: ``winner`` is ``a``, ``b`` or ``tie``."""

    prompt_id: str
    a: str
    b: str
    winner: str

    def outcome_for(self, system: str) -> float:
        """1 when ``system`` won, 0.5 for a tie, 0 when it lost."""
        if self.winner == "tie":
            return 0.5
        return 1.0 if (self.a if self.winner == "a" else self.b) == system else 0.0


def load_preference_labels(path: str | Path) -> list[PreferenceLabel]:
    """Read preference labels (module docstring for the format).

    Raises
    ------
    InputError
        Unreadable file, invalid JSON, a missing, bad or unknown field, one comparison labelled
        twice, or no label; every line of the message names the file, the line and the field.
    """
    source = str(path)
    problems = ProblemCollector(source)
    labels: list[PreferenceLabel] = []
    seen: dict[tuple[str, frozenset[str]], int] = {}
    for number, line in jsonl_lines(read_text_file(Path(path))):
        try:
            row = parse_json(line)
            if not isinstance(row, dict):
                raise InputError(f"expected a JSON object, got {json_type_name(row)}")
            check_keys(row, LABEL_FIELDS)
            values = {}
            for name in LABEL_FIELDS:
                value = row.get(name)
                if isinstance(value, int) and not isinstance(value, bool) and name == "id":
                    value = str(value)
                if not isinstance(value, str) or not value.strip():
                    raise InputError(f"field {name!r}: " + ("missing" if value is None else
                                                            f"expected a non-empty string, got {value!r}"))
                values[name] = value
            if values["winner"] not in ("a", "b", "tie"):
                raise InputError(f"field 'winner': expected 'a', 'b' or 'tie', got {values['winner']!r}")
            if values["a"] == values["b"]:
                raise InputError(f"field 'b': the same system as 'a' ({values['a']!r})")
            key = (values["id"], frozenset((values["a"], values["b"])))
            if key in seen:
                raise InputError(f"comparison {values['id']!r} of {values['a']!r} and {values['b']!r} is already "
                                 f"labelled on line {seen[key]}")
            seen[key] = number
            labels.append(PreferenceLabel(values["id"], values["a"], values["b"], values["winner"]))
        except InputError as exc:
            problems.add(f"line {number}", str(exc))
    problems.raise_if_any()
    if not labels:
        raise InputError(f"{source}: no preference labels found")
    return labels


@dataclass(frozen=True)
class LabelledPreference:
    """One complete judgment of systems ``a`` and ``b`` (in the comparison's order) with the
    judge's soft preference for ``a`` (``P(a) + P(tie) / 2``, balanced over both slot orders) and
    its human label, if any."""

    prompt_id: str
    a: str
    b: str
    judge: float
    label: PreferenceLabel | None


def labelled_preferences(comparison: StoredComparison, labels: Sequence[PreferenceLabel], *, judge_id: str,
                         question: str) -> list[LabelledPreference]:
    """Every complete pair judgment of ``judge_id`` on ``question``, each with its label (or None).

    Returns
    -------
    list of LabelledPreference
        In the comparison's judgment order, one per judged (prompt, pair of systems).

    Raises
    ------
    InputError
        A label names a comparison that was not judged (its prompt and systems are named).
    """
    judged: dict[tuple[str, frozenset[str]], tuple[str, str, str, float]] = {}
    for j in comparison.judgments:
        if j.judge_id == judge_id and j.question == question and j.complete:
            p = j.preference
            assert p is not None
            judged[(j.prompt_id, frozenset((j.system_a, j.system_b)))] = (j.prompt_id, j.system_a, j.system_b,
                                                                          p["a"] + p["tie"] / 2)
    human: dict[tuple[str, frozenset[str]], PreferenceLabel] = {}
    for label in labels:
        key = (label.prompt_id, frozenset((label.a, label.b)))
        if key not in judged:
            raise InputError(f"label of prompt {label.prompt_id!r}, systems {label.a!r} and {label.b!r}: no complete "
                             f"judgment of judge {judge_id!r} on question {question!r} in comparison {comparison.name!r}")
        human[key] = label
    return [LabelledPreference(*value, human.get(key)) for key, value in judged.items()]


@dataclass(frozen=True)
class CorrectedWinRate:
    """One pair's human win rate of ``system`` over ``other``: the judge's mean alone, the
    classical estimate from the labels and the PPI++ estimate (each an
    :class:`~autorubric_local.estimates.methods.Interval`; NaN with a note below 2 labels)."""

    system: str
    other: str
    n_comparisons: int
    n_labelled: int
    judge: float
    classical: Interval
    ppi: Interval


def corrected_win_rates(comparison: StoredComparison, labels: Sequence[PreferenceLabel], *, judge_id: str,
                        question: str = "overall", confidence: float = 0.9) -> list[CorrectedWinRate]:
    """Classical and PPI++ win rates for every compared pair of systems (module docstring).

    Parameters
    ----------
    comparison : StoredComparison
    labels : sequence of PreferenceLabel
        A uniformly random sample of the comparisons (for PPI++'s validity).
    judge_id : str
    question : str
        A question's name (the labels say which response is better on it).
    confidence : float in (0, 1)

    Returns
    -------
    list of CorrectedWinRate
        One per pair of systems with a complete judgment, ``system`` first in the comparison's order.

    Raises
    ------
    InputError
        A label names a comparison that was not judged (its prompt and systems are named), or no
        pair has 2 labels.
    """
    alpha = 1.0 - confidence
    matched = labelled_preferences(comparison, labels, judge_id=judge_id, question=question)
    order = {s: k for k, s in enumerate(comparison.systems)}
    by_pair: dict[tuple[str, str], list[tuple[float, float | None]]] = {}
    for row in matched:
        first, second = sorted((row.a, row.b), key=order.__getitem__)
        f_first = row.judge if first == row.a else 1.0 - row.judge
        y = None if row.label is None else row.label.outcome_for(first)
        by_pair.setdefault((first, second), []).append((f_first, y))
    out = []
    for (first, second), rows in by_pair.items():
        f = np.array([r[0] for r in rows])
        labelled = np.array([r[1] is not None for r in rows])
        y = np.array([r[1] for r in rows if r[1] is not None], dtype=float)
        n = int(labelled.sum())
        if n < 2 or n == len(rows):
            note = "fewer than 2 labels" if n < 2 else "every comparison is labelled: the classical estimate is exact here"
            classical = _bounded(classical_mean(y, alpha), n, alpha) if n >= 2 else _nan(note)
            ppi = _nan(note) if n < 2 else classical
        else:
            classical = _bounded(classical_mean(y, alpha), n, alpha)
            ppi = _bounded(ppi_mean(y, f[labelled], f[~labelled], alpha), n, alpha)
        out.append(CorrectedWinRate(first, second, len(rows), n, float(f.mean()), classical, ppi))
    if not any(r.n_labelled >= 2 for r in out):
        raise InputError("no pair of systems has 2 or more labelled comparisons")
    return out


def _bounded(interval: Interval, n: int, alpha: float) -> Interval:
    bounded = within_range(interval, 0.0, 1.0, n, alpha)
    return with_notes(bounded, SMALL_N_NOTE) if n < MIN_LABELS_FOR_COVERAGE else bounded


def _nan(note: str) -> Interval:
    return Interval(float("nan"), None, None, None, note=note)
