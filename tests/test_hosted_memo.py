"""Explain mode with a hosted judge costs one call per judgment at any chunk size (issue 32): the
hosted engine keeps every answer of a ``score`` call for the ``generate`` call that asks for its
explanations, however many judgments the call holds. A counting stand-in for the HTTP client
answers; nothing goes over the network."""

from __future__ import annotations

from typing import Any

from autorubric_local.core.types import CriterionJudgment, CriterionVerdict
from autorubric_local.engine.base import GenerateRequest, ScoreRequest
from autorubric_local.engine.hosted.backend import HostedEngine
from autorubric_local.engine.hosted.chat import format_chat
from autorubric_local.engine.hosted_types import GenerateResult


class CountingClient:
    """Answers MET with an explanation naming the submission; counts the calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.config = type("Config", (), {"model": "counting"})()

    async def complete(self, messages: list[dict[str, str]], schema: Any, **_: Any) -> GenerateResult:
        self.calls += 1
        answer = CriterionJudgment(criterion_status=CriterionVerdict.MET, explanation=f"about {messages[-1]['content']}")
        return GenerateResult(content=answer.model_dump_json(), parsed=answer, cost=0.001)


def requests(n: int) -> tuple[list[ScoreRequest], list[GenerateRequest]]:
    """``n`` judgments of distinct submissions: the score request (verdict first) and the request
    for its explanation, as the grader's explain mode sends them."""
    prefixes = [format_chat([{"role": "system", "content": "Judge."}, {"role": "user", "content": f"submission {i}"}])
                for i in range(n)]
    opener = '{"criterion_status": "'
    scores = [ScoreRequest(p, opener, ('MET"', 'UNMET"', 'CANNOT_ASSESS"')) for p in prefixes]
    explains = [GenerateRequest(p, opener + 'MET", "explanation": "', 40) for p in prefixes]
    return scores, explains


def test_explanations_of_more_judgments_than_the_default_memo_cost_no_second_call() -> None:
    client = CountingClient()
    engine = HostedEngine(client, top_logprobs=0)  # type: ignore[arg-type]
    scores, explains = requests(5000)  # more than the 4,096 answers kept by default
    scored = engine.score(scores)
    assert client.calls == 5000 and all(r.error is None for r in scored)
    explained = engine.generate(explains)
    assert client.calls == 5000  # every explanation read from the kept answer
    assert [g.text for g in explained[:2]] == ["about submission 0", "about submission 1"]
    assert all(g.cost_usd == 0.0 for g in explained)


def test_verdicts_after_the_reasoning_of_more_judgments_than_the_default_memo_cost_no_second_call() -> None:
    """Reasoning first (``explanation_first``): the answer that wrote the reasoning gives the
    verdict, for every judgment of a call larger than the default memo."""
    client = CountingClient()
    engine = HostedEngine(client, top_logprobs=0)  # type: ignore[arg-type]
    prefixes = [format_chat([{"role": "system", "content": "Judge."}, {"role": "user", "content": f"submission {i}"}])
                for i in range(5000)]
    reasoning = engine.generate([GenerateRequest(p, '{"explanation": "', 40) for p in prefixes])
    assert client.calls == 5000 and reasoning[1].text == "about submission 1"
    verdicts = engine.score([ScoreRequest(p, f'{{"explanation": "{g.text}", "criterion_status": "',
                                          ('MET"', 'UNMET"', 'CANNOT_ASSESS"')) for p, g in zip(prefixes, reasoning, strict=True)])
    assert client.calls == 5000 and all(v.error is None and v.cost_usd == 0.0 for v in verdicts)
