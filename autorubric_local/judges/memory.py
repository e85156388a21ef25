"""Memory shares of vLLM judges that run side by side in one process.

vLLM reserves a fixed share of the device's memory when an engine is built
(``gpu_memory_utilization``, 0.9 by default on GPU): weights, activations and as much KV cache
as fits. Two engines that each ask for 0.9 cannot both start on one GPU. A grader whose judges
load several vLLM engines therefore splits one budget between them (:func:`vllm_memory_shares`):

- an engine whose ``LLMConfig.gpu_memory_utilization`` is set keeps that share;
- the engines without one split what is left of the budget evenly:
  ``(total - sum of set shares) / n_unset``, rounded down to 1e-4, where ``total`` is vLLM's
  default reservation on the platform (:func:`vllm_memory_total`: 0.9 of a GPU, 0.3 of host
  memory on a CPU build);
- set shares that add up to more than 1.0 (or leave nothing for the unset engines) are an
  :class:`~autorubric_local.core.errors.InputError` naming the judges.

A lone vLLM engine is left as configured (vLLM's default when unset). Judges whose configs
are identical load one engine and count once. Engines are built for the whole run rather than
one model at a time: a report needs every judge's vote for each item, so loading one model at a
time would mean keeping every item's partial (per-judge) results across the whole run; the
shares let the engines coexist instead, and the runner releases them when the run ends.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from autorubric_local.core.errors import InputError
from autorubric_local.judges.config import LLMConfig

GPU_TOTAL = 0.9
"""Budget split between vLLM engines on a GPU: vLLM's own default ``gpu_memory_utilization``."""
CPU_TOTAL = 0.3
"""Budget on a CPU build of vLLM (share of host memory): the single-engine default there
(:data:`autorubric_local.engine.vllm.args.CPU_MEMORY_FRACTION`)."""


ENGINE_FIELDS: tuple[str, ...] = ("model", "device", "dtype", "context_length", "gpu_memory_utilization",
                                  "engine_args", "temperature", "top_p", "seed", "prompt_format")
"""``LLMConfig`` fields that reach a vLLM engine (the key of :func:`~.engines.load_engine`'s cache)."""


def engine_identity(config: LLMConfig) -> str:
    """The :data:`ENGINE_FIELDS` of ``config`` as a JSON string: judges whose configs agree on
    them share one vLLM engine (and one memory share)."""
    fields = config.model_dump(mode="json", include=set(ENGINE_FIELDS))
    fields["temperature"] = config.sampling_temperature  # None samples as 0.0: one engine
    return json.dumps(fields, sort_keys=True)


def is_vllm_judge(config: LLMConfig) -> bool:
    """Whether ``config`` loads an engine that takes a memory share (a backend whose record says
    ``memory_share``: ``backend="vllm"``; no caller-built ``engine``). ``backend="auto"`` never
    picks vLLM unless a preset names it, and is not counted."""
    from autorubric_local.judges.backends.registry import backend_named

    return config.backend != "auto" and config.engine is None and backend_named(config.backend).memory_share


def check_explicit_shares(judges: Sequence[tuple[str, LLMConfig]]) -> None:
    """Refuse vLLM judges whose set ``gpu_memory_utilization`` shares add up to more than 1.0.

    Parameters
    ----------
    judges : sequence of (judge_id, LLMConfig)

    Raises
    ------
    InputError
        Names every judge with a set share, its share and the sum.
    """
    engines = _engines(judges)
    explicit = {key: share for key, (_, share) in engines.items() if share is not None}
    total = sum(explicit.values())
    if total > 1.0 + 1e-9:
        named = ", ".join(f"{'/'.join(engines[key][0])}: {share:g}" for key, share in explicit.items())
        raise InputError(f"vLLM judges' gpu_memory_utilization shares add up to {total:g}, over 1.0 of one "
                         f"device ({named}); lower them so that they fit together")


def vllm_memory_shares(judges: Sequence[tuple[str, LLMConfig]], total: float = GPU_TOTAL) -> dict[str, float]:
    """The ``gpu_memory_utilization`` each vLLM judge loads with (rule in the module docstring).

    Parameters
    ----------
    judges : sequence of (judge_id, LLMConfig)
        Every judge of a grader; those that are not vLLM judges (:func:`is_vllm_judge`) are
        ignored.
    total : float in (0, 1]
        Budget the unset shares split (:func:`vllm_memory_total`).

    Returns
    -------
    dict of str to float
        judge_id -> share in (0, 1], for the vLLM judges whose share was computed (set shares
        are not repeated); empty when fewer than two vLLM engines are loaded.

    Raises
    ------
    InputError
        If set shares add up to more than 1.0 (:func:`check_explicit_shares`), or leave no
        share (<= 0.01) of ``total`` for the judges without one (named in the message).
    """
    check_explicit_shares(judges)
    engines = _engines(judges)
    if len(engines) < 2:
        return {}
    unset = [ids for ids, share in engines.values() if share is None]
    if not unset:
        return {}
    given = sum(share for _, share in engines.values() if share is not None)
    each = math.floor((total - given) / len(unset) * 10_000 + 1e-6) / 10_000  # + 1e-6: 0.3 / 3 is 0.0999...
    if each <= 0.01:
        names = ", ".join("/".join(ids) for ids in unset)
        raise InputError(f"vLLM judges {names} have no gpu_memory_utilization share left: the set shares add up "
                         f"to {given:g} of the {total:g} budget; set their shares explicitly")
    return {judge_id: each for ids in unset for judge_id in ids}


def with_memory_shares(judges: Sequence[tuple[str, LLMConfig]]) -> dict[str, LLMConfig]:
    """Each judge's config as its engine is loaded: the same config, with
    ``gpu_memory_utilization`` set to its :func:`vllm_memory_shares` share (budget
    :func:`vllm_memory_total`) when it has one.

    Parameters
    ----------
    judges : sequence of (judge_id, LLMConfig)

    Returns
    -------
    dict of str to LLMConfig
        judge_id -> config to load, for every judge.

    Raises
    ------
    InputError
        As :func:`vllm_memory_shares`.
    """
    configs = [config for _, config in judges]
    several = sum(is_vllm_judge(config) for config in configs) > 1
    shares = vllm_memory_shares(judges, vllm_memory_total(configs)) if several else {}
    return {judge_id: config.model_copy(update={"gpu_memory_utilization": shares[judge_id]})
            if judge_id in shares else config for judge_id, config in judges}


def vllm_memory_total(configs: Sequence[LLMConfig]) -> float:
    """The budget the vLLM judges of ``configs`` split: :data:`CPU_TOTAL` when they run on
    vLLM's CPU build (``device="cpu"``, or ``"auto"`` with a CPU build installed), else
    :data:`GPU_TOTAL`. Imports ``vllm.platforms`` only for ``device="auto"``."""
    devices = {config.device for config in configs if is_vllm_judge(config)}
    if "cpu" in devices:
        return CPU_TOTAL
    if "cuda" in devices or not devices:
        return GPU_TOTAL
    return CPU_TOTAL if _vllm_platform_is_cpu() else GPU_TOTAL


def _vllm_platform_is_cpu() -> bool:
    try:
        from vllm.platforms import current_platform
    except ImportError:  # not installed: loading will say so; the budget does not matter
        return False
    return bool(current_platform.is_cpu())


def _engines(judges: Sequence[tuple[str, LLMConfig]]) -> dict[str, tuple[list[str], float | None]]:
    """vLLM engines of ``judges``: identity -> (judge ids, set share or None)."""
    engines: dict[str, tuple[list[str], Any]] = {}
    for judge_id, config in judges:
        if not is_vllm_judge(config):
            continue
        key = engine_identity(config)
        engines.setdefault(key, ([], config.gpu_memory_utilization))[0].append(judge_id)
    return engines
