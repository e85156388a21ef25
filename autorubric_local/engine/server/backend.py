"""Server backend: a llama.cpp or vLLM OpenAI-compatible server as a judge, label
probabilities exact.

Build one with :func:`load_server` (or ``LLMConfig(model=..., backend="server",
api_base="http://127.0.0.1:8080/v1")``, where ``model`` names the local copy of the served model,
a preset, Hugging Face folder or GGUF file, whose chat template renders the prompts).

Prompts
-------
Prompts are rendered as the in-process backends render them (:class:`~.chat_text.HFTextMixin`
over the model's Hugging Face tokenizer: the chat template, or the completion layout), so a
server judge and an in-process judge of the same model see the same text. The server tokenizes
it: llama-cpp-python's server takes text prompts only, so the text is what is sent, and its
tokens are read back from the server's own tokenize endpoint (:mod:`.client`). A prompt whose
untrusted text (:mod:`~.user_text`) holds one of the tokenizer's special-token strings is not
sent (the server would read it as a control token): that request gets an ``infrastructure:``
error.

Scoring
-------
For a request with prompt text ``P`` and label ``l``, as in the in-process backends
(:meth:`~.chat_text.HFTextMixin.score_tokens`): the label's tokens are those the server's
tokenization of ``P + l`` adds after its tokenization of ``P`` (when it keeps ``P``'s tokens
unchanged; a label that re-tokenizes the end of the prompt gets an ``infrastructure:`` error).
``log p(l | P)`` is the sum of the model's log-probabilities of those tokens, teacher-forced,
read from the server's own logits:

- vLLM: one completions call per label on the token ids ``prompt + label``, ``echo=True``,
  ``logprobs=1``, ``max_tokens=1`` (the echoed prompt entries of the label's tokens), calls in
  flight together up to ``max_parallel``;
- llama-cpp-python's server (text prompts only; its echoed logprobs sort the vocabulary once
  per prompt token, ~50 s for an 840-token judge prompt): one greedy one-token call per edge of
  the labels' token trie, forced with ``logit_bias`` (:meth:`ServerEngine._forced`), one
  request's calls in a row so that the server's cached prompt is reused.

The off-label mass (:func:`~.base.mass_outside`) comes from the labels' first-token entries.

Numerics: llama-cpp-python's server computes each forced step as a one-token batch after its
cached prompt, and llama.cpp's CPU kernels for a one-token batch give other results than for a
longer batch, which the in-process backend always uses (:mod:`~.llamacpp.backend`, Numerics). So a
llama.cpp server's first-token log-probabilities follow the in-process backend's closely and
its later label tokens only within that difference (up to 0.31 in a label's log-probability on
SmolLM2's Q4_1 file; ``scripts/eval_server_judge.py``; the one-token kernels are the likely
cause, not measured per token on the server). vLLM's echo path reads every label token in one
pass and has no such term.

Generation
----------
Explanations are decoded by the server under the request's regex: vLLM's structured outputs
(``structured_outputs.regex``) for any regex; llama.cpp's GBNF ``grammar`` for the JSON string
body regexes the grader uses (:data:`GBNF_OF`), no grammar for free text, and an
``infrastructure:`` error for another pattern (llama.cpp servers take no regex).

Errors
------
A failed call (refused connection, timeout, HTTP error, an answer without logprobs) gives the
requests it served an ``"infrastructure: ..."`` error, never a verdict.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

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
from autorubric_local.engine.constrained import (
    FREE_TEXT_REGEX,
    JSON_SENTENCE_BODY_REGEX,
    JSON_STRING_BODY_REGEX,
    split_string_body,
)
from autorubric_local.engine.server.client import ServerCallError, ServerClient
from autorubric_local.engine.user_text import plain, split_marked

__all__ = ["DEFAULT_MAX_PARALLEL", "FORCING_BIAS", "GBNF_OF", "ServerEngine", "load_server"]

DEFAULT_MAX_PARALLEL = 4
"""Calls in flight at once unless ``LLMConfig.max_parallel_requests`` says otherwise."""

FORCING_BIAS = 100.0
"""Logit bias that makes a greedy llama.cpp step take the token asked for (logits of a judge lie
within tens of each other)."""

_GBNF_ESCAPE = r'"\\" ["\\/bfnrt]'
GBNF_OF: dict[str, str] = {
    JSON_STRING_BODY_REGEX: (
        'root ::= char* "\\""\n'
        f'char ::= [^"\\\\\\x00-\\x1F] | {_GBNF_ESCAPE}\n'
    ),
    JSON_SENTENCE_BODY_REGEX: (
        'root ::= (char | [.!?] [^"\\\\\\x00-\\x1F.!? ])* [.!?]? "\\""\n'
        f'char ::= [^"\\\\\\x00-\\x1F.!?] | {_GBNF_ESCAPE}\n'
    ),
}
"""GBNF grammars (llama.cpp's ``grammar`` field) of the same languages as the JSON string body
regexes of :mod:`~.constrained`, written by hand from them."""

T = TypeVar("T")


class ServerEngine(HFTextMixin):
    """Judge engine over an OpenAI-compatible llama.cpp or vLLM server.

    Parameters
    ----------
    client : ServerClient
        The server's address and how to call it.
    tokenizer : transformers.PreTrainedTokenizerBase
        The Hugging Face tokenizer of the served model: its chat template renders prompts, its
        special-token strings are kept out of untrusted text. Tokens come from the server.
    model_id : str
        Identifier recorded with every judgment.
    temperature : float, >= 0
        Sampling temperature of explanations (0: greedy).
    top_p : float in (0, 1], optional
        Nucleus sampling of explanations (sent only when set).
    seed : int, optional
        Sent with every generation.
    prompt_format : "auto" | "chat" | "completion"
        How prompts are rendered (:mod:`.chat_text`).
    max_parallel : int >= 1
        Calls in flight at once.
    extra_body : mapping, optional
        Added to every completions request (e.g. vLLM's ``{"priority": 1}``); the fields the
        engine sets itself take precedence.

    Raises
    ------
    ValueError
        ``temperature`` < 0, or ``max_parallel`` < 1.
    """

    capabilities = EngineCapabilities("server", describes=frozenset({"attention_path", "prompt_format"}))

    def __init__(self, client: ServerClient, tokenizer: Any, *, model_id: str, temperature: float = 0.0,
                 top_p: float | None = None, seed: int | None = None, prompt_format: PromptFormat = "auto",
                 max_parallel: int = DEFAULT_MAX_PARALLEL, extra_body: dict[str, Any] | None = None) -> None:
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        if max_parallel < 1:
            raise ValueError(f"max_parallel must be >= 1, got {max_parallel}")
        self.client = client
        self.tokenizer = tokenizer
        self.model_id = model_id
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self.max_parallel = max_parallel
        self.extra_body = dict(extra_body or {})
        self._token_cache: dict[str, list[int]] = {}
        self.set_prompt_format(prompt_format)

    @property
    def attention_path(self) -> str:
        """What runs, recorded per run."""
        return f"OpenAI-compatible server at {self.client.api_base} (echo logprobs, exact labels)"

    # ------------------------------------------------------------------ helpers
    def _sent_text(self, prefix: str, suffix: str) -> tuple[str, str | None]:
        """The prompt as the server reads it, or an error when untrusted text holds a special-token string."""
        text = prefix + suffix
        pieces = split_marked(text)
        if self._runs_mode(pieces):
            return "", ("infrastructure: the prompt's data text holds a special-token string, which the server "
                        "would read as a control token; judge it with an in-process backend")
        return plain(text), None

    def _parallel(self, calls: list[Callable[[], T]], workers: int | None = None) -> list[T | ServerCallError]:
        """Run ``calls`` at most ``workers`` (default :attr:`max_parallel`) at a time; each result or
        its ServerCallError."""
        def guarded(call: Callable[[], T]) -> T | ServerCallError:
            try:
                return call()
            except ServerCallError as exc:
                return exc

        workers = workers or self.max_parallel
        if len(calls) <= 1 or workers == 1:
            return [guarded(call) for call in calls]
        with ThreadPoolExecutor(max_workers=min(workers, len(calls))) as pool:
            return list(pool.map(guarded, calls))

    def _tokenized(self, texts: set[str]) -> dict[str, list[int] | ServerCallError]:
        order = sorted(texts)
        found = self._parallel([lambda t=t: self.client.tokenize(t) for t in order])  # type: ignore[misc]
        return dict(zip(order, found, strict=True))

    # ------------------------------------------------------------------ scoring
    def score(self, requests: Sequence[ScoreRequest]) -> list[LabelScores]:
        """Label log-probabilities for every request; see :class:`~.base.Engine` and the module docstring."""
        start = time.perf_counter()
        texts: list[str] = []
        errors: list[str | None] = []
        for request in requests:
            text, error = self._sent_text(request.prefix, request.suffix)
            if error is None and any(not label for label in request.labels):
                error = "infrastructure: a label is the empty string"
            texts.append(text)
            errors.append(error)
        wanted = {t for t, e in zip(texts, errors, strict=True) if e is None}
        wanted |= {t + label for t, e, r in zip(texts, errors, requests, strict=True) if e is None for label in r.labels}
        ids = self._tokenized(wanted)

        # Each label's continuation tokens after its prompt's, or the request's error.
        plans: list[tuple[list[int], list[list[int]]] | None] = []
        for index, (request, text) in enumerate(zip(requests, texts, strict=True)):
            if errors[index] is not None:
                plans.append(None)
                continue
            prompt = ids[text]
            if isinstance(prompt, ServerCallError):
                errors[index] = f"infrastructure: {prompt}"
                plans.append(None)
                continue
            continuations: list[list[int]] = []
            for label in request.labels:
                joint = ids[text + label]
                if isinstance(joint, ServerCallError):
                    errors[index] = f"infrastructure: {joint}"
                    break
                if len(joint) <= len(prompt) or joint[: len(prompt)] != prompt:
                    errors[index] = (f"infrastructure: label {label!r} cannot be scored exactly on the server: "
                                     "its tokens re-tokenize the end of the prompt")
                    break
                continuations.append(joint[len(prompt):])
            plans.append(None if errors[index] is not None else (prompt, continuations))

        runnable = [i for i, plan in enumerate(plans) if plan is not None]
        try:
            flavor = self.client.flavor() if runnable else "llamacpp"
        except ServerCallError as exc:  # pragma: no cover - the tokenize calls above found it already
            flavor, runnable = "llamacpp", []
            errors = [error or f"infrastructure: {exc}" for error in errors]
            plans = [None] * len(plans)
        read_one = self._echoed if flavor == "vllm" else self._forced
        # A llama.cpp server runs one request at a time and keeps the KV cache of the last prompt
        # only: one request's calls in a row reuse it, requests interleaved would recompute it.
        read = self._parallel([lambda i=i: read_one(texts[i], plans[i][0], plans[i][1],  # type: ignore[index,misc]
                                                    requests[i].labels) for i in runnable],
                              workers=self.max_parallel if flavor == "vllm" else 1)
        elapsed = time.perf_counter() - start
        share = elapsed / max(len(runnable), 1)

        results: list[LabelScores] = []
        by_index = dict(zip(runnable, read, strict=True))
        for index, plan in enumerate(plans):
            if plan is None:
                results.append(LabelScores((), error=errors[index], cost_usd=None))
                continue
            value = by_index[index]
            prompt, continuations = plan
            usage = TokenUsage.of(prompt_tokens=len(prompt))
            if isinstance(value, ServerCallError):
                results.append(LabelScores((), usage=usage, error=f"infrastructure: {value}", cost_usd=None,
                                           seconds=share))
                continue
            totals, firsts = value
            results.append(LabelScores(totals, usage=usage, seconds=share, off_label_mass=mass_outside(firsts),
                                       cost_usd=None))
        return results

    def _forced(self, text: str, prompt: list[int], continuations: list[list[int]],
                labels: Sequence[str]) -> tuple[tuple[float, ...], list[float]]:
        """A llama.cpp server's label log-probabilities by forced greedy steps.

        llama-cpp-python's server takes text prompts only, and its echoed prompt log-probabilities
        cost a sort of the vocabulary per prompt token (tens of seconds for a judge's prompt), so
        each edge ``(context, token)`` of the labels' token trie is one call: ``prompt = P +
        text(context)``, ``max_tokens=1``, greedy, ``logit_bias={token: +100}``; the generated
        token's ``token_logprobs`` entry is the model's own log-probability of it (llama.cpp reads
        it from the logits before the bias, which acts in the sampler only). A context's text is
        checked to tokenize to ``prompt + context`` on the server, and each label's forced tokens
        to spell the label.

        Returns each label's log-probability and the log-probabilities of the distinct first tokens.

        Raises
        ------
        ServerCallError
            A call failed, or the checks above did not hold.
        """
        edges: dict[tuple[tuple[int, ...], int], float] = {}
        spelled: dict[tuple[int, ...], str] = {(): ""}
        # Breadth first: every label's first token after the same cached prompt, then the next ones.
        for j in range(max(len(ids) for ids in continuations)):
            for ids, label in zip(continuations, labels, strict=True):
                if j >= len(ids) or (tuple(ids[:j]), ids[j]) in edges:
                    continue
                context, token = tuple(ids[:j]), ids[j]
                sent = text + spelled[context]
                if j > 0 and self.client.tokenize(sent) != prompt + list(context):
                    raise ServerCallError(f"label {label!r}: the text of its first {j} token(s) does not "
                                          "tokenize back to them on the server")
                answer = self.client.complete({**self.extra_body, "prompt": sent, "max_tokens": 1, "logprobs": 1,
                                               "temperature": 0.0, "logit_bias": {str(token): FORCING_BIAS}})
                entries = (answer["choice"].get("logprobs") or {}).get("token_logprobs")
                piece = answer["choice"].get("text")
                if not isinstance(entries, list) or len(entries) != 1 or not isinstance(entries[0], (int, float)) \
                        or not isinstance(piece, str):
                    raise ServerCallError("the server answered a forced step without one token's logprobs "
                                          "(llama_cpp.server needs --logits_all True, its default)")
                edges[(context, token)] = float(entries[0])
                spelled[context + (token,)] = spelled[context] + piece
        for ids, label in zip(continuations, labels, strict=True):
            if spelled[tuple(ids)] != label:
                raise ServerCallError(f"label {label!r}: the server generated {spelled[tuple(ids)]!r} when forced "
                                      "to the label's tokens (another vocabulary?)")
        totals = tuple(math.fsum(edges[(tuple(ids[:j]), t)] for j, t in enumerate(ids)) for ids in continuations)
        firsts = {ids[0]: edges[((), ids[0])] for ids in continuations}
        return totals, list(firsts.values())

    def _echoed(self, text: str, prompt: list[int], continuations: list[list[int]],
                labels: Sequence[str]) -> tuple[tuple[float, ...], list[float]]:
        """A vLLM server's label log-probabilities: per label one completions call on the token ids
        ``prompt + label``, ``echo=True``, ``logprobs=1``, ``max_tokens=1``; the echoed prompt
        entries ``len(prompt) .. len(prompt) + len(label) - 1`` are the label's tokens.

        Raises
        ------
        ServerCallError
            A call failed, or its answer lacks those entries.
        """
        totals: list[float] = []
        firsts: dict[int, float] = {}
        for ids, label in zip(continuations, labels, strict=True):
            answer = self.client.complete({**self.extra_body, "prompt": prompt + ids, "max_tokens": 1, "echo": True,
                                           "logprobs": 1, "temperature": 0.0})
            entries = (answer["choice"].get("logprobs") or {}).get("token_logprobs")
            if not isinstance(entries, list) or len(entries) < len(prompt) + len(ids):
                raise ServerCallError(f"label {label!r}: the server's answer has no echoed token_logprobs "
                                      "for the label's tokens")
            read = entries[len(prompt): len(prompt) + len(ids)]
            if not all(isinstance(v, (int, float)) for v in read):
                raise ServerCallError(f"label {label!r}: the echoed token_logprobs of its tokens are not numbers")
            totals.append(math.fsum(read))
            firsts.setdefault(ids[0], float(read[0]))
        return tuple(totals), list(firsts.values())

    # ------------------------------------------------------------------ generation
    def _constraint(self, regex: str) -> dict[str, Any] | str:
        """The completions fields that constrain decoding to ``regex``, or an error."""
        if regex == FREE_TEXT_REGEX:
            return {}
        if self.client.flavor() == "vllm":
            return {"structured_outputs": {"regex": regex}}
        if regex in GBNF_OF:
            return {"grammar": GBNF_OF[regex]}
        return ("infrastructure: a llama.cpp server constrains decoding with GBNF grammars, and this request's "
                "pattern has none here; use a vLLM server or an in-process backend")

    def generate(self, requests: Sequence[GenerateRequest]) -> list[Generation]:
        """Constrained generations for every request; see :class:`~.base.Engine` and the module docstring."""
        start = time.perf_counter()
        plans: list[tuple[str, dict[str, Any]] | str] = []
        for request in requests:
            text, error = self._sent_text(request.prefix, request.suffix)
            if error is not None:
                plans.append(error)
                continue
            try:
                constraint = self._constraint(request.regex)
            except ServerCallError as exc:
                constraint = f"infrastructure: {exc}"
            plans.append(constraint if isinstance(constraint, str) else (text, constraint))

        def one(request: GenerateRequest, text: str, constraint: dict[str, Any]) -> dict[str, Any]:
            body: dict[str, Any] = {**self.extra_body, "prompt": text, "max_tokens": request.max_new_tokens,
                                    "temperature": self.temperature, **constraint}
            if self.seed is not None:
                body["seed"] = self.seed
            if self.top_p is not None:
                body["top_p"] = self.top_p
            return self.client.complete(body)

        runnable = [i for i, plan in enumerate(plans) if not isinstance(plan, str)]
        answers = self._parallel([lambda i=i: one(requests[i], *plans[i]) for i in runnable])  # type: ignore[misc]
        share = (time.perf_counter() - start) / max(len(runnable), 1)
        results: list[Generation] = [Generation("", error=plan, cost_usd=None) if isinstance(plan, str)
                                     else Generation("", error="unknown: not run") for plan in plans]
        for index, answer in zip(runnable, answers, strict=True):
            if isinstance(answer, ServerCallError):
                results[index] = Generation("", error=f"infrastructure: {answer}", seconds=share, cost_usd=None)
                continue
            raw = answer["choice"].get("text")
            if not isinstance(raw, str):
                results[index] = Generation("", error="infrastructure: the server answered without text",
                                            seconds=share, cost_usd=None)
                continue
            cut = answer["choice"].get("finish_reason") == "length"
            if requests[index].pattern is None:
                body, truncated = split_string_body(raw)
            else:
                body, truncated = raw, cut
            usage = answer["usage"]
            results[index] = Generation(
                body, truncated=truncated,
                usage=TokenUsage.of(prompt_tokens=int(usage.get("prompt_tokens") or 0),
                                    completion_tokens=int(usage.get("completion_tokens") or 0)),
                seconds=share, cost_usd=None)
        return results


def load_server(api_base: str, tokenizer: Any, *, model_id: str, api_key: str | None = None,
                headers: dict[str, str] | None = None, timeout: float | None = None, temperature: float = 0.0,
                top_p: float | None = None, seed: int | None = None, prompt_format: PromptFormat = "auto",
                max_parallel: int = DEFAULT_MAX_PARALLEL, extra_body: dict[str, Any] | None = None) -> ServerEngine:
    """A :class:`ServerEngine` for the server at ``api_base`` (nothing is contacted yet).

    Parameters are those of :class:`ServerClient` and :class:`ServerEngine`.

    Raises
    ------
    autorubric_local.core.errors.InputError
        ``api_base`` is not an ``http://`` or ``https://`` URL.
    """
    from autorubric_local.core.errors import InputError

    if not api_base.startswith(("http://", "https://")):
        raise InputError(f"LLMConfig.api_base must be the server's http(s) URL such as 'http://127.0.0.1:8080/v1', "
                         f"got {api_base!r}")
    client = ServerClient(api_base, api_key=api_key, headers=headers, timeout=timeout)
    return ServerEngine(client, tokenizer, model_id=model_id, temperature=temperature, top_p=top_p, seed=seed,
                        prompt_format=prompt_format, max_parallel=max_parallel, extra_body=extra_body)
