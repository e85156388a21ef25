"""Transformers backend: the reference engine and the CPU default.

Scoring computes each distinct prefix once (key/value cache) and runs all of its suffixes and
label continuations as one packed token trie per chunk (:mod:`autorubric_local.engine.packing`):
suffix and label tokens that start alike are computed once, each node attending to the prefix
and its trie ancestors, in one forward pass per chunk, reading logits only where a label token
is predicted. Generation is grammar-constrained (an Outlines-compiled regex of a JSON string
body), decoded as branches below the suffixes' trie, so the assembled judgment always parses.

Build one with :func:`from_transformers` from an already-loaded model and tokenizer, or let
:func:`autorubric_local.judges.engines.load_engine` resolve and load a model from an ``LLMConfig``.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from autorubric_local.core.reports import TokenUsage
from autorubric_local.engine.base import (
    GenerateRequest,
    Generation,
    LabelScores,
    ScoreRequest,
)
from autorubric_local.engine.chat_text import HFTextMixin
from autorubric_local.engine.constrained import (
    JSON_STRING_BODY_REGEX,
    split_string_body,
)
from autorubric_local.engine.packing import (
    PackedRow,
    chunk_trees,
    chunk_trie,
    node_shares,
    pack_trie,
    prompt_shares,
)

if TYPE_CHECKING:
    import torch



class TransformersEngine(HFTextMixin):
    """Judge engine over a Hugging Face causal LM.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal LM in eval mode.
    tokenizer : transformers.PreTrainedTokenizerBase
    model_id : str
        Identifier recorded with every judgment.
    context_length : int, optional
        Longest prompt + label in tokens; defaults to ``model.config.max_position_embeddings``.
    max_packed_tokens : int
        Upper bound on suffix tokens per packed forward pass (memory budget of one chunk).
    temperature : float
        0 decodes greedily; above 0 samples explanations (seeded by ``seed``).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        model_id: str,
        context_length: int | None = None,
        max_packed_tokens: int = 2048,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.model_id = model_id
        self.context_length = context_length or int(
            getattr(model.config, "max_position_embeddings", 2048)
        )
        self.max_packed_tokens = max_packed_tokens
        self.temperature = temperature
        self.seed = seed
        self._token_cache: dict[str, list[int]] = {}
        self._grammar: Any = None

    # ------------------------------------------------------------------ scoring
    def score(self, requests: Sequence[ScoreRequest]) -> list[LabelScores]:
        """Label log-probabilities for every request; see :class:`~.base.Engine`."""
        return _per_prefix(requests, self._score_group)

    def _score_group(self, prefix: str, requests: list[ScoreRequest]) -> list[LabelScores]:
        """Score requests sharing one prefix: prefix once, suffix tries packed in chunks.

        Usage: ``prompt_tokens`` is ``len(prefix + suffix)``. The first fitting request pays
        for the prefix; in each chunk every computed suffix node is split evenly among the
        requests whose suffix runs through it (rounded to whole tokens, see
        :func:`~.packing.prompt_shares`), the rest of each request's prompt counts as
        ``cache_read_input_tokens``. ``seconds`` splits the group's wall time by computed nodes: the
        prefix to the first request, every row node (label continuations included) evenly
        among the requests using it.
        """
        start = time.perf_counter()
        prefix_ids = self.tokens(prefix)
        trees: list[tuple[list[int], list[list[int]]]] = []
        fits: list[int] = []
        results: list[LabelScores | None] = [None] * len(requests)
        for index, request in enumerate(requests):
            suffix_ids = self.tokens(request.suffix)
            label_ids = [self.tokens(label) for label in request.labels]
            longest = len(prefix_ids) + len(suffix_ids) + max(len(ids) for ids in label_ids)
            if longest > self.context_length:
                results[index] = LabelScores(
                    (),
                    error=(
                        f"infrastructure: prompt of {longest} tokens exceeds the judge's "
                        f"context length of {self.context_length} tokens"
                    ),
                )
                continue
            fits.append(index)
            trees.append((suffix_ids, label_ids))
        if not trees:
            return [r for r in results if r is not None]

        cache = self._prefix_cache(prefix_ids)
        logprobs: list[tuple[float, ...]] = [()] * len(trees)
        computed = [0] * len(trees)  # suffix tokens computed per tree
        shares = [0.0] * len(trees)  # row nodes per tree (fractional)
        for chunk in chunk_trie(trees, self.max_packed_tokens):
            row = pack_trie(len(prefix_ids), [trees[i] for i in chunk])
            for i, lps, own, share in zip(
                chunk, self._score_row(row, cache), prompt_shares(row), node_shares(row)
            ):
                logprobs[i], computed[i], shares[i] = lps, own, share
        elapsed = time.perf_counter() - start

        shares[0] += len(prefix_ids)
        total = sum(shares)
        for position, index in enumerate(fits):
            prompt_tokens = len(prefix_ids) + len(trees[position][0])
            paid = computed[position] + (len(prefix_ids) if position == 0 else 0)
            usage = TokenUsage.of(prompt_tokens=prompt_tokens, cache_read_input_tokens=prompt_tokens - paid)
            results[index] = LabelScores(logprobs[position], usage=usage, seconds=elapsed * shares[position] / total)
        return [r for r in results if r is not None]

    def _prefix_cache(self, prefix_ids: list[int]) -> Any:
        """Key/value cache of the prefix (empty for an empty prefix)."""
        import torch
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        if prefix_ids:
            self.model(
                input_ids=torch.tensor([prefix_ids], dtype=torch.long, device=self.model.device),
                past_key_values=cache,
                use_cache=True,
                logits_to_keep=1,
            )
        return cache

    def _score_row(self, row: PackedRow, cache: Any) -> list[tuple[float, ...]]:
        """One forward pass over a packed row on top of the prefix cache; cache restored after."""
        import torch

        keep = row.keep_positions
        output = self.model(
            input_ids=torch.tensor([row.token_ids], dtype=torch.long, device=self.model.device),
            position_ids=torch.tensor([row.positions], device=self.model.device),
            attention_mask=self._row_mask(row),
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=torch.tensor(keep, device=self.model.device),
        )
        cache.crop(-len(row.token_ids))
        logsoftmax = output.logits[0].float().log_softmax(-1)
        where = {pos: i for i, pos in enumerate(keep)}
        return [
            tuple(
                float(sum(logsoftmax[where[pos], token].item() for pos, token in label))
                for label in tree
            )
            for tree in row.targets
        ]

    def _row_mask(self, row: PackedRow) -> torch.Tensor:
        """Additive 4D mask, shape (1, 1, n_row, prefix_len + n_row): 0 where attention is allowed.

        Vectorised :func:`~.packing.may_attend`: with ``A[n, d]`` the ancestor of node ``n`` at
        depth ``d`` (:func:`~.packing.ancestor_table`), node ``q`` may see node ``k`` iff
        ``A[q, depth[k]] == k``; every node sees the whole prefix.
        """
        import torch

        n = len(row.token_ids)
        parents = torch.tensor(row.parents, dtype=torch.long)
        depths = torch.tensor(row.depths, dtype=torch.long)
        table = torch.full((n, row.max_depth + 1), -1, dtype=torch.long)
        # Walk every node up to the root at once, one depth level per step (deepest first).
        walker = torch.arange(n)
        rows = torch.arange(n)
        for depth in range(row.max_depth, -1, -1):
            here = depths[walker.clamp(min=0)] == depth
            here &= walker >= 0
            table[rows[here], depth] = walker[here]
            walker = torch.where(here, parents[walker.clamp(min=0)], walker)
        allowed = table.gather(1, depths[None, :].expand(n, n)) == torch.arange(n)[None, :]
        full = torch.ones(n, row.prefix_len + n, dtype=torch.bool)
        full[:, row.prefix_len :] = allowed
        dtype = self.model.dtype
        mask = torch.zeros(full.shape, dtype=dtype)
        mask.masked_fill_(~full, torch.finfo(dtype).min)
        return mask[None, None].to(self.model.device)

    # ------------------------------------------------------------------ generation
    def generate(self, requests: Sequence[GenerateRequest]) -> list[Generation]:
        """Constrained JSON-string bodies for every request; see :class:`~.base.Engine`.

        Requests sharing a prefix decode together as branches below one packed suffix trie:
        the prefix is computed once, all suffixes in one pass (shared starts once), then one
        token per open branch per step, each branch attending to the prefix, its own suffix
        path and its own tokens. Every step is
        masked by the Outlines-compiled grammar of a JSON string body.
        """
        return _per_prefix(requests, self._generate_group)

    def _generate_group(self, prefix: str, requests: list[GenerateRequest]) -> list[Generation]:
        start = time.perf_counter()
        prefix_ids = self.tokens(prefix)
        results: list[Generation | None] = [None] * len(requests)
        runnable: list[int] = []
        for index, request in enumerate(requests):
            needed = len(prefix_ids) + len(self.tokens(request.suffix)) + request.max_new_tokens
            if needed > self.context_length:
                results[index] = Generation(
                    "",
                    error=(
                        f"infrastructure: prompt plus {request.max_new_tokens} new tokens needs "
                        f"{needed} tokens, over the judge's context length of {self.context_length}"
                    ),
                )
            else:
                runnable.append(index)
        if runnable:
            cache = self._prefix_cache(prefix_ids)
            sizes = [len(self.tokens(requests[i].suffix)) + requests[i].max_new_tokens for i in runnable]
            for chunk in chunk_trees(sizes, self.max_packed_tokens):
                members = [runnable[c] for c in chunk]
                decoded = self._decode_branches(len(prefix_ids), cache, [requests[i] for i in members])
                for index, (ids, closed) in zip(members, decoded):
                    body, truncated = split_string_body(self.tokenizer.decode(ids))
                    results[index] = Generation(
                        body,
                        truncated=truncated or not closed,
                        usage=TokenUsage.of(
                            prompt_tokens=len(prefix_ids) + len(self.tokens(requests[index].suffix)),
                            completion_tokens=len(ids),
                            # The first request of the group pays for the prefix; the rest hit it.
                            cache_read_input_tokens=0 if index == runnable[0] else len(prefix_ids),
                        ),
                    )
            elapsed = time.perf_counter() - start
            for index in runnable:
                generation = results[index]
                assert generation is not None
                results[index] = replace(generation, seconds=elapsed / len(runnable))
        return [r for r in results if r is not None]

    def _decode_branches(
        self, prefix_len: int, cache: Any, requests: list[GenerateRequest]
    ) -> list[tuple[list[int], bool]]:
        """Decode one branch per request on top of the prefix cache; cache restored after.

        Returns, per request, the generated token ids and whether the grammar finished (the
        closing quote was produced) within the budget.
        """
        import torch

        device = self.model.device
        suffixes = [self.tokens(r.suffix) for r in requests]
        # The suffixes as one trie (shared starts computed once); each branch then decodes
        # below its suffix's last node.
        row = pack_trie(prefix_len, [(s, []) for s in suffixes])
        own: list[list[int]] = [list(nodes) for nodes in row.suffix_nodes]  # row-relative keys
        keep = sorted(set(row.ends))
        output = self.model(
            input_ids=torch.tensor([row.token_ids], dtype=torch.long, device=device),
            position_ids=torch.tensor([row.positions], device=device),
            attention_mask=self._row_mask(row),
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=torch.tensor(keep, device=device),
        )
        appended = len(row.token_ids)
        logits = output.logits[0][[keep.index(end) for end in row.ends]]
        grammar = self._json_string_grammar()
        guides = [grammar.new_guide() for _ in requests]
        generated: list[list[int]] = [[] for _ in requests]
        active = list(range(len(requests)))
        sampler = self._sampler()
        while active:
            chosen = []
            for row_index, branch in enumerate(active):
                token = grammar.choose(guides[branch], logits[row_index], sampler)
                generated[branch].append(token)
                chosen.append(token)
            still = [
                (b, t)
                for b, t in zip(active, chosen)
                if not guides[b].is_finished() and len(generated[b]) < requests[b].max_new_tokens
            ]
            if not still:
                break
            active = [b for b, _ in still]
            # Keys of each branch so far: prefix, its suffix and its generated tokens (already
            # in the cache except the one being fed now, which is appended below).
            n_new = len(active)
            allowed = torch.zeros(n_new, prefix_len + appended + n_new, dtype=torch.bool)
            allowed[:, :prefix_len] = True
            for row_index, branch in enumerate(active):
                allowed[row_index, [prefix_len + k for k in own[branch]]] = True
                allowed[row_index, prefix_len + appended + row_index] = True
            mask = torch.zeros(allowed.shape, dtype=self.model.dtype)
            mask.masked_fill_(~allowed, torch.finfo(self.model.dtype).min)
            positions = [prefix_len + len(suffixes[b]) + len(generated[b]) - 1 for b in active]
            output = self.model(
                input_ids=torch.tensor([[t for _, t in still]], dtype=torch.long, device=device),
                position_ids=torch.tensor([positions], device=device),
                attention_mask=mask[None, None].to(device),
                past_key_values=cache,
                use_cache=True,
            )
            for row_index, branch in enumerate(active):
                own[branch].append(appended + row_index)
            appended += n_new
            logits = output.logits[0]
        cache.crop(-appended)
        return [(ids, guide.is_finished()) for ids, guide in zip(generated, guides)]

    def _sampler(self) -> Any:
        """``None`` for greedy decoding, else a seeded torch generator for sampling."""
        if self.temperature <= 0:
            return None
        import torch

        generator = torch.Generator(device="cpu")
        generator.manual_seed(self.seed if self.seed is not None else 0)
        return generator

    def _json_string_grammar(self) -> Any:
        """The Outlines-compiled grammar of a JSON string body (built once per engine)."""
        if self._grammar is None:
            from autorubric_local.engine.constrained import RegexGrammar

            self._grammar = RegexGrammar.from_transformers(
                self.model, self.tokenizer, JSON_STRING_BODY_REGEX, temperature=self.temperature
            )
        return self._grammar


def _per_prefix(requests: Sequence[Any], run_group: Callable[[str, list[Any]], list[Any]]) -> list[Any]:
    """Run ``run_group(prefix, group)`` once per distinct prefix; results back in input order."""
    import torch

    results: list[Any] = [None] * len(requests)
    by_prefix: dict[str, list[int]] = defaultdict(list)
    for index, request in enumerate(requests):
        by_prefix[request.prefix].append(index)
    with torch.inference_mode():
        for prefix, indices in by_prefix.items():
            for index, result in zip(indices, run_group(prefix, [requests[i] for i in indices])):
                results[index] = result
    return results


def from_transformers(model: Any, tokenizer: Any, **kwargs: Any) -> TransformersEngine:
    """Wrap an already-loaded Hugging Face model and tokenizer as a judge engine.

    ``kwargs`` are passed to :class:`TransformersEngine` (``model_id`` defaults to the model's
    ``name_or_path``).
    """
    kwargs.setdefault("model_id", str(getattr(model, "name_or_path", "") or type(model).__name__))
    model.eval()
    return TransformersEngine(model, tokenizer, **kwargs)
