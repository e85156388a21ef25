"""The in-process llama.cpp backend's packed label scoring against plain one-prompt scoring.

Plain scoring: for each request and label, a fresh KV cache, ``prompt + label`` decoded in one
go (batches of ``n_batch`` tokens), the label's log-probability summed from the logits of that
one pass. Packed scoring is what the engine does (``LlamaEngine.score``: labels' tokens as a
trie, each sequence decoding only its own tail after the longest prefix it shares with the one
before). Both on the same context (no flash attention, no repacked weights), so any difference
is how tokens were batched.

Prints, per judge: the largest |logprob| difference over the requests' labels, how many labels
differ by more than 1e-4, and how many verdicts (argmax labels) differ.

Usage::

    .venv/bin/python scripts/eval_llamacpp_plain.py --items 4 > scripts/results/eval_llamacpp_plain_2cpu_DATE.txt
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from example_workload import example_items  # noqa: E402

from autorubric_local.engine.base import ScoreRequest  # noqa: E402
from autorubric_local.graders.planning import plan_tasks  # noqa: E402
from autorubric_local.judges.config import LLMConfig  # noqa: E402
from autorubric_local.judges.engines import load_engine, release_engine  # noqa: E402

MODELS = {"smollm2": "smollm2-135m-instruct", "gemma": "gemma3-270m"}


def plain_logprob(engine: object, prompt: list[int], label: list[int]) -> float:
    """``log p(label | prompt)`` from one fresh pass over ``prompt + label``."""
    ctx = engine.context  # type: ignore[attr-defined]
    ctx.truncate(0, 0)
    start = len(prompt) - 1
    rows = ctx.extend(0, prompt + label[:-1], list(range(start, start + len(label))))
    total = 0.0
    for j, token in enumerate(label):
        row = rows[start + j].astype(np.float64)
        top = row.max()
        total += float(row[token] - top - math.log(np.exp(row - top).sum()))
    ctx.truncate(0, 0)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--items", type=int, default=4, help="first items of the bundled example (8 criteria each)")
    args = parser.parse_args()
    for name, preset in MODELS.items():
        engine = load_engine(LLMConfig(model=preset, backend="llamacpp"))
        try:
            tasks = plan_tasks(example_items()[: args.items], [(name, engine.format_chat)], seed=0)
            requests = [ScoreRequest(t.prefix, t.suffix, t.labels()) for t in tasks]
            packed = engine.score(requests)
            worst, over, flips, labels = 0.0, 0, 0, 0
            for request, scored in zip(requests, packed, strict=True):
                assert scored.error is None, scored.error
                prompt, continuations, error = engine.score_tokens(request.prefix, request.suffix, request.labels)
                assert error is None, error
                plain = [plain_logprob(engine, prompt, ids) for ids in continuations]
                diffs = [abs(a - b) for a, b in zip(scored.logprobs, plain, strict=True)]
                worst = max(worst, *diffs)
                over += sum(d > 1e-4 for d in diffs)
                labels += len(diffs)
                flips += int(np.argmax(scored.logprobs) != np.argmax(plain))
            print(f"{name} ({preset}, llama.cpp in-process): {len(requests)} requests of the bundled example's first "
                  f"{args.items} items, {labels} labels; packed vs plain: max |dlogp| {worst:.3e}, labels over 1e-4: "
                  f"{over}, verdicts different: {flips}")
        finally:
            release_engine(engine)


if __name__ == "__main__":
    main()
