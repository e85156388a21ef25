"""Which path a transformers engine scores on, and why it left a faster one.

The transformers engine has two optimised paths over its plain one (:mod:`.plain`): the packed
token trie (4-D masks and position ids, :mod:`.attention`) and batched passes (many groups'
rows in one forward pass with boolean ``logits_to_keep``, :mod:`.batched`). Some models or
transformers versions refuse those inputs; the engine then falls back, and says so:

- Only an exception raised **by the model's forward** on an optimised path's inputs
  (:func:`call_model`, :class:`PathUnsupported`) is a reason to fall back. An exception in our
  own code around the call (packing, masks, gathering) is a bug and propagates.
- Out of memory is memory, not "unsupported" (:func:`is_out_of_memory`): batched passes are
  retried with half the padded tokens a pass, down to :data:`MIN_BATCH_TOKENS`, then one group
  at a time.
- Every fallback is kept in the engine's ``fallbacks`` (a list of reasons) and recorded with the
  run's judges (``judges_json``), so a run that took a slower path says so.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

MIN_BATCH_TOKENS = 1024
"""Fewest padded tokens a batched pass is shrunk to after out-of-memory; below it, one group at a time."""

_REFUSALS = (RuntimeError, TypeError, ValueError, AttributeError, IndexError)


class PathUnsupported(RuntimeError):
    """The model's forward raised on an optimised path's inputs.

    Attributes
    ----------
    path : str
        ``"packed"`` or ``"batched"``.
    reason : str
        ``"<path> path failed: <exception type>: <message>"`` (at most 300 characters).
    """

    def __init__(self, path: str, cause: BaseException) -> None:
        self.path = path
        self.reason = f"{path} path failed: {type(cause).__name__}: {cause}"[:300]
        super().__init__(self.reason)


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is an allocation failure: ``torch.OutOfMemoryError`` (an accelerator), or
    the CPU allocator's ``RuntimeError`` ("DefaultCPUAllocator: can't allocate memory")."""
    import torch

    out_of_memory = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError  # torch < 2.5
    return isinstance(exc, out_of_memory) or (
        isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc))


@functools.lru_cache(maxsize=None)
def _cache_keyword(model_class: type) -> str:
    """The keyword a model class's ``forward`` takes its key/value cache by: ``cache`` from the
    transformers release that renamed it (5.24 warns that ``past_key_values`` "is deprecated and
    will be removed in version 5.40.0"), ``past_key_values`` before (5.19, in the vLLM venv)."""
    return "cache" if "cache" in inspect.signature(model_class.forward).parameters else "past_key_values"


def forward(model: Any, **inputs: Any) -> Any:
    """``model(**inputs)`` with ``past_key_values`` passed by the keyword the installed
    transformers takes (:func:`_cache_keyword`), so no deprecation warning reaches the user."""
    if "past_key_values" in inputs and _cache_keyword(type(model)) == "cache":
        inputs["cache"] = inputs.pop("past_key_values")
    return model(**inputs)


def output_cache(output: Any) -> Any:
    """A forward output's key/value cache (``cache`` where the output has it, else ``past_key_values``)."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


def call_model(model: Any, path: str, **inputs: Any) -> Any:
    """``model(**inputs)`` on an optimised ``path``; a refusal by the model becomes
    :class:`PathUnsupported`, out-of-memory propagates as it is.

    Raises
    ------
    PathUnsupported
        The forward raised RuntimeError, TypeError, ValueError, AttributeError or IndexError
        (other than out-of-memory).
    """
    try:
        return forward(model, **inputs)
    except _REFUSALS as exc:
        if is_out_of_memory(exc):
            raise
        raise PathUnsupported(path, exc) from exc


class PathFallbacks:
    """Mixin of :class:`~.backend.TransformersEngine`: runs its optimised paths and
    falls back as the module docstring says. Needs ``model_id``, ``attention`` (an
    :class:`~.attention.AttentionPlan`), ``max_batch_tokens`` and ``model``."""

    model: Any
    model_id: str
    attention: Any
    max_batch_tokens: int
    fallbacks: list[str]
    _packed_proven: bool
    _batched_proven: bool

    def _fall_back(self, reason: str) -> None:
        logger.warning("%s: %s", self.model_id, reason)
        self.fallbacks.append(reason)

    def _packed_or_plain(self, packed: Callable[[], list[Any]], plain: Callable[[], list[Any]]) -> list[Any]:
        """Run ``packed`` where the plan allows it, else ``plain``.

        If the model refuses the very first packed pass (a model whose cache or forward does not
        take the trie's masks, such as a state-space model its config did not reveal), the engine
        switches to the plain path for good, records why, and reruns the work plainly. Once a
        packed pass has succeeded, a refusal is that item's error, not a reason to switch.
        """
        from autorubric_local.engine.transformers.attention import plan_attention

        if not self.attention.packed:
            return plain()
        if self._packed_proven:
            return packed()
        try:
            results = packed()
        except PathUnsupported as exc:
            self._fall_back(f"{exc.reason}; using the plain path")
            self.attention = plan_attention(self.model, force_plain=exc.reason)
            return plain()
        self._packed_proven = True
        return results

    def _batched_or_per_group(self, batched: Callable[[], list[Any]], per_group: Callable[[], list[Any]]) -> list[Any]:
        """Run ``batched``; fall back to ``per_group`` if the model refuses the first batched pass
        (a transformers without boolean ``logits_to_keep``) or the packed path itself; halve
        ``max_batch_tokens`` and retry after out-of-memory (one group at a time below
        :data:`MIN_BATCH_TOKENS`). Each change is recorded in ``fallbacks``."""
        while True:
            try:
                results = batched()
            except PathUnsupported as exc:
                if self._batched_proven and exc.path == "batched":
                    raise
                if exc.path == "packed":  # the trie's masks refused: no batching either
                    return self._packed_or_plain(lambda refused=exc: _raise(refused), per_group)
                self._fall_back(f"{exc.reason}; scoring one prefix group at a time")
                self.max_batch_tokens = 0
                return per_group()
            except _REFUSALS as exc:
                if not is_out_of_memory(exc):
                    raise
                halved = self.max_batch_tokens // 2
                if halved < MIN_BATCH_TOKENS:
                    self._fall_back(f"out of memory at {self.max_batch_tokens} batch tokens; "
                                    "scoring one prefix group at a time")
                    self.max_batch_tokens = 0
                    return per_group()
                self._fall_back(f"out of memory at {self.max_batch_tokens} batch tokens; now {halved}")
                self.max_batch_tokens = halved
                continue
            self._batched_proven = True
            return results


def _raise(exc: BaseException) -> list[Any]:
    raise exc
