"""Few-shot examples: graded exemplars drawn from a labelled training set, per criterion.

AutoRubric's README (github.com/delip/autorubric), "Grading Strategy" (``training_data`` +
``few_shot_config``; "all judges get the same examples"). Selection is a pure function of the
training data, the criterion and the config's seed, so every judge and every graded item sees
the same examples for a criterion.

Choices where AutoRubric is silent:

- An example for a criterion comes from a training item whose effective rubric has a
  criterion with the same requirement text and scale (names may differ), labelled in the
  item's ground truth; its label there is the example's verdict (binary) or option label.
- ``balance_verdicts``: draw round-robin across the labels present (e.g. MET, UNMET,
  CANNOT_ASSESS; or the options), in order of the criterion's labels, each label's items in a
  seeded random order; without it, a seeded random sample.
- ``include_reason``: the training item's reason for the criterion
  (``DataItem.ground_truth_reasons``, AutoRubric's rule) is shown; an item without one shows
  its ``description`` instead (this package's rule before those reasons existed), or none.
- Examples go into the criterion's part of the prompt (after the submission, before the
  question), so the submission prefix stays shared across criteria.
"""

from __future__ import annotations

import hashlib
import random
from collections import defaultdict
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from autorubric_local.core.errors import InputError
from autorubric_local.core.text import unicode_problem, utf8
from autorubric_local.core.types import Criterion, CriterionVerdict
from autorubric_local.data.dataset import RubricDataset
from autorubric_local.engine.user_text import mark, marker_problem


class FewShotConfig(BaseModel):
    """How many graded examples to show per criterion, and how to choose them.

    Attributes
    ----------
    n_examples : int, >= 1
    balance_verdicts : bool
        Spread the examples across verdicts/options (module docstring).
    include_reason : bool
        Show each example's ``description`` as its reason.
    seed : int or None
        Seed of the draw (None: 0, so a grade is reproducible by default).
    """

    model_config = ConfigDict(frozen=True)

    n_examples: int = Field(default=3, ge=1)
    balance_verdicts: bool = True
    include_reason: bool = False
    seed: int | None = None


@dataclass(frozen=True, init=False)
class FewShotExample:
    """One graded exemplar: the submission and its label on the criterion (verdict or option).

    ``FewShotExample(submission, verdict, reason)`` as AutoRubric builds it: ``verdict`` a
    ``CriterionVerdict`` or a label string (an option label on a multi-choice criterion),
    stored as the string ``label``; or ``label=`` by keyword. :attr:`verdict` reads it back.

    Raises
    ------
    InputError
        If neither or both of ``verdict`` and ``label`` are given.
    """

    submission: str
    label: str
    reason: str | None = None

    def __init__(self, submission: str, verdict: CriterionVerdict | str | None = None, reason: str | None = None,
                 *, label: str | None = None) -> None:
        if (verdict is None) == (label is None):
            raise InputError("FewShotExample: give the verdict (AutoRubric's name) or the label, one of them")
        object.__setattr__(self, "submission", submission)
        object.__setattr__(self, "label", _label(verdict if verdict is not None else label))
        object.__setattr__(self, "reason", reason)

    @property
    def verdict(self) -> CriterionVerdict | str:
        """The label as a ``CriterionVerdict`` when it is one (binary), else the option label."""
        return CriterionVerdict(self.label) if self.label in _VERDICTS else self.label


_VERDICTS = frozenset(v.value for v in CriterionVerdict)


def _reason(item: object, position: int) -> str | None:
    """The reason a training item gives its label at ``position`` (module docstring)."""
    reasons = getattr(item, "ground_truth_reasons", None)
    if reasons is not None:
        return reasons[position]
    return getattr(item, "description", "") or None


def _matches(a: Criterion, b: Criterion) -> bool:
    return a.requirement == b.requirement and a.is_binary == b.is_binary


def _label(value: object) -> str:
    return value.value if isinstance(value, CriterionVerdict) else str(value)


def select_examples(training_data: RubricDataset, criterion: Criterion, config: FewShotConfig) -> list[FewShotExample]:
    """The examples for ``criterion`` (at most ``n_examples``; fewer if the data has fewer)."""
    by_label: dict[str, list[FewShotExample]] = defaultdict(list)
    for index, item in enumerate(training_data.items):
        if item.ground_truth is None:
            continue
        rubric = training_data.get_item_rubric(index).rubric
        for position, candidate in enumerate(rubric):
            if _matches(candidate, criterion):
                label = _label(item.ground_truth[position])
                reason = _reason(item, position) if config.include_reason else None
                by_label[label].append(FewShotExample(item.submission, label, reason))
                break
    digest = hashlib.sha256(utf8(f"{config.seed or 0}\x1f{criterion.requirement}")).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    if not config.balance_verdicts:
        pool = [example for label in sorted(by_label) for example in by_label[label]]
        return rng.sample(pool, min(config.n_examples, len(pool)))
    order = (
        [v.value for v in CriterionVerdict]
        if criterion.is_binary
        else [option.label for option in criterion.options or []]
    )
    queues = []
    for label in order + sorted(set(by_label) - set(order)):
        examples = list(by_label.get(label, []))
        rng.shuffle(examples)
        if examples:
            queues.append(examples)
    chosen: list[FewShotExample] = []
    while len(chosen) < config.n_examples and any(queues):
        for queue in queues:
            if queue and len(chosen) < config.n_examples:
                chosen.append(queue.pop(0))
    return chosen


def check_training_text(training_data: RubricDataset) -> None:
    """Refuse training items whose text cannot be shown to a judge as an example.

    Raises
    ------
    InputError
        Naming the training item and field: a lone surrogate, or a character reserved to
        delimit untrusted text (see :func:`autorubric_local.graders.planning.check_item_text`).
    """
    for index, item in enumerate(training_data.items):
        for field, text in (("submission", item.submission), ("description", item.description)):
            problem = (unicode_problem(text) or marker_problem(text)) if text else None
            if problem is not None:
                raise InputError(f"training_data item {index}: field '{field}': {problem}")


def render_examples(criterion: Criterion, examples: list[FewShotExample]) -> str:
    """The examples block placed before the criterion in the prompt ('' for no examples)."""
    if not examples:
        return ""
    what = "option" if criterion.is_multi_choice else "verdict"
    parts = ["<graded_examples>", f"Examples graded by an expert on the criterion below ({what} shown):"]
    for number, example in enumerate(examples, start=1):
        parts.append(f'<example number="{number}">\n<submission>\n{mark(example.submission)}\n</submission>')
        parts.append(f"{what.capitalize()}: {mark(example.label)}")
        if example.reason:
            parts.append(f"Reason: {mark(example.reason)}")
        parts.append("</example>")
    parts.append("</graded_examples>")
    return "\n".join(parts) + "\n"
