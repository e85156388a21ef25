"""One fake judge for the tests: a scripted engine inside an ``LLMConfig(model="scripted")``.

Tests import it as ``from fake_judge import fake_judge, fake_grader`` (tests/ is on the path,
as for ``test_metrics_support``). The engine answers from its queues, then from ``policy``;
its ``history`` records every request the grader made.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autorubric_local.engine import ScriptedEngine
from autorubric_local.engine.scripted import ScorePolicy
from autorubric_local.graders import CriterionGrader, JudgeSpec
from autorubric_local.judges.config import LLMConfig


@dataclass(frozen=True)
class FakeJudge:
    """A scripted judge: its ``config`` (the LLMConfig), its ``engine`` and its ``spec``."""

    config: LLMConfig
    engine: ScriptedEngine
    spec: JudgeSpec


def fake_judge(policy: ScorePolicy | None = None, *, engine: Any = None, judge_id: str | None = None,
               weight: float = 1.0, **config: Any) -> FakeJudge:
    """A fake judge answering with ``policy`` (or through a given ``engine``).

    Parameters
    ----------
    policy : callable, optional
        ``policy(request) -> logprobs`` for a new :class:`ScriptedEngine`; ignored when
        ``engine`` is given.
    engine : engine, optional
        An engine already built (a ``ScriptedEngine`` or a test's subclass).
    judge_id : str, optional
        The spec's judge id (default: the engine's ``model_id``).
    weight : float
        The spec's weight.
    **config
        More ``LLMConfig`` fields (``thinking=``, ``explanation_style=``, ...).
    """
    if engine is None:
        engine = ScriptedEngine(policy=policy)
    llm_config = LLMConfig(model="scripted", engine=engine, **config)
    return FakeJudge(llm_config, engine, JudgeSpec(llm_config, judge_id or engine.model_id, weight))


def fake_grader(engine: Any = None, *, policy: ScorePolicy | None = None, config: dict[str, Any] | None = None,
                **grader_kwargs: Any) -> CriterionGrader:
    """``CriterionGrader(LLMConfig(model="scripted", engine=engine, **config), **grader_kwargs)``.

    ``engine`` defaults to a new ``ScriptedEngine(policy=policy)``; ``config`` holds
    ``LLMConfig`` fields, ``grader_kwargs`` the grader's (no seed is set for the caller).
    """
    return CriterionGrader(fake_judge(policy, engine=engine, **(config or {})).config, **grader_kwargs)
