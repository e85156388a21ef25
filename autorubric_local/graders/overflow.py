"""Submissions longer than a judge's context: ``LLMConfig.on_overflow="truncate"``.

By default (``on_overflow="error"``) a prompt that does not fit the judge's context is that
judgment's recorded error (``infrastructure: prompt of N tokens exceeds ...``), never a
verdict. With ``"truncate"`` the submission is cut in the middle before planning: its head
and tail are kept, joined by a marker that tells the judge how many tokens were cut, so that
the longest prompt of the item, plus the tokens the answer needs, fits. The report records
the cut (``EnsembleEvaluationReport.input_truncated_tokens``) and the text judged
(``judged_submission``), so nothing is changed silently. In a panel, the judges that truncate
read the text cut to fit the smallest of their contexts; the others read it whole.

Truncation needs the engine's tokenizer and context length (``tokens``, ``tokenizer``,
``context_length``, as the transformers and vLLM backends have); an engine without them
cannot truncate and its overflows stay errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from autorubric_local.graders.planning import GradeItem, JudgmentTask

__all__ = ["TRUNCATION_MARK", "TruncatingJudge", "fit_to_context"]

TRUNCATION_MARK = "\n[... {n} tokens of the submission cut here to fit the judge's context ...]\n"
"""Put between the kept head and tail of a truncated submission."""

_SEAM_TOKENS = 8
"""Tokens kept in reserve for tokenization seams around the cut."""


@dataclass(frozen=True)
class TruncatingJudge:
    """A judge whose overflowing items are truncated: its index, engine and answer reserve.

    ``reserve_tokens`` is what the judge's answer needs after the prompt (label tokens, and
    the explanation or reasoning budget in explain and thinking modes). ``reasoning_first``:
    the judge reads its verdict after its explanation, so the prompt is measured with the
    reasoning-first scaffold around an empty explanation (``JudgmentTask.reasoning_suffix("")``).
    """

    judge_index: int
    engine: Any
    reserve_tokens: int
    reasoning_first: bool = False


def can_truncate(engine: Any) -> bool:
    """Whether ``engine`` declares what truncation needs (token counting: a tokenizer and context length)."""
    return bool(engine.capabilities.counts_tokens)


def fit_to_context(
    items: Sequence[GradeItem], tasks: Sequence[JudgmentTask], judges: Sequence[TruncatingJudge]
) -> tuple[list[GradeItem], dict[int, tuple[int, str]]]:
    """Items whose longest prompt overflows a truncating judge, with their submission cut.

    Returns
    -------
    (items, cuts)
        ``items`` in order (unchanged ones are the same objects); ``cuts[item_index]`` is
        ``(tokens cut, judged submission)`` for every truncated item. An item that cannot be
        made to fit (its prompt overflows even with an empty submission) is left unchanged,
        so its judgments fail as overflows.
    """
    fitted = list(items)
    cuts: dict[int, tuple[int, str]] = {}
    for judge in judges:
        longest: dict[int, int] = {}
        for task in tasks:
            if task.judge_index == judge.judge_index:
                suffix = task.reasoning_suffix("") if judge.reasoning_first else task.suffix
                size = _prompt_size(judge.engine, task.prefix, suffix)
                longest[task.item_index] = max(longest.get(task.item_index, 0), size)
        for index, size in sorted(longest.items()):
            over = size + judge.reserve_tokens - judge.engine.context_length
            if over <= 0:
                continue
            item = fitted[index]
            already = cuts.get(index, (0, ""))[0]
            cut = _cut(judge.engine, item.submission, over)
            if cut is not None:
                text, removed = cut
                fitted[index] = replace(item, submission=text)
                cuts[index] = (already + removed, text)
    return fitted, cuts


def _prompt_size(engine: Any, prefix: str, suffix: str) -> int:
    """Tokens of the prompt as the engine scores it (the whole prompt encoded at once where it can)."""
    if engine.capabilities.whole_prompt_tokens:
        return len(engine.prompt_tokens(prefix, suffix))
    return len(engine.tokens(prefix)) + len(engine.tokens(suffix))


def _cut(engine: Any, submission: str, over: int) -> tuple[str, int] | None:
    """``submission`` cut in the middle to be at least ``over`` tokens shorter, marker included;
    ``(text, tokens removed)``, or None when even an empty head and tail would not do."""
    tokenizer = engine.tokenizer
    ids = tokenizer.encode(submission, add_special_tokens=False, split_special_tokens=True)
    mark_tokens = len(tokenizer.encode(TRUNCATION_MARK.format(n=len(ids)), add_special_tokens=False))
    keep = len(ids) - over - mark_tokens - _SEAM_TOKENS
    if keep < 0:
        return None
    removed = len(ids) - keep
    tail = keep // 2
    head_text = tokenizer.decode(ids[: keep - tail])
    tail_text = tokenizer.decode(ids[len(ids) - tail :]) if tail else ""
    return head_text + TRUNCATION_MARK.format(n=removed) + tail_text, removed
