"""The plain path of the transformers backend: ordinary sequences, the model's own cache and masks.

Used for models the packed trie cannot drive exactly (:mod:`.attention`): FlashAttention-2 and
other kernels without custom masks, chunked or state-space layers. Correct for any causal LM,
since nothing is shared between requests; slower, since every prompt is computed in full.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autorubric_local.engine.base import mass_outside
from autorubric_local.engine.transformers.paths import forward, output_cache


def score_plain(model: Any, prompt_ids: Sequence[int], label_ids: Sequence[Sequence[int]]) -> tuple[tuple[float, ...], float]:
    """Raw log-probability of each label after ``prompt_ids`` and the off-label mass.

    One forward pass over ``n_labels`` rows ``prompt + label[:-1]``, right-padded (a causal
    model never looks at the padding after a row's own tokens, and the 2D attention mask hides
    it anyway). Returns ``(logprobs, off_label_mass)``, logprobs shape (n_labels,).
    """
    import torch

    rows = [[*prompt_ids, *label[:-1]] for label in label_ids]
    width = max(len(row) for row in rows)
    device = model.device
    inputs = torch.zeros(len(rows), width, dtype=torch.long)
    attention = torch.zeros(len(rows), width, dtype=torch.long)
    for k, row in enumerate(rows):
        inputs[k, : len(row)] = torch.tensor(row)
        attention[k, : len(row)] = 1
    logits = model(input_ids=inputs.to(device), attention_mask=attention.to(device), use_cache=False).logits
    logsoftmax = logits.float().log_softmax(-1)
    start = len(prompt_ids) - 1  # predicts the first label token
    logprobs = tuple(
        float(sum(logsoftmax[k, start + j, token].item() for j, token in enumerate(label)))
        for k, label in enumerate(label_ids)
    )
    firsts = {label[0] for label in label_ids}
    return logprobs, mass_outside([logsoftmax[0, start, t].item() for t in firsts])


def decode_plain(
    model: Any, prompt_ids: Sequence[int], grammar: Any, sampler: Any, max_new_tokens: int
) -> tuple[list[int], bool]:
    """Grammar-constrained decoding of one request, one token per step on the model's own cache.

    Returns the generated token ids and whether the grammar finished within the budget.
    """
    import torch

    device = model.device
    output = model(input_ids=torch.tensor([list(prompt_ids)], device=device), use_cache=True)
    guide = grammar.new_guide()
    generated: list[int] = []
    while True:
        token = grammar.choose(guide, output.logits[0, -1], sampler)
        generated.append(token)
        if guide.is_finished() or len(generated) >= max_new_tokens:
            return generated, guide.is_finished()
        output = forward(
            model,
            input_ids=torch.tensor([[token]], device=device),
            past_key_values=output_cache(output),
            use_cache=True,
        )
