"""Unrelated-option sampling (Grade Score paper, section 4.6, the "rand option" rows of its tables).

For each (item, multi-choice criterion) one extra option is drawn from the options of *other*
criteria or items of the same job (for selection tasks: the candidate responses of other
prompts), never one whose label equals an option the criterion already has. The added option
is appended last (original index N), scored 0.0, and is shown at every position across the
N + 1 rotations like any other option.

Draws are seeded and independent of processing order and of the judges: the generator of
item ``i``, criterion ``c`` is seeded by SHA-256 of ``(seed, i, c)``, and the pool is sorted,
so the same data and seed always give the same unrelated options for every judge.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass

from autorubric_local.core.errors import InputError
from autorubric_local.core.types import Criterion, CriterionOption
from autorubric_local.graders.planning import GradeItem

__all__ = ["UnrelatedOption", "sample_unrelated_options", "with_unrelated_option"]


@dataclass(frozen=True)
class UnrelatedOption:
    """An option borrowed from elsewhere in the job.

    Attributes
    ----------
    label : str
        The option text.
    source_item, source_criterion, source_option : int
        Where it was taken from (item index, criterion index, option index).
    """

    label: str
    source_item: int
    source_criterion: int
    source_option: int


def _key(label: str) -> str:
    return label.strip().lower()


def _rng(seed: int, item_index: int, criterion_index: int) -> random.Random:
    digest = hashlib.sha256(f"unrelated\x1f{seed}\x1f{item_index}\x1f{criterion_index}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def sample_unrelated_options(items: Sequence[GradeItem], seed: int) -> dict[tuple[int, int], UnrelatedOption]:
    """One unrelated option per (item index, criterion index) of every multi-choice criterion.

    Parameters
    ----------
    items : sequence of GradeItem
    seed : int

    Returns
    -------
    dict
        ``(item_index, criterion_index) -> UnrelatedOption``.

    Raises
    ------
    InputError
        If some criterion has no option to borrow: every other option of the job has a label
        the criterion already uses (for example one multi-choice criterion shared by all items).
    """
    pool: dict[str, UnrelatedOption] = {}
    for i, item in enumerate(items):
        for c, criterion in enumerate(item.rubric):
            for o, option in enumerate(criterion.options or ()):
                if not option.na:
                    pool.setdefault(_key(option.label), UnrelatedOption(option.label, i, c, o))
    ordered = [pool[k] for k in sorted(pool)]
    sampled: dict[tuple[int, int], UnrelatedOption] = {}
    for i, item in enumerate(items):
        for c, criterion in enumerate(item.rubric):
            if criterion.options is None:
                continue
            own = {_key(option.label) for option in criterion.options}
            candidates = [u for u in ordered if _key(u.label) not in own]
            if not candidates:
                where = item.item_id or f"item {i}"
                raise InputError(
                    f"unrelated option: {where}, criterion {c + 1} ({criterion.name or 'unnamed'}): no option "
                    "from another criterion or item to borrow (every option label of the job is already "
                    "one of its own); add criteria or items with other options, or drop the unrelated option"
                )
            sampled[(i, c)] = _rng(seed, i, c).choice(candidates)
    return sampled


def with_unrelated_option(criterion: Criterion, option: UnrelatedOption) -> Criterion:
    """``criterion`` with ``option`` appended last (original index N, value 0.0).

    Raises
    ------
    InputError
        If the criterion is binary.
    """
    if criterion.options is None:
        raise InputError("with_unrelated_option: a binary criterion has no options to extend")
    extra = CriterionOption(label=option.label, value=0.0)
    return criterion.model_copy(update={"options": [*criterion.options, extra]})
