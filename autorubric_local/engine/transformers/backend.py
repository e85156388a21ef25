"""Transformers backend: the reference engine and the CPU default.

Scoring computes each distinct prefix once (key/value cache) and runs all of its suffixes and
label continuations as one packed token trie per chunk (:mod:`autorubric_local.engine.transformers.packing`):
suffix and label tokens that start alike are computed once, each node attending to the prefix
and its trie ancestors, in one forward pass per chunk, reading logits only where a label token
is predicted. Generation is grammar-constrained (an Outlines-compiled regex of a JSON string
body), decoded as branches below the suffixes' trie, so the assembled judgment always parses.

Build one with :func:`from_transformers` from an already-loaded model and tokenizer, or let
:func:`autorubric_local.judges.engines.load_engine` resolve and load a model from an ``LLMConfig``.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from autorubric_local.core.reports import TokenUsage
from autorubric_local.engine.capabilities import EngineCapabilities
from autorubric_local.engine.transformers.attention import (
    AttentionPlan,
    additive_masks,
    plan_attention,
)
from autorubric_local.engine.base import (
    GenerateRequest,
    Generation,
    LabelScores,
    ScoreRequest,
    checked_count,
    filled,
    mass_outside,
)
from autorubric_local.engine.transformers.batched import Unit, row_mask, run_units
from autorubric_local.engine.chat_text import HFTextMixin, PromptFormat
from autorubric_local.engine.constrained import read_generated
from autorubric_local.engine.transformers.forward_timer import ForwardTimer
from autorubric_local.engine.transformers.packing import (
    PackedRow,
    chunk_trees,
    chunk_trie,
    node_shares,
    pack_trie,
    prompt_shares,
)
from autorubric_local.engine.transformers.paths import PathFallbacks, PathUnsupported, call_model
from autorubric_local.engine.transformers.row_layouts import Layout, RowLayouts
from autorubric_local.engine.transformers.plain import decode_plain, score_plain

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)


class TransformersEngine(HFTextMixin, PathFallbacks):
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
    prompt_format : "auto" | "chat" | "completion"
        How prompts are rendered (:mod:`.chat_text`, "Prompt formats").
    attention : "auto" | "plain"
        ``"auto"`` takes the packed-trie path where :func:`~.attention.plan_attention` proves
        it exact for this model; ``"plain"`` always runs ordinary sequences (:mod:`.plain`).
    max_batch_tokens : int or None
        Padded tokens (rows x longest row) per batched scoring pass, which stacks many prefix
        groups' ``prefix + trie`` rows in one forward pass (:mod:`.batched`); 0 scores each
        group alone (its prefix cache, then its trie chunks). None chooses by device
        (:func:`default_batch_tokens`).
    max_decode_tokens : int or None
        Padded key slots (rows x widest row) per batch of cross-item decoding, where the open
        branches of many items advance in one forward pass per step (:mod:`.decode_batched`);
        a row's width is its prefix, its suffix trie and its branches' token budgets. 0 decodes
        one prefix group at a time (:meth:`_decode_branches`). None chooses by device
        (:func:`default_decode_tokens`: 0 on CPU).

    Attributes
    ----------
    attention_path : str
        Which path runs, recorded per run (``AttentionPlan.description``).
    fallbacks : list of str
        Why the engine left a faster path (packed, batched) or shrank its batches, in order
        (:mod:`.paths`); recorded with the run's judges.
    forward_timer : ForwardTimer
        Seconds and calls of the model's forward passes (every path), to tell the model's time
        from the host work around it.
    """

    capabilities = EngineCapabilities("transformers", counts_tokens=True, whole_prompt_tokens=True,
                                      describes=frozenset({"attention_path", "prompt_format", "dtype", "fallbacks"}))

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
        prompt_format: PromptFormat = "auto",
        attention: str = "auto",
        max_batch_tokens: int | None = None,
        max_decode_tokens: int | None = None,
    ) -> None:
        if attention not in ("auto", "plain"):
            raise ValueError(f"attention must be 'auto' or 'plain', got {attention!r}")
        if max_batch_tokens is not None and max_batch_tokens < 0:
            raise ValueError(f"max_batch_tokens must be >= 0 or None, got {max_batch_tokens}")
        if max_decode_tokens is not None and max_decode_tokens < 0:
            raise ValueError(f"max_decode_tokens must be >= 0 or None, got {max_decode_tokens}")
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
        self._grammars: dict[str, Any] = {}
        self.set_prompt_format(prompt_format)
        self.attention: AttentionPlan = plan_attention(
            model, force_plain="requested" if attention == "plain" else None)
        self._packed_proven = False
        self.fallbacks: list[str] = []
        self.max_batch_tokens = default_batch_tokens(model) if max_batch_tokens is None else max_batch_tokens
        self._batched_proven = False
        self.max_decode_tokens = default_decode_tokens(model) if max_decode_tokens is None else max_decode_tokens
        self._decode_batched_proven = False
        self.forward_timer = ForwardTimer.of(model)

    @property
    def attention_path(self) -> str:
        """The attention path in use (:class:`~.attention.AttentionPlan` description)."""
        return self.attention.description

    @property
    def dtype_name(self) -> str:
        """The precision the model computes in, e.g. ``"float32"`` (recorded per run)."""
        return str(self.model.dtype).removeprefix("torch.")

    # ------------------------------------------------------------------ scoring
    def score(self, requests: Sequence[ScoreRequest]) -> list[LabelScores]:
        """Label log-probabilities for every request; see :class:`~.base.Engine`.

        Groups of requests sharing a prefix are scored many per forward pass when
        ``max_batch_tokens`` > 0 and the packed path applies (:mod:`.batched`), else one group
        at a time. If the model refuses the first batched pass (a transformers version without
        boolean ``logits_to_keep``), batching is switched off for good and the work rerun per
        group; out of memory halves the batch (:mod:`.paths`, which records each fallback).
        """
        if not (self.max_batch_tokens and self.attention.packed):
            return _per_prefix(requests, self._score_group)
        return self._batched_or_per_group(lambda: self._score_batched(requests),
                                          lambda: _per_prefix(requests, self._score_group))

    def _score_batched(self, requests: Sequence[ScoreRequest]) -> list[LabelScores]:
        """Every group whose trie fits one chunk as one row of batched passes (:mod:`.batched`);
        a group needing several chunks keeps its prefix cache (:meth:`_score_packed`)."""
        import torch

        results: list[LabelScores | None] = [None] * len(requests)
        units: list[Unit] = []
        pending: list[tuple[list[int], list[Any], float]] = []  # indices, tokenized, seconds so far

        def place(indices: list[int], scores: list[LabelScores]) -> None:
            for index, result in zip(indices, scores, strict=True):
                results[index] = result

        with torch.inference_mode():
            for prefix, indices in _groups(requests).items():
                start = time.perf_counter()
                tokenized = self._tokenize_requests(prefix, [requests[i] for i in indices])
                work = [t for t in tokenized if not isinstance(t, str)]
                if not work:
                    place(indices, _label_scores(tokenized, [], 0.0))
                    continue
                shared = _common_prefix_length([prompt for prompt, _ in work])
                trees = [(prompt[shared:], labels) for prompt, labels in work]
                if len(chunk_trie(trees, self.max_packed_tokens)) > 1:
                    place(indices, _label_scores(tokenized, self._score_packed(work), time.perf_counter() - start))
                    continue
                units.append(Unit(work[0][0][:shared], self._layouts().placed(shared, trees)[0]))
                pending.append((indices, tokenized, time.perf_counter() - start))
            scored, seconds = run_units(self.model, self.attention, units, self.max_batch_tokens)
        for unit, (indices, tokenized, prepared), rows, batch_seconds in zip(
                units, pending, scored, seconds, strict=True):
            work = [t for t in tokenized if not isinstance(t, str)]
            usage = _packed_usage(work, unit.row.prefix_len, rows, prompt_shares(unit.row), node_shares(unit.row))
            place(indices, _label_scores(tokenized, usage, prepared + batch_seconds))
        return filled(results, "transformers score")

    def _tokenize_requests(
        self, prefix: str, requests: Sequence[ScoreRequest]
    ) -> list[tuple[list[int], list[list[int]]] | str]:
        """Per request: ``(prompt_ids, label_ids)`` (exact tokenization, :mod:`.chat_text`) or an error."""
        out: list[tuple[list[int], list[list[int]]] | str] = []
        for request in requests:
            prompt_ids, label_ids, error = self.score_tokens(prefix, request.suffix, request.labels)
            if error is not None:
                out.append(error)
                continue
            longest = len(prompt_ids) + max(len(ids) for ids in label_ids)
            if not prompt_ids:
                out.append("infrastructure: empty prompt")
            elif longest > self.context_length:
                out.append(f"infrastructure: prompt of {longest} tokens exceeds the judge's "
                           f"context length of {self.context_length} tokens")
            else:
                out.append((prompt_ids, label_ids))
        return out

    def _score_group(self, prefix: str, requests: list[ScoreRequest]) -> list[LabelScores]:
        """Score requests sharing one prefix string (packed trie or plain path, :mod:`.attention`)."""
        start = time.perf_counter()
        tokenized = self._tokenize_requests(prefix, requests)
        work = [t for t in tokenized if not isinstance(t, str)]
        scored = self._packed_or_plain(lambda: self._score_packed(work), lambda: self._score_each(work)) if work else []
        return _label_scores(tokenized, scored, time.perf_counter() - start)

    def _score_each(self, work: list[Any]) -> list[tuple[tuple[float, ...], float, TokenUsage, float]]:
        """Plain path: every request's prompt and labels as ordinary sequences."""
        out = []
        for prompt_ids, label_ids in work:
            logprobs, off_mass = score_plain(self.model, prompt_ids, label_ids)
            rows = sum(len(prompt_ids) + len(label) - 1 for label in label_ids)
            out.append((logprobs, off_mass, TokenUsage.of(prompt_tokens=len(prompt_ids)), float(rows)))
        return out

    def _score_packed(self, work: list[Any]) -> list[tuple[tuple[float, ...], float, TokenUsage, float]]:
        """Packed path: the group's common prompt tokens once, the rest as token tries in chunks.

        The shared prefix is the longest common token prefix of the group's prompts (at most
        each prompt's length minus one, so every request keeps a suffix token that predicts its
        labels); prompts are tokenized whole, so the split never changes a token.

        Usage: ``prompt_tokens`` is the prompt's length. The first request pays for the shared
        prefix; in each chunk every computed suffix node is split evenly among the requests
        whose suffix runs through it (rounded to whole tokens, :func:`~.packing.prompt_shares`),
        the rest of each prompt counts as ``cache_read_input_tokens``. The time share is the
        prefix for the first request plus every row node (label continuations included) split
        evenly among the requests using it.
        """
        prompts = [prompt for prompt, _ in work]
        shared = _common_prefix_length(prompts)
        prefix_ids = prompts[0][:shared]
        trees = [(prompt[shared:], labels) for prompt, labels in work]
        cache = self._prefix_cache(prefix_ids)
        scored: list[tuple[tuple[float, ...], float]] = [((), 0.0)] * len(trees)
        computed = [0] * len(trees)  # suffix tokens computed per tree
        shares = [0.0] * len(trees)  # row nodes per tree (fractional)
        for chunk in chunk_trie(trees, self.max_packed_tokens):
            row, layout = self._layouts().placed(shared, [trees[i] for i in chunk])
            scored_row = self._score_row(row, layout, cache)
            for i, result, own, share in zip(chunk, scored_row, layout.prompt_shares, layout.node_shares, strict=True):
                scored[i], computed[i], shares[i] = result, own, share
        return _packed_usage(work, shared, scored, computed, shares)

    def _prefix_cache(self, prefix_ids: list[int]) -> Any:
        """Key/value cache of the prefix (empty for an empty prefix), every token kept.

        Built without the model config, so sliding-window layers keep all keys too: the trie's
        masks apply the window themselves (:mod:`.attention`).
        """
        import numpy as np
        import torch
        from transformers import DynamicCache

        cache = DynamicCache()
        if prefix_ids:
            call_model(
                self.model, "packed",
                # via numpy: a third of the time torch.tensor takes over a list of ~2,500 ids
                input_ids=torch.from_numpy(np.array(prefix_ids, dtype=np.int64))[None].to(self._layouts().device),
                past_key_values=cache,
                use_cache=True,
                logits_to_keep=1,
            )
        return cache

    def _score_row(self, row: PackedRow, layout: Layout, cache: Any) -> list[tuple[tuple[float, ...], float]]:
        """One forward pass over a packed row on top of the prefix cache; cache restored after.
        ``layout``: the row's trie layout (:mod:`.row_layouts`), with its read-out; the mask
        comes from the memo (:meth:`.RowLayouts.mask`).

        Returns per tree ``(label logprobs, off-label mass)``.
        """
        output = call_model(
            self.model, "packed",
            input_ids=layout.tokens,
            position_ids=layout.depths + row.prefix_len,
            attention_mask=self._row_mask(row, layout),
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=layout.keep_index,
        )
        cache.crop(-len(row.token_ids))
        logsoftmax = output.logits[0].float().log_softmax(-1)
        # every logprob the trees need, read in one indexing op (not one .item() each), in the
        # order of layout.index: per tree, each label's tokens, then its distinct first tokens
        index = layout.index.to(logsoftmax.device)  # a no-op unless a sharded model's logits end elsewhere
        values = iter(logsoftmax[index[:, 0], index[:, 1]].tolist())
        results = []
        for tree, first in zip(row.targets, layout.firsts, strict=True):
            logprobs = tuple(float(sum(next(values) for _ in label)) for label in tree)
            results.append((logprobs, mass_outside([next(values) for _ in first])))
        return results

    def _layouts(self) -> RowLayouts:
        """The engine's memo of trie layouts (:mod:`.row_layouts`), made at first use for the
        model's dtype and device then: a model moved or cast after its first packed pass needs
        a new engine (``from_transformers``)."""
        known = self.__dict__.get("_row_layouts")
        if known is None:
            known = self.__dict__["_row_layouts"] = RowLayouts(
                self.model.dtype, self.model.device, with_blocks=not self.attention.windowed)
        return known  # type: ignore[no-any-return]

    def _row_mask(self, row: PackedRow, layout: Layout | None = None) -> torch.Tensor | dict[str, torch.Tensor]:
        """:func:`~.batched.row_mask` of ``row`` for this model; with ``layout`` (the one ``row``
        was placed with) made from the memo's block or wide buffer (:meth:`.RowLayouts.mask`)."""
        layouts = self._layouts()
        if layout is not None:
            return layouts.mask(self.attention, row, layout)
        return row_mask(self.attention, row, layouts.dtype, layouts.device)

    # ------------------------------------------------------------------ generation
    def generate(self, requests: Sequence[GenerateRequest]) -> list[Generation]:
        """Constrained JSON-string bodies for every request; see :class:`~.base.Engine`.

        Requests sharing a prefix decode together as branches below one packed suffix trie:
        the prefix is computed once, all suffixes in one pass (shared starts once), then one
        token per open branch per step, each branch attending to the prefix, its own suffix
        path and its own tokens. Every step is
        masked by the Outlines-compiled grammar of a JSON string body.

        With ``max_decode_tokens`` > 0 (and the packed path), the branches of many prefix
        groups advance in one forward pass per step (:mod:`.decode_batched`); if the model
        refuses the first such pass, the engine decodes one group at a time from then on and
        records why in ``fallbacks``.
        """
        if not (self.max_decode_tokens and self.attention.packed):
            return _per_prefix(requests, self._generate_group)
        import torch

        try:
            with torch.inference_mode():
                results = self._generate_batched(requests)
        except PathUnsupported as exc:
            if self._decode_batched_proven and exc.path == "batched":
                raise
            self._fall_back(f"{exc.reason}; decoding one prefix group at a time")
            self.max_decode_tokens = 0
            return _per_prefix(requests, self._generate_group)
        self._decode_batched_proven = True
        return results

    def _screen(self, prefix: str, requests: list[GenerateRequest]) -> tuple[
            list[Generation | None], list[list[int]], list[int]]:
        """Prompt ids of a prefix group's requests, errors where a prompt cannot run, and the
        indices of the runnable ones."""
        prompts = [self.prompt_tokens(prefix, r.suffix) for r in requests]
        results: list[Generation | None] = [None] * len(requests)
        runnable: list[int] = []
        for index, (request, prompt) in enumerate(zip(requests, prompts, strict=True)):
            needed = len(prompt) + request.max_new_tokens
            if not prompt:
                results[index] = Generation("", error="infrastructure: empty prompt")
            elif needed > self.context_length:
                results[index] = Generation(
                    "",
                    error=(
                        f"infrastructure: prompt plus {request.max_new_tokens} new tokens needs "
                        f"{needed} tokens, over the judge's context length of {self.context_length}"
                    ),
                )
            else:
                runnable.append(index)
        return results, prompts, runnable

    def _assemble(self, requests: list[GenerateRequest], prompts: list[list[int]], results: list[Generation | None],
                  runnable: list[int], decoded: list[tuple[list[int], bool]], shared: int,
                  seconds: list[float]) -> list[Generation]:
        """A prefix group's generations from its decoded token ids (runnable order)."""
        for position, (index, (ids, closed), spent) in enumerate(zip(runnable, decoded, seconds, strict=True)):
            body, truncated = read_generated(requests[index], self.tokenizer, ids)
            results[index] = Generation(
                body,
                truncated=truncated or not closed,
                usage=TokenUsage.of(
                    prompt_tokens=len(prompts[index]),
                    completion_tokens=len(ids),
                    # The first request of the group pays for the shared prefix; the rest hit it.
                    cache_read_input_tokens=0 if position == 0 else shared,
                ),
                seconds=spent,
            )
        return filled(results, "transformers generate")

    def _generate_group(self, prefix: str, requests: list[GenerateRequest]) -> list[Generation]:
        start = time.perf_counter()
        results, prompts, runnable = self._screen(prefix, requests)
        if not runnable:
            return filled(results, "transformers generate")
        work = [(prompts[i], requests[i].max_new_tokens, requests[i].regex) for i in runnable]
        decoded, shared = self._packed_or_plain(lambda: self._generate_packed(work), lambda: self._generate_each(work))
        elapsed = time.perf_counter() - start
        return self._assemble(requests, prompts, results, runnable, decoded, shared,
                              [elapsed / len(runnable)] * len(runnable))

    def _generate_batched(self, requests: Sequence[GenerateRequest]) -> list[Generation]:
        """Cross-item decoding (:mod:`.decode_batched`): every prefix group's branches cut in
        chunks as the per-group path cuts them (``max_packed_tokens``), each chunk one row;
        consecutive rows batched up to ``max_decode_tokens`` padded key slots. Each batch
        computes its groups' prefix caches and suffix tries as the per-group path does, then
        decodes all its rows together. A batch's wall time is split evenly among its requests."""
        from autorubric_local.engine.transformers.decode_batched import decode_units, plan_rows

        out: list[Generation | None] = [None] * len(requests)
        groups = []  # per group: indices, group requests, screened results, prompts, runnable, work, shared
        rows: list[tuple[int, list[int]]] = []  # (group number, positions in its runnable list)
        sizes: list[int] = []
        for indices in _groups(requests).values():
            group = [requests[i] for i in indices]
            results, prompts, runnable = self._screen(group[0].prefix, group)
            work = [(prompts[i], group[i].max_new_tokens, group[i].regex) for i in runnable]
            shared = _common_prefix_length([prompt for prompt, _, _ in work]) if work else 0
            number = len(groups)
            groups.append((indices, group, results, prompts, runnable, work, shared))
            suffix_sizes = [len(prompt) - shared + budget for prompt, budget, _ in work]
            for chunk in chunk_trees(suffix_sizes, self.max_packed_tokens) if work else []:
                rows.append((number, chunk))
                sizes.append(shared + sum(len(work[c][0]) - shared for c in chunk)
                             + len(chunk) * max(work[c][1] for c in chunk))
        decoded: list[dict[int, tuple[list[int], bool]]] = [{} for _ in groups]
        seconds: list[dict[int, float]] = [{} for _ in groups]
        for batch in plan_rows(sizes, self.max_decode_tokens):
            start = time.perf_counter()
            units = []
            caches: dict[int, Any] = {}
            for number, chunk in (rows[r] for r in batch):
                work, shared = groups[number][5], groups[number][6]
                if number not in caches:
                    caches[number] = self._prefix_cache(work[0][0][:shared])
                units.append(self._decode_unit(shared, caches[number], [
                    (work[c][0][shared:], work[c][1], work[c][2]) for c in chunk]))
            del caches
            results = decode_units(self.model, self.attention, units, self._sampler())
            del units
            spent = (time.perf_counter() - start) / sum(len(rows[r][1]) for r in batch)
            for (number, chunk), branches in zip((rows[r] for r in batch), results, strict=True):
                for c, result in zip(chunk, branches, strict=True):
                    decoded[number][c], seconds[number][c] = result, spent
        for number, (indices, group, results, prompts, runnable, work, shared) in enumerate(groups):
            generations = self._assemble(
                group, prompts, results, runnable, [decoded[number][c] for c in range(len(runnable))], shared,
                [seconds[number][c] for c in range(len(runnable))]) if runnable else filled(
                results, "transformers generate")
            for index, generation in zip(indices, generations, strict=True):
                out[index] = generation
        return filled(out, "transformers generate")

    def _generate_each(self, work: list[tuple[list[int], int, str]]) -> tuple[list[tuple[list[int], bool]], int]:
        """Plain path: one request at a time on the model's own cache; nothing shared."""
        return [
            decode_plain(self.model, prompt, self._grammar_of(regex), self._sampler(), budget)
            for prompt, budget, regex in work
        ], 0

    def _generate_packed(self, work: list[tuple[list[int], int, str]]) -> tuple[list[tuple[list[int], bool]], int]:
        """Packed path: the common prompt tokens once, then branches in chunks; returns the shared length."""
        prompts = [prompt for prompt, _, _ in work]
        shared = _common_prefix_length(prompts)
        cache = self._prefix_cache(prompts[0][:shared])
        sizes = [len(prompt) - shared + budget for prompt, budget, _ in work]
        decoded: list[tuple[list[int], bool]] = []
        for chunk in chunk_trees(sizes, self.max_packed_tokens):
            decoded.extend(self._decode_branches(
                shared, cache, [(prompts[c][shared:], work[c][1], work[c][2]) for c in chunk]))
        return decoded, shared

    def _suffix_pass(self, prefix_len: int, cache: Any, suffixes: list[list[int]]) -> tuple[
            PackedRow, torch.Tensor, torch.Tensor]:
        """The suffixes as one packed trie (shared starts computed once) on top of the prefix
        cache, appended to it. Returns the row, the logits at each suffix's end (one row per
        suffix) and ``seen`` (bool (n_suffixes, n_nodes)): the trie nodes on each suffix's path."""
        import torch

        device = self.model.device
        row = pack_trie(prefix_len, [(s, []) for s in suffixes])
        keep = sorted(set(row.ends))
        output = call_model(
            self.model, "packed",
            input_ids=torch.tensor([row.token_ids], dtype=torch.long, device=device),
            position_ids=torch.tensor([row.positions], device=device),
            attention_mask=self._row_mask(row),
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=torch.tensor(keep, device=device),
        )
        seen = torch.zeros(len(suffixes), len(row.token_ids), dtype=torch.bool)
        for branch, nodes in enumerate(row.suffix_nodes):
            seen[branch, nodes] = True
        return row, output.logits[0][[keep.index(end) for end in row.ends]], seen

    def _decode_unit(self, prefix_len: int, cache: Any, branches: list[tuple[list[int], int, str]]) -> Any:
        """One row of cross-item decoding (:class:`~.decode_batched.DecodeUnit`): the suffix
        trie of ``branches`` (``(suffix_ids, max_new_tokens, regex)``) computed on the prefix
        cache, the row's keys taken, the cache restored."""
        import torch

        from autorubric_local.engine.transformers.decode_batched import DecodeUnit

        suffixes = [suffix for suffix, _, _ in branches]
        row, logits, seen_nodes = self._suffix_pass(prefix_len, cache, suffixes)
        layers = [(layer.keys, layer.values) for layer in cache.layers]
        cache.crop(-len(row.token_ids))
        return DecodeUnit(
            layers=layers,
            seen=torch.cat([torch.ones(len(branches), prefix_len, dtype=torch.bool), seen_nodes], 1),
            key_positions=torch.tensor([*range(prefix_len), *row.positions], dtype=torch.long),
            last_positions=[prefix_len + len(s) - 1 for s in suffixes],
            logits=logits,
            grammars=[self._grammar_of(regex) for _, _, regex in branches],
            budgets=[budget for _, budget, _ in branches],
        )

    def _decode_branches(
        self, prefix_len: int, cache: Any, branches: list[tuple[list[int], int, str]]
    ) -> list[tuple[list[int], bool]]:
        """Decode one branch per ``(suffix_ids, max_new_tokens, regex)`` on top of the prefix cache.

        Each step feeds one token per open branch in one forward pass and chooses every
        branch's next token at once under its grammar's mask (:func:`~.constrained.choose_tokens`).
        The cache is restored after. Returns, per branch, the generated token ids and whether
        the grammar finished (the closing quote was produced) within the budget.
        """
        import torch

        from autorubric_local.engine.constrained import choose_tokens

        device = self.model.device
        suffixes = [suffix for suffix, _, _ in branches]
        budgets = [budget for _, budget, _ in branches]
        # The suffixes as one trie (shared starts computed once); each branch then decodes
        # below its suffix's last node.
        row, logits, seen_nodes = self._suffix_pass(prefix_len, cache, suffixes)
        appended = len(row.token_ids)
        # seen[b, k]: branch b sees appended key k (its suffix path, then its own tokens).
        seen = torch.zeros(len(branches), appended + sum(budgets), dtype=torch.bool)
        seen[:, :appended] = seen_nodes
        key_positions = torch.tensor([*range(prefix_len), *row.positions])
        last_suffix_position = torch.tensor([prefix_len + len(s) - 1 for s in suffixes])
        grammars = [self._grammar_of(regex) for _, _, regex in branches]
        guides = [grammar.new_guide() for grammar in grammars]
        generated: list[list[int]] = [[] for _ in branches]
        active = list(range(len(branches)))
        sampler = self._sampler()
        while True:
            chosen = choose_tokens([grammars[b] for b in active], [guides[b] for b in active], logits, sampler)
            for branch, token in zip(active, chosen, strict=True):
                generated[branch].append(token)
            still = [(b, t) for b, t in zip(active, chosen, strict=True)
                     if not guides[b].is_finished() and len(generated[b]) < budgets[b]]
            if not still:
                break
            active = [b for b, _ in still]
            # The token fed now is appended at slot `appended + i` for the i-th open branch.
            rows = torch.tensor(active)
            n_new = len(active)
            seen[rows, appended + torch.arange(n_new)] = True
            allowed = torch.cat([torch.ones(n_new, prefix_len, dtype=torch.bool), seen[rows, : appended + n_new]], 1)
            positions = last_suffix_position[rows] + torch.tensor([len(generated[b]) for b in active])
            key_positions = torch.cat([key_positions, positions])
            output = call_model(
                self.model, "packed",
                input_ids=torch.tensor([[t for _, t in still]], dtype=torch.long, device=device),
                position_ids=positions[None].to(device),
                attention_mask=additive_masks(
                    self.attention, allowed, positions, key_positions, self.model.dtype, device),
                past_key_values=cache,
                use_cache=True,
            )
            appended += n_new
            logits = output.logits[0]
        cache.crop(-appended)
        return [(ids, guide.is_finished()) for ids, guide in zip(generated, guides, strict=True)]

    def _sampler(self) -> Any:
        from autorubric_local.engine.constrained import seeded_sampler

        return seeded_sampler(self.temperature, self.seed)

    def _grammar_of(self, regex: str) -> Any:
        """The Outlines-compiled grammar of ``regex`` (a JSON string body; built once per engine)."""
        if regex not in self._grammars:
            from autorubric_local.engine.constrained import RegexGrammar

            self._grammars[regex] = RegexGrammar.from_transformers(
                self.model, self.tokenizer, regex, temperature=self.temperature
            )
        return self._grammars[regex]


def _common_prefix_length(prompts: Sequence[Sequence[int]]) -> int:
    """Longest common token prefix of ``prompts``, at most the shortest length minus one.

    The common prefix of a set of sequences is that of its lexicographic least and greatest;
    its length is found by bisection on slice equality (list compares run in C).
    """
    rows = [p if type(p) is list else list(p) for p in prompts]  # read only: no copies of lists
    low, high = min(rows), max(rows)
    short, long_ = 0, min(len(p) for p in rows) - 1  # the answer lies in [short, long_]
    while short < long_:
        middle = (short + long_ + 1) // 2
        if low[:middle] == high[:middle]:
            short = middle
        else:
            long_ = middle - 1
    return max(short, 0)


ScoredWork = tuple[tuple[float, ...], float, TokenUsage, float]
"""Per fitting request: ``(label logprobs, off-label mass, usage, time share)``."""


def _packed_usage(
    work: list[Any], shared: int, scored: list[tuple[tuple[float, ...], float]], computed: list[int],
    shares: list[float],
) -> list[ScoredWork]:
    """Usage and time shares of a group scored as a packed trie (:meth:`TransformersEngine._score_packed`).

    ``computed``: suffix tokens each request had computed; ``shares``: its row nodes
    (fractional). The first request also pays the ``shared`` prefix tokens.
    """
    out = []
    for position, ((prompt, _), (logprobs, off_mass), own, share) in enumerate(
            zip(work, scored, computed, shares, strict=True)):
        paid = own + (shared if position == 0 else 0)
        usage = TokenUsage.of(prompt_tokens=len(prompt), cache_read_input_tokens=len(prompt) - paid)
        out.append((logprobs, off_mass, usage, share + (shared if position == 0 else 0)))
    return out


def _label_scores(tokenized: list[Any], scored: list[ScoredWork], elapsed: float) -> list[LabelScores]:
    """One group's results: errors where tokenizing failed, else the scores, ``elapsed`` seconds
    split among the fitting requests by their time shares."""
    total = sum(share for *_, share in scored) or 1.0
    fitting = iter(scored)
    results = []
    for item in tokenized:
        if isinstance(item, str):
            results.append(LabelScores((), error=item))
            continue
        logprobs, off_mass, usage, share = next(fitting)
        results.append(LabelScores(logprobs, usage=usage, seconds=elapsed * share / total, off_label_mass=off_mass))
    return results


def _groups(requests: Sequence[Any]) -> dict[str, list[int]]:
    """Request indices per distinct prefix, in order of first appearance."""
    by_prefix: dict[str, list[int]] = defaultdict(list)
    for index, request in enumerate(requests):
        by_prefix[request.prefix].append(index)
    return by_prefix


def _per_prefix(requests: Sequence[Any], run_group: Callable[[str, list[Any]], list[Any]]) -> list[Any]:
    """Run ``run_group(prefix, group)`` once per distinct prefix; results back in input order."""
    import torch

    results: list[Any] = [None] * len(requests)
    with torch.inference_mode():
        for prefix, indices in _groups(requests).items():
            group = run_group(prefix, [requests[i] for i in indices])
            for index, result in zip(indices, checked_count(group, len(indices), "a prefix group"), strict=True):
                results[index] = result
    return results


def default_batch_tokens(model: Any) -> int:
    """Default ``max_batch_tokens`` for ``model``'s device: 0 (one group per pass) on CPU,
    16384 padded tokens per pass on an accelerator.

    CPU stays per-group because batching was not a clean win there: on the shared 2-core
    machine (SmolLM2-135M, 448 judgments, scripts/results/bench_engine_batched_2cpu_2026-11-24.txt)
    batched was 1.25x faster by the median of three interleaved rounds but slower in one, under
    load averages of 3.6-10.7. The accelerator figure is a memory budget, not a measurement.
    """
    device = getattr(model, "device", None)
    return 0 if getattr(device, "type", "cpu") == "cpu" else 16384


def default_decode_tokens(model: Any) -> int:
    """Default ``max_decode_tokens`` for ``model``'s device: 0 (one prefix group per decode
    step, :meth:`TransformersEngine._decode_branches`) on CPU, 65536 padded key slots per batch
    of cross-item decoding on an accelerator (:mod:`.decode_batched`).

    CPU stays per group because cross-item decoding was not a clean win there: on the shared
    2-core machine (SmolLM2-135M, 112 explain judgments, identical outputs) it took 226 s against
    403 s per group by the mean of A B B A runs, but the adjacent pair at the lowest load went
    the other way (180 s against 102 s), and so did a later pair on 56 judgments, under load
    averages of 1.3-4.0 (scripts/results/bench_engine_explain_batched_2cpu_2026-12-02.txt): a CPU
    decode step of one item's ~14 branches is already mostly matrix products, and the padded
    batch adds slots for closed branches. On an accelerator a step costs about one read of the
    weights whatever the batch; the figure is a memory budget, not a measurement (a slot holds
    one token's keys and values in every layer: a Llama-3.1-8B shape in bfloat16 about 128 KB,
    65536 slots about 8.6 GB; a row of bench_engine's workload, a ~500-token prefix and 14
    criteria of 48 explanation tokens, is about 1,800 slots).
    """
    device = getattr(model, "device", None)
    return 0 if getattr(device, "type", "cpu") == "cpu" else 65536


def from_transformers(model: Any, tokenizer: Any, **kwargs: Any) -> TransformersEngine:
    """Wrap an already-loaded Hugging Face model and tokenizer as a judge engine.

    ``kwargs`` are passed to :class:`TransformersEngine` (``model_id`` defaults to the model's
    ``name_or_path``).
    """
    kwargs.setdefault("model_id", str(getattr(model, "name_or_path", "") or type(model).__name__))
    model.eval()
    return TransformersEngine(model, tokenizer, **kwargs)
