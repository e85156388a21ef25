"""llama.cpp backend: GGUF judges as they are (quantised), through llama-cpp-python.

Build one with :func:`load_llamacpp`, or let :func:`autorubric_local.judges.engines.load_engine`
build it for a ``.gguf`` model (``LLMConfig(backend="llamacpp")``, or ``"auto"`` when
llama-cpp-python is installed: ``scripts/setup_llamacpp.sh``). llama-cpp-python is imported
lazily; this module imports without it.

Tokens
------
Prompts are rendered and tokenized by the Hugging Face tokenizer read from the same GGUF
(:class:`~.chat_text.HFTextMixin`: chat template, exact whole-prompt tokenization, label
continuation tokens, untrusted text never parsed as special tokens), exactly as the
transformers backend does; llama.cpp only sees token ids. Its vocabulary is the GGUF's, so the
ids are the same; :func:`load_llamacpp` checks that the vocabulary sizes match.

Scoring (exact, every shared token computed once)
-------------------------------------------------
For a request, the label token sequences form a trie below the prompt; ``log p(label |
prompt)`` is the sum of the model's log-probabilities along the label's path, teacher-forced
(as in the other backends). Every internal node ``prompt + label[:j]`` is a *context* whose
next-token distribution is read. The workload's sequences ``prompt + label[:-1]`` are run in
lexicographic token order through one KV sequence: each keeps the longest prefix it shares
with the one before (``llama_memory_seq_rm`` drops the rest) and decodes only its own tail, so
the system prompt is computed once per workload, each item's submission once, each criterion
suffix once and each label node once. Logits are requested only at context positions.

Generation
----------
Up to ``n_seq`` requests decode together, one KV sequence each: a request's prompt starts from
the longest prefix it shares with a sequence already filled (``llama_memory_seq_cp``, no
compute), then every step decodes one token per open request in one ``llama_decode`` batch.
Each step is masked by the Outlines-compiled grammar of the request's regex
(:class:`~.constrained.RegexGrammar`, the same grammar as the transformers backend), greedy at
temperature 0, else sampled with a seeded generator.

Numerics
--------
The context runs without CPU flash attention and without repacked weight layouts
(:class:`~.context.LlamaContext`): with either, a token's result depends on the batch
it is computed in, and batched scoring would differ from scoring a request alone. With both
off it does not, provided no batch is short: llama.cpp's CPU kernels for a batch of a few
tokens are others than for a longer one, whose results differ (up to 0.31 in a label's
log-probability on SmolLM2's Q4_1 file; 0.11 on Gemma's Q4_K file with only one-token batches avoided:
``scripts/results/eval_llamacpp_plain_one_token_fix_only_2cpu_2026-12-03.txt``), so a label's tail is decoded
with the kept tokens before it, :data:`~.context.MIN_BATCH` tokens in all, and
:meth:`~.context.LlamaContext.extend` never ends on a shorter batch
(``tests/test_llamacpp_backend.py``, ``scripts/eval_llamacpp_plain.py``). llama.cpp still multiplies the quantised
weights with 8-bit-quantised activations, so its probabilities differ from the transformers
backend's float32 reading of the same file by more than float noise
(``scripts/bench_llamacpp.py``). Explanations decoded together share one cache; where their
cells lie changes the order of attention's float sums, which can flip a near-tie greedy token.

Accounting and errors
---------------------
``prompt_tokens`` is the prompt's length; ``cache_read_input_tokens`` the tokens of it that
were reused rather than computed for this request; ``seconds`` the call's wall time shared by
the tokens each request made llama.cpp compute. A prompt that does not fit the context, or
a label that cannot be tokenized exactly, gives that request an ``"infrastructure: ..."``
error; a batch llama.cpp refuses fails only the requests of that batch.
"""

from __future__ import annotations

import math
import os
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from autorubric_local.core.reports import TokenUsage
from autorubric_local.engine.base import (
    GenerateRequest,
    Generation,
    LabelScores,
    ScoreRequest,
    mass_outside,
)
from autorubric_local.engine.capabilities import EngineCapabilities
from autorubric_local.engine.chat_text import HFTextMixin, PromptFormat
from autorubric_local.engine.constrained import read_generated
from autorubric_local.engine.llamacpp.context import (
    MIN_BATCH,
    DecodeError,
    LlamaContext,
    common_prefix,
)

DEFAULT_N_SEQ = 8
"""KV sequences of a context: requests decoded together in explain mode."""

DEFAULT_N_BATCH = 512
"""Most tokens per ``llama_decode`` call."""

Context = tuple[int, ...]


def available() -> bool:
    """Whether llama-cpp-python can be imported here."""
    import importlib.util

    return importlib.util.find_spec("llama_cpp") is not None


def supports_gpu() -> bool:
    """Whether this llama-cpp-python build can offload layers to a GPU."""
    import llama_cpp

    return bool(llama_cpp.llama_supports_gpu_offload())


def default_threads() -> int:
    """CPU cores this process may use (llama-cpp-python's own default is half of them)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class LlamaCppEngine(HFTextMixin):
    """Judge engine over a llama.cpp context.

    Parameters
    ----------
    context : LlamaContext
        The model's context (:func:`load_llamacpp` builds it).
    tokenizer : transformers.PreTrainedTokenizerBase
        The Hugging Face tokenizer of the same GGUF.
    model_id : str
        Identifier recorded with every judgment.
    context_length : int
        Longest prompt + continuation in tokens (the context's ``n_ctx``).
    temperature : float, >= 0
        0 decodes explanations greedily; above 0 samples them (seeded by ``seed``).
    seed : int, optional
    prompt_format : "auto" | "chat" | "completion"
        How prompts are rendered (:mod:`.chat_text`, "Prompt formats").
    """

    capabilities = EngineCapabilities("llamacpp", counts_tokens=True, whole_prompt_tokens=True,
                                      describes=frozenset({"attention_path", "prompt_format"}))

    def __init__(
        self,
        context: LlamaContext,
        tokenizer: Any,
        *,
        model_id: str,
        context_length: int,
        temperature: float = 0.0,
        seed: int | None = None,
        prompt_format: PromptFormat = "auto",
    ) -> None:
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        self.context = context
        self.tokenizer = tokenizer
        self.model_id = model_id
        self.context_length = context_length
        self.temperature = temperature
        self.seed = seed
        self._token_cache: dict[str, list[int]] = {}
        self._grammars: dict[str, Any] = {}
        self.set_prompt_format(prompt_format)

    @property
    def attention_path(self) -> str:
        """What runs, recorded per run."""
        return f"llama.cpp (GGUF as stored, {self.context.n_seq} KV sequences, prefix reuse)"

    def _fit_error(self, prompt_len: int, needed: int, what: str) -> str | None:
        if prompt_len == 0:
            return "infrastructure: empty prompt"
        if needed > self.context_length:
            return (f"infrastructure: {what} needs {needed} tokens, over the judge's context length "
                    f"of {self.context_length} tokens")
        return None

    # ------------------------------------------------------------------ scoring
    def score(self, requests: Sequence[ScoreRequest]) -> list[LabelScores]:
        """Label log-probabilities for every request; see :class:`~.base.Engine`."""
        start = time.perf_counter()
        prompts: list[list[int]] = []
        labels: list[list[list[int]]] = []
        errors: list[str | None] = []
        for request in requests:
            prompt, label_ids, error = self.score_tokens(request.prefix, request.suffix, request.labels)
            longest = len(prompt) + max((len(ids) for ids in label_ids), default=0)
            prompts.append(prompt)
            labels.append(label_ids)
            errors.append(error or self._fit_error(len(prompt), longest, f"prompt of {len(prompt)} tokens plus its longest label"))

        # Every context (prompt + label[:j]) whose next-token log-probabilities are needed,
        # with the tokens read there; per request, each label's contexts in order.
        targets: dict[Context, set[int]] = defaultdict(set)
        sequences: set[Context] = set()
        paths: list[list[list[Context]]] = []
        for prompt, label_ids, error in zip(prompts, labels, errors, strict=True):
            paths.append([] if error is not None else
                         [[tuple(prompt + ids[:j]) for j in range(len(ids))] for ids in label_ids])
            if error is not None:  # nothing to compute for it
                continue
            for ids, contexts in zip(label_ids, paths[-1], strict=True):
                for context, token in zip(contexts, ids, strict=True):
                    targets[context].add(token)
                sequences.add(tuple(prompt + ids[:-1]))
        edges, computed, failed = self._run_contexts(sorted(sequences), targets)
        elapsed = time.perf_counter() - start

        # Per request: how many of its tokens it computed (for the time share) and reused.
        results: list[LabelScores] = []
        shares: list[float] = []
        for prompt, label_ids, error, label_paths in zip(prompts, labels, errors, paths, strict=True):
            if error is None:
                error = next((failed[c] for contexts in label_paths for c in contexts if c in failed), None)
            if error is not None:
                results.append(LabelScores((), error=error))
                shares.append(0.0)
                continue
            logprobs = tuple(math.fsum(edges[(c, t)] for c, t in zip(contexts, ids, strict=True))
                             for contexts, ids in zip(label_paths, label_ids, strict=True))
            root = tuple(prompt)
            off_mass = mass_outside([edges[(root, t)] for t in {ids[0] for ids in label_ids}])
            own = computed.get(root, 0)
            cached = max(len(prompt) - own, 0)
            results.append(LabelScores(logprobs, usage=TokenUsage.of(prompt_tokens=len(prompt),
                                                                      cache_read_input_tokens=cached),
                                       off_label_mass=off_mass))
            shares.append(float(own + sum(len(ids) for ids in label_ids)))
        total = sum(shares) or 1.0
        return [
            LabelScores(r.logprobs, usage=r.usage, seconds=elapsed * s / total, error=r.error,
                        off_label_mass=r.off_label_mass)
            for r, s in zip(results, shares, strict=True)
        ]

    def _run_contexts(
        self, sequences: list[Context], targets: dict[Context, set[int]]
    ) -> tuple[dict[tuple[Context, int], float], dict[Context, int], dict[Context, str]]:
        """Decode ``sequences`` (sorted) through KV sequence 0; log-probabilities at every target context.

        Returns ``(edges, computed, failed)``: ``edges[(context, token)]`` the log-probability
        of ``token`` after ``context``; ``computed[context]`` how many tokens were decoded to
        reach ``context`` when it was first read (for a prompt: its tokens not reused from an
        earlier sequence); ``failed[context]`` an error for a context whose batch llama.cpp
        refused.
        """
        edges: dict[tuple[Context, int], float] = {}
        computed: dict[Context, int] = {}
        failed: dict[Context, str] = {}
        done: set[Context] = set()
        lengths = sorted({len(context) for context in targets})  # only these positions can be wanted
        ctx = self.context
        ctx.clear_others(0)
        for sequence in sequences:
            keep = ctx.reuse(0, sequence)
            if 0 < keep and len(sequence) - keep < MIN_BATCH:
                # A short batch runs other CPU kernels than a long one, and the labels'
                # log-probabilities would differ from plain one-prompt scoring (up to 0.31 on
                # SmolLM2's Q4_1 file: scripts/eval_llamacpp_plain.py): decode the tail with the
                # kept tokens before it, MIN_BATCH tokens in all.
                ctx.truncate(0, max(len(sequence) - MIN_BATCH, 0))
                keep = len(ctx.sequences[0].tokens)
            # Contexts before ``keep`` were read when an earlier sequence (sorted order) ran them.
            wanted = [n - 1 for n in lengths
                      if keep < n <= len(sequence) and sequence[:n] in targets and sequence[:n] not in done]
            try:
                rows = ctx.extend(0, sequence[keep:], wanted)
            except DecodeError as exc:
                ctx.truncate(0, 0)
                for p in wanted:
                    failed[sequence[: p + 1]] = f"infrastructure: {exc}"
                continue
            for position, row in rows.items():
                context = sequence[: position + 1]
                log_norm = _logsumexp(row)
                for token in targets[context]:
                    edges[(context, token)] = float(row[token]) - log_norm
                done.add(context)
                computed.setdefault(context, position + 1 - keep)
        return edges, computed, failed

    # ------------------------------------------------------------------ generation
    def generate(self, requests: Sequence[GenerateRequest]) -> list[Generation]:
        """Constrained JSON-string bodies for every request; see :class:`~.base.Engine`."""
        start = time.perf_counter()
        results: list[Generation | None] = [None] * len(requests)
        prompts = [self.prompt_tokens(r.prefix, r.suffix) for r in requests]
        runnable = []
        for index, (request, prompt) in enumerate(zip(requests, prompts, strict=True)):
            error = self._fit_error(len(prompt), len(prompt) + request.max_new_tokens,
                                    f"prompt plus {request.max_new_tokens} new tokens")
            if error is not None:
                results[index] = Generation("", error=error)
            else:
                runnable.append(index)
        runnable.sort(key=lambda i: prompts[i])
        work: list[tuple[int, list[int], int, bool]] = []  # index, generated ids, reused tokens, closed
        spent: dict[int, int] = {}
        sampler = self._sampler()
        for wave in self._waves(runnable, prompts, requests):
            try:
                decoded = self._decode_wave([prompts[i] for i in wave], [requests[i] for i in wave], sampler)
            except DecodeError as exc:
                self._reset()
                for i in wave:
                    results[i] = Generation("", error=f"infrastructure: {exc}")
                continue
            for i, (ids, reused, closed) in zip(wave, decoded, strict=True):
                work.append((i, ids, reused, closed))
                spent[i] = len(prompts[i]) - reused + len(ids)
        elapsed = time.perf_counter() - start
        total = sum(spent.values()) or 1
        for index, ids, reused, closed in work:
            body, truncated = read_generated(requests[index], self.tokenizer, ids)
            results[index] = Generation(
                body,
                truncated=truncated or not closed,
                usage=TokenUsage.of(prompt_tokens=len(prompts[index]), completion_tokens=len(ids),
                                    cache_read_input_tokens=reused),
                seconds=elapsed * spent[index] / total,
            )
        return [r if r is not None else Generation("", error="unknown: not run") for r in results]

    def _decode_wave(
        self, prompts: list[list[int]], requests: list[GenerateRequest], sampler: Any
    ) -> list[tuple[list[int], int, bool]]:
        """Prefill one KV sequence per request (reusing shared prefixes), then decode them in lockstep.

        Returns per request ``(generated ids, prompt tokens reused, grammar finished)``.
        """
        import torch

        ctx = self.context
        ctx.clear_others(0)
        reused: list[int] = []
        logits: list[np.ndarray] = []
        for seq, prompt in enumerate(prompts):
            # Start from whichever sequence already holds the longest prefix of this prompt.
            best, source = ctx.reuse(seq, prompt), seq
            for other in range(seq):
                shared = min(common_prefix(ctx.sequences[other].tokens, prompt), len(prompt) - 1)
                if shared > best:
                    best, source = shared, other
            if source != seq:
                ctx.copy_prefix(source, seq, best)
                best = len(ctx.sequences[seq].tokens)  # 0 if the copy's window was incomplete
            reused.append(best)
            logits.append(ctx.extend(seq, prompt[best:], [len(prompt) - 1])[len(prompt) - 1])
        grammars = [self._grammar_of(r.regex) for r in requests]
        guides = [g.new_guide() for g in grammars]
        generated: list[list[int]] = [[] for _ in requests]
        active = list(range(len(requests)))
        rows = dict(zip(active, logits, strict=True))
        while active:
            chosen = [grammars[b].choose(guides[b], torch.from_numpy(rows[b]), sampler) for b in active]
            for b, token in zip(active, chosen, strict=True):
                generated[b].append(token)
            still = [(b, t) for b, t in zip(active, chosen, strict=True)
                     if not guides[b].is_finished() and len(generated[b]) < requests[b].max_new_tokens]
            if not still:
                break
            active = [b for b, _ in still]
            rows = dict(zip(active, ctx.step(active, [t for _, t in still]), strict=True))
        # Generated tokens are not a prefix anyone will reuse: drop them, keep the prompts.
        for seq, prompt in enumerate(prompts):
            ctx.truncate(seq, len(prompt))
        return [(ids, r, guide.is_finished()) for ids, r, guide in zip(generated, reused, guides, strict=True)]

    def _waves(self, order: list[int], prompts: list[list[int]], requests: Sequence[GenerateRequest]) -> list[list[int]]:
        """Consecutive groups of at most ``n_seq`` requests whose prompts and budgets fit the KV cache together."""
        waves: list[list[int]] = []
        used = 0
        for index in order:
            need = len(prompts[index]) + requests[index].max_new_tokens
            if waves and len(waves[-1]) < self.context.n_seq and used + need <= self.context_length:
                waves[-1].append(index)
                used += need
            else:
                waves.append([index])
                used = need
        return waves

    def _reset(self) -> None:
        for seq in range(self.context.n_seq):
            self.context.truncate(seq, 0)

    def _sampler(self) -> Any:
        from autorubric_local.engine.constrained import seeded_sampler

        return seeded_sampler(self.temperature, self.seed)

    def _grammar_of(self, regex: str) -> Any:
        """The Outlines-compiled grammar of ``regex`` over the tokenizer (built once per engine)."""
        if regex not in self._grammars:
            from autorubric_local.engine.constrained import RegexGrammar

            self._grammars[regex] = RegexGrammar.from_tokenizer(self.tokenizer, regex, temperature=self.temperature)
        return self._grammars[regex]


def _logsumexp(row: np.ndarray) -> float:
    top = float(row.max())
    return top + math.log(float(np.exp(row.astype(np.float64) - top).sum()))


def load_llamacpp(
    gguf: str | Path,
    tokenizer: Any,
    *,
    model_id: str,
    context_length: int,
    temperature: float = 0.0,
    seed: int | None = None,
    prompt_format: PromptFormat = "auto",
    n_threads: int | None = None,
    n_seq: int = DEFAULT_N_SEQ,
    n_batch: int = DEFAULT_N_BATCH,
    n_gpu_layers: int = 0,
) -> LlamaCppEngine:
    """Load ``gguf`` with llama.cpp (as stored, no conversion) and wrap it as a judge engine.

    Parameters
    ----------
    gguf : path of the GGUF file.
    tokenizer : the Hugging Face tokenizer of the same GGUF (``AutoTokenizer.from_pretrained(
        folder, gguf_file=name)``; :func:`autorubric_local.judges.engines.gguf_tokenizer`).
    context_length : tokens of the KV cache (``n_ctx``), shared by the ``n_seq`` sequences;
        also the longest prompt + continuation accepted.
    n_threads : CPU threads for prefill and decode; default all cores this process may use.
    n_seq : KV sequences (requests decoded together in explain mode).
    n_batch : most tokens per decode call.
    n_gpu_layers : layers offloaded to a GPU (a GPU build of llama.cpp; -1: all).

    Raises
    ------
    autorubric_local.core.errors.EngineError
        If llama-cpp-python is missing, the file does not load, or the tokenizer's vocabulary
        does not match the model's.
    """
    from autorubric_local.core.errors import EngineError

    if not available():
        raise EngineError("backend 'llamacpp' needs llama-cpp-python: run scripts/setup_llamacpp.sh "
                          "(builds llama.cpp from source, a few minutes on 2 cores)")
    try:
        context = LlamaContext(str(gguf), n_ctx=context_length, n_seq=n_seq, n_batch=n_batch,
                               n_threads=n_threads or default_threads(), n_gpu_layers=n_gpu_layers)
    except RuntimeError as exc:
        raise EngineError(f"{gguf}: llama.cpp could not load it: {exc}") from exc
    if context.n_vocab < len(tokenizer):
        raise EngineError(f"{gguf}: the tokenizer has {len(tokenizer)} tokens but the model's vocabulary "
                          f"{context.n_vocab}: not the tokenizer of this model")
    return LlamaCppEngine(context, tokenizer, model_id=model_id, context_length=context.n_ctx,
                          temperature=temperature, seed=seed, prompt_format=prompt_format)
