"""Position-bias sweeps: judge every cyclic rotation of every multi-choice criterion's options.

``run_sweep`` plans, per judge, the N rotations of each multi-choice criterion (binary criteria
are skipped) of every item - and, with ``unrelated_option``, the N + 1 rotations of the same
criterion with an unrelated option added (:mod:`.unrelated`) - and sends them to the judge's
engine in chunks of whole items (:func:`sweep_chunks`, at most ``chunk_judgments`` rotations
each unless one item has more), so the engine shares each item's prefix across all of its
rotations. An engine failure fails only its chunk: each of that chunk's rotations is recorded
with a category-prefixed error (``infrastructure: ...``) and counted as dropped in its cell,
and the other chunks go on. Each (item, criterion, judge, variant) becomes a
:class:`SweepCell` with its :class:`~.grade_score.GradeScores`; :mod:`.aggregate` summarises
cells per judge and criterion. :mod:`.stored` runs the same chunks with a commit per chunk and
resume.

Rotations come from :func:`~autorubric_local.graders.planning.plan_tasks` with
``permutations=CYCLIC`` (rubric sweeps), :func:`.selection.plan_selection_tasks` (selection
tasks) or, for comparison sweeps, the items themselves (:class:`~.cells.OwnRotations`: a pair of
systems' responses in both slot orders, :mod:`autorubric_local.comparisons.prompts`; there
``option_order`` maps the shown answers to systems rather than rotating them), so ``JudgmentResult.task.permutation_index`` is the rotation number ``r`` and
``option_order[k] = base[(k + r) % N]``.
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from autorubric_local.bias.aggregate import SweepAggregate, aggregate_cells
from autorubric_local.bias.cells import OwnRotations, SweepCell, SweepKind, SweepSettings, Variant, criterion_label
from autorubric_local.bias.grade_score import RotationOutcome, grade_scores
from autorubric_local.bias.selection import plan_selection_tasks
from autorubric_local.bias.unrelated import (
    UnrelatedOption,
    sample_unrelated_options,
    with_unrelated_option,
)
from autorubric_local.core.errors import InputError
from autorubric_local.core.reports import TokenUsage
from autorubric_local.engine.base import Engine
from autorubric_local.graders.criterion_grader import JudgeSpec
from autorubric_local.graders.decision_stage import refuse_decision_judges
from autorubric_local.graders.execution import JudgeMode, JudgmentResult, run_tasks
from autorubric_local.graders.planning import (
    GradeItem,
    JudgmentTask,
    OptionPermutations,
    plan_tasks,
)
from autorubric_local.judges.config import LLMConfig
from autorubric_local.judges.engines import load_engine
from autorubric_local.judges.memory import with_memory_shares
from autorubric_local.runner.config import DEFAULT_CHUNK_JUDGMENTS
from autorubric_local.runner.runner import RUN_TIME_ERRORS, make_chunks

__all__ = [
    "LoadedJudge", "PlannedRotation", "SweepCell", "SweepKind", "SweepResult", "SweepSettings", "Variant",
    "build_cells", "check_sweep_input", "judge_chunk", "load_configs", "load_judge", "multi_choice_criteria",
    "plan_sweep", "run_sweep", "sweep_chunks",
]

PlannedRotation = tuple[JudgmentTask, Variant]
"""One planned rotation: its task and the variant it belongs to."""


@dataclass(frozen=True)
class SweepResult:
    """Everything a sweep produced (``aggregates`` from :func:`.aggregate.aggregate_cells`)."""

    settings: SweepSettings
    judge_ids: tuple[str, ...]
    items: tuple[GradeItem, ...]
    cells: tuple[SweepCell, ...]
    aggregates: tuple[SweepAggregate, ...]
    seconds: Mapping[str, float] = field(default_factory=dict)


def _variant_items(
    items: Sequence[GradeItem], unrelated: Mapping[tuple[int, int], UnrelatedOption]
) -> list[GradeItem]:
    out = []
    for i, item in enumerate(items):
        rubric = tuple(
            with_unrelated_option(criterion, unrelated[(i, c)]) if criterion.options is not None else criterion
            for c, criterion in enumerate(item.rubric)
        )
        out.append(dataclasses.replace(item, rubric=rubric))
    return out


def plan_sweep(
    items: Sequence[GradeItem],
    judge_id: str,
    format_chat: Callable[[list[dict[str, str]]], str],
    settings: SweepSettings,
    unrelated: Mapping[tuple[int, int], UnrelatedOption] | None = None,
    system_prompt: str | None = None,
) -> list[PlannedRotation]:
    """Every rotation task of one judge, item-major (both variants of an item together).

    ``system_prompt`` (the judge's own) overrides ``settings.system_prompt``; with
    ``settings.criteria``, only those criteria's rotations (criterion indices stay the rubric's).
    """
    prompt = system_prompt or settings.system_prompt
    variants: list[tuple[Variant, Sequence[GradeItem]]] = [(Variant.BASE, items)]
    if unrelated is not None:
        variants.append((Variant.UNRELATED, _variant_items(items, unrelated)))
    planned: list[PlannedRotation] = []
    for variant, variant_items in variants:
        if settings.kind is SweepKind.COMPARISON:
            tasks = [task for index, item in enumerate(variant_items)
                     for task in _own_rotations(item, index).rotation_tasks(index, judge_id, format_chat, prompt)]
        elif settings.kind is SweepKind.SELECTION:
            tasks = plan_selection_tasks(
                variant_items, judge_id, format_chat, system_prompt=prompt,
                shuffle_options=settings.shuffle_options, seed=settings.seed,
            )
        else:
            tasks = plan_tasks(
                variant_items, [(judge_id, format_chat)], system_prompt=prompt,
                shuffle_options=settings.shuffle_options, seed=settings.seed,
                permutations=OptionPermutations.CYCLIC,
            )
        planned.extend((t, variant) for t in tasks if t.option_order is not None
                       and (settings.criteria is None
                            or criterion_label(t.criterion, t.criterion_index) in settings.criteria))
    planned.sort(key=lambda pair: pair[0].item_index)  # stable: each item's prefix in one run
    return planned


def _own_rotations(item: GradeItem, index: int) -> OwnRotations:
    if not isinstance(item, OwnRotations):
        raise InputError(f"sweep: item {index} ({item.item_id!r}) of a comparison sweep does not plan its own "
                         "rotations (autorubric_local.comparisons builds such items)")
    return item


@dataclass(frozen=True)
class LoadedJudge:
    """A judge ready to sweep: its spec, its loaded engine and its planned rotations."""

    spec: JudgeSpec
    engine: Engine
    planned: list[PlannedRotation]


def load_configs(judges: Sequence[JudgeSpec]) -> dict[str, LLMConfig]:
    """Each judge's config as its engine is loaded, judge_id -> config: vLLM judges of different
    engines split the device memory (:func:`~autorubric_local.judges.memory.with_memory_shares`,
    as a grader's judges do), since a sweep's engines stay loaded side by side until it ends.
    Computed where the engines load (a Ray actor computes its own, for its own platform).

    Raises
    ------
    InputError
        Set ``gpu_memory_utilization`` shares that add up to more than 1.0.
    """
    return with_memory_shares([(judge.judge_id, judge.llm_config) for judge in judges])


def load_judge(
    items: Sequence[GradeItem],
    judge: JudgeSpec,
    settings: SweepSettings,
    unrelated: Mapping[tuple[int, int], UnrelatedOption] | None,
    load_config: LLMConfig | None = None,
) -> LoadedJudge:
    """Load ``judge``'s engine (:func:`~autorubric_local.judges.engines.load_engine`, the one
    place a sweep loads a judge) and plan its rotations (:func:`plan_sweep`).

    ``load_config`` is the config to load (default ``judge.llm_config``): the judge's entry of
    :func:`load_configs` when the sweep has other judges. ``judge`` itself is kept unchanged.
    """
    engine = load_engine(judge.llm_config if load_config is None else load_config)
    planned = plan_sweep(items, judge.judge_id, engine.format_chat, settings, unrelated, judge.system_prompt)
    return LoadedJudge(judge, engine, planned)


@dataclass(frozen=True)
class _ItemRotations:
    """One item's planned rotations (of one judge), keyed for :func:`~autorubric_local.runner.runner.make_chunks`."""

    key: str
    rotations: tuple[PlannedRotation, ...]


def sweep_chunks(planned: Sequence[PlannedRotation], chunk_judgments: int) -> list[list[PlannedRotation]]:
    """Cut one judge's item-major rotations into chunks of whole items.

    Each chunk holds at most ``chunk_judgments`` rotations, except an item with more, which
    forms its own chunk (the grading runner's rule, :func:`~autorubric_local.runner.runner.make_chunks`),
    so every item's rotations, both variants, go to the engine in one call.

    Parameters
    ----------
    planned : sequence of (JudgmentTask, Variant)
        From :func:`plan_sweep` (or a subset of it), in item order.
    chunk_judgments : int, >= 1

    Returns
    -------
    list of list of (JudgmentTask, Variant)
        The rotations in their given order.
    """
    by_item: dict[int, list[PlannedRotation]] = {}
    for pair in planned:
        by_item.setdefault(pair[0].item_index, []).append(pair)
    entries = [_ItemRotations(str(index), tuple(rotations)) for index, rotations in by_item.items()]
    estimates = {entry.key: len(entry.rotations) for entry in entries}
    chunks = make_chunks(entries, estimates, chunk_judgments, None)  # type: ignore[arg-type]
    return [[pair for entry in chunk for pair in entry.rotations] for chunk in chunks]  # type: ignore[attr-defined]


def judge_chunk(engine: Engine, chunk: Sequence[PlannedRotation], thinking_budget: int = 0) -> list[JudgmentResult]:
    """Judge one chunk's rotations in one engine workload; results in chunk order.

    An engine failure (``RuntimeError``, ``EngineError``, out of memory, ...) is already turned
    by :func:`~autorubric_local.graders.execution.run_tasks` into an ``infrastructure: ...``
    error on every rotation of the call; any other run-time error of the chunk
    (:data:`~autorubric_local.runner.runner.RUN_TIME_ERRORS`) becomes an ``unknown: ...`` error
    on each of its rotations. Either way the rotations stay, with no choice, and count as dropped.
    """
    tasks = [task for task, _ in chunk]
    try:
        return run_tasks(engine, tasks, mode=JudgeMode.SCORE, reasoning_first=thinking_budget > 0,
                         explanation_tokens=thinking_budget)
    except RUN_TIME_ERRORS as exc:
        error = f"unknown: sweep chunk failed: {type(exc).__name__}: {exc}"
        return [JudgmentResult(task, (), None, None, False, TokenUsage(), 0.0, error) for task in tasks]


def build_cells(
    items: Sequence[GradeItem],
    judge_id: str,
    planned: Sequence[PlannedRotation],
    results: Sequence[JudgmentResult],
    unrelated: Mapping[tuple[int, int], UnrelatedOption] | None,
    preferred: Sequence[int | None] | None,
) -> list[SweepCell]:
    """One :class:`SweepCell` per (item, criterion, variant) of ``planned`` (``results`` in the
    same order), by item, criterion, then ``base`` before ``unrelated``; rotations in order."""
    groups: dict[tuple[int, int, Variant], list[JudgmentResult]] = defaultdict(list)
    for (task, variant), result in zip(planned, results, strict=True):
        groups[(task.item_index, task.criterion_index, variant)].append(result)
    cells = []
    for (i, c, variant), group in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] != Variant.BASE)):
        group.sort(key=lambda r: r.task.permutation_index)
        rotations = [RotationOutcome(r.task.option_order or (), r.chosen, r.probabilities) for r in group]
        cells.append(
            SweepCell(
                item_index=i,
                item_id=items[i].item_id or f"item-{i}",
                criterion_index=c,
                criterion=group[0].task.criterion,
                judge_id=judge_id,
                variant=variant,
                results=tuple(group),
                scores=grade_scores(rotations),
                unrelated=unrelated.get((i, c)) if unrelated is not None and variant is Variant.UNRELATED else None,
                preferred=preferred[i] if preferred is not None and c == 0 else None,
            )
        )
    return cells


def multi_choice_criteria(items: Sequence[GradeItem]) -> list[str]:
    """Names (:func:`~.cells.criterion_label`) of the multi-choice criteria of ``items``'
    rubrics, each once, in order of first appearance: what ``SweepSettings.criteria`` may name."""
    names = (criterion_label(criterion, index) for item in items for index, criterion in enumerate(item.rubric)
             if criterion.options is not None)
    return list(dict.fromkeys(names))


def check_sweep_input(
    items: Sequence[GradeItem],
    judges: Sequence[JudgeSpec],
    preferred: Sequence[int | None] | None,
    chunk_judgments: int,
    criteria: Sequence[str] | None = None,
) -> None:
    """Refuse a sweep that cannot run, before any engine is loaded.

    Raises
    ------
    InputError
        No items, no judges, duplicate judge ids, two items with the same id (given, or the
        generated ``item-<index>``), no multi-choice criterion at all, a name in ``criteria``
        (``SweepSettings.criteria``) that is no multi-choice criterion of the items (the message
        lists those), a ``preferred`` list of the wrong length, or ``chunk_judgments`` not an
        integer >= 1.
    """
    if not items:
        raise InputError("sweep: no items")
    if not judges:
        raise InputError("sweep: no judges")
    if len({j.judge_id for j in judges}) != len(judges):
        raise InputError("sweep: judge_id values must be unique")
    refuse_decision_judges(judges, "sweep", "a decision model sees no option order, so it has no position bias to sweep")
    if not any(c.options is not None for item in items for c in item.rubric):
        raise InputError("sweep: no multi-choice criterion to sweep (binary criteria have no option order)")
    if criteria is not None:
        allowed = multi_choice_criteria(items)
        unknown = [name for name in criteria if name not in allowed]
        if unknown:
            raise InputError(f"sweep: {unknown[0]!r} is not a multi-choice criterion of the rubric "
                             f"(multi-choice criteria: {', '.join(map(repr, allowed))})")
    if preferred is not None and len(preferred) != len(items):
        raise InputError(f"sweep: preferred has {len(preferred)} entries for {len(items)} items")
    if isinstance(chunk_judgments, bool) or not isinstance(chunk_judgments, int) or chunk_judgments < 1:
        raise InputError(f"sweep: chunk_judgments must be an integer >= 1, got {chunk_judgments!r}")
    first_use: dict[str, int] = {}
    for i, item in enumerate(items):  # cells and stored rows are keyed by item id
        key = item.item_id or f"item-{i}"
        if key in first_use:
            raise InputError(f"sweep: item {i}: id {key!r} is already used by item {first_use[key]}")
        first_use[key] = i


def run_sweep(
    items: Sequence[GradeItem],
    judges: Sequence[JudgeSpec],
    settings: SweepSettings | None = None,
    *,
    preferred: Sequence[int | None] | None = None,
    progress: Callable[[str, int], None] | None = None,
    chunk_judgments: int = DEFAULT_CHUNK_JUDGMENTS,
) -> SweepResult:
    """Sweep every judge over every rotation of every multi-choice criterion of ``items``, in
    memory (:func:`.stored.run_stored_sweep` commits each chunk to a database and resumes).

    Parameters
    ----------
    items : sequence of GradeItem
        Rubric items, or selection items (:meth:`.selection.SelectionTask.to_grade_item`)
        with ``settings.kind = SweepKind.SELECTION``.
    judges : sequence of JudgeSpec
        Engines come from :func:`autorubric_local.judges.engines.load_engine` (``LLMConfig.engine``
        when given). A judge's ``system_prompt`` overrides ``settings.system_prompt``; judges
        with ``thinking`` write their reasoning before each verdict.
    settings : SweepSettings, optional
    preferred : sequence of int or None, optional
        Per item, the human-preferred original option of criterion 0 (selection tasks).
    progress : callable, optional
        ``progress(judge_id, n_tasks)`` after each judge's workload.
    chunk_judgments : int, default 512
        Most rotations per engine call (whole items; see :func:`sweep_chunks`).

    Returns
    -------
    SweepResult

    Raises
    ------
    InputError
        As :func:`check_sweep_input`, or no unrelated option to borrow.
    """
    settings = settings or SweepSettings()
    check_sweep_input(items, judges, preferred, chunk_judgments, settings.criteria)
    unrelated = sample_unrelated_options(items, settings.seed) if settings.unrelated_option else None
    cells: list[SweepCell] = []
    seconds: dict[str, float] = {}
    configs = load_configs(judges)
    for judge in judges:
        loaded = load_judge(items, judge, settings, unrelated, configs[judge.judge_id])
        planned = loaded.planned
        started = time.perf_counter()
        results = [
            result
            for chunk in sweep_chunks(planned, chunk_judgments)
            for result in judge_chunk(loaded.engine, chunk, judge.llm_config.thinking_budget)
        ]
        seconds[judge.judge_id] = time.perf_counter() - started
        cells.extend(build_cells(items, judge.judge_id, planned, results, unrelated, preferred))
        if progress is not None:
            progress(judge.judge_id, len(planned))
    judge_ids = tuple(j.judge_id for j in judges)
    return SweepResult(
        settings=settings,
        judge_ids=judge_ids,
        items=tuple(items),
        cells=tuple(cells),
        aggregates=tuple(aggregate_cells(cells, settings, judge_ids)),
        seconds=seconds,
    )
