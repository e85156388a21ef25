"""Property tests of planning: seeded option shuffles are reproducible, independent of item
order and batch composition, and cyclic rotations show every option at every position once."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from autorubric_local.core.types import Criterion, CriterionOption
from autorubric_local.engine import ScriptedEngine
from autorubric_local.graders.planning import (
    GradeItem,
    OptionPermutations,
    cyclic_rotations,
    plan_tasks,
)


def criterion(n: int) -> Criterion:
    return Criterion(
        name=f"c{n}",
        requirement=f"Pick one of {n}",
        options=[CriterionOption(label=f"option {k}", value=k / (n - 1)) for k in range(n)],
        scale_type="nominal",
    )


FORMAT = ScriptedEngine().format_chat
# U+FDD0/U+FDD1 delimit untrusted text and are refused in data (tests/test_isolation.py).
_text = st.text(st.characters(exclude_characters="\ufdd0\ufdd1"), min_size=1, max_size=30)
submissions = st.lists(_text, min_size=1, max_size=5, unique=True)


def orders(items: list[GradeItem], seed: int, judges: list[str]) -> dict[tuple[str, int, str], tuple[int, ...] | None]:
    tasks = plan_tasks(items, [(j, FORMAT) for j in judges], seed=seed)
    return {(items[t.item_index].submission, t.criterion_index, judges[t.judge_index]): t.option_order for t in tasks}


@settings(max_examples=examples(100), deadline=None)
@given(submissions, st.integers(0, 2**31 - 1), st.integers(2, 7), st.randoms(use_true_random=False))
def test_shuffles_are_reproducible_and_independent_of_order(texts: list[str], seed: int, n: int, rnd) -> None:
    rubric = (criterion(n), Criterion(requirement="binary"), criterion(n + 1))
    items = [GradeItem(text, rubric) for text in texts]
    first = orders(items, seed, ["a", "b"])
    assert orders(items, seed, ["a", "b"]) == first
    shuffled = list(items)
    rnd.shuffle(shuffled)
    assert orders(shuffled, seed, ["a", "b"]) == first  # processing order does not matter
    assert orders(shuffled[:1], seed, ["a", "b"]).items() <= first.items()  # nor batch composition
    for key, order in first.items():
        if key[1] == 1:
            assert order is None
        else:
            assert order is not None and sorted(order) == list(range(len(rubric[key[1]].options or [])))


@settings(max_examples=examples(100), deadline=None)
@given(st.permutations(list(range(6))).flatmap(lambda p: st.integers(2, 6).map(lambda n: [i for i in p if i < n])))
def test_cyclic_rotations_cover_every_position(base: list[int]) -> None:
    rotations = cyclic_rotations(base)
    n = len(base)
    assert len(rotations) == n and rotations[0] == tuple(base)
    for position in range(n):
        assert sorted(r[position] for r in rotations) == list(range(n))


def test_cyclic_plan_has_one_task_per_rotation() -> None:
    items = [GradeItem("text", (criterion(4), Criterion(requirement="binary")))]
    tasks = plan_tasks(items, [("a", FORMAT)], seed=1, permutations=OptionPermutations.CYCLIC)
    assert [(t.criterion_index, t.permutation_index) for t in tasks] == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0)]
    base = tasks[0].option_order
    assert base is not None
    assert [t.option_order for t in tasks[:4]] == cyclic_rotations(base)


def test_judgments_per_judge_counts_the_planned_tasks() -> None:
    from autorubric_local.graders.planning import judgments_per_judge

    with_na = Criterion(
        requirement="with NA",
        options=[CriterionOption(label="a", value=0.0), CriterionOption(label="b", value=1.0),
                 CriterionOption(label="NA", value=0.0, na=True)],
    )
    rubric = (criterion(4), Criterion(requirement="binary"), with_na)
    items = [GradeItem("text", rubric)]
    for permutations in OptionPermutations:
        for auto_na in (False, True):
            tasks = plan_tasks(items, [("a", FORMAT)], auto_na_option=auto_na, permutations=permutations)
            assert judgments_per_judge(rubric, auto_na_option=auto_na, permutations=permutations) == len(tasks)
