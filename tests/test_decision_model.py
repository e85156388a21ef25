"""Decision-model judges (issue 53, confidence cascades: AutoRubric's ``DecisionModelConfig``).

The judge is tested against a loopback System One server (``http.server`` on 127.0.0.1, a free
port, in a thread) that reads what TypeSafe's SDK sends (``POST /v1/systemone``: JSON with
``state``, ``model`` and ``questions``) and answers from a script; verdicts and probabilities
are hand-computed from those answers."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from autorubric_local.core.errors import InputError
from autorubric_local.core.types import Criterion, CriterionOption, CriterionVerdict
from autorubric_local.judges.decision import (
    DecisionModelConfig,
    DecisionModelJudge,
    decision_outcome,
    decision_questions,
    selection_confidence,
)

Reply = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]

BINARY = Criterion(name="cites", weight=10.0, requirement="Cites a source for every claim.")
GRADED = Criterion(name="clarity", weight=5.0, requirement="How clear is the answer?",
                   options=[CriterionOption(label="poor", value=0.0), CriterionOption(label="ok", value=0.5),
                            CriterionOption(label="good", value=1.0)])


class LoopbackSystemOne:
    """A System One endpoint on 127.0.0.1: records each request (path, headers, JSON body) and
    answers with ``reply(body) -> (status, json)``."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding"):
                    status, payload = 415, {"error": "compressed bodies are not read here"}
                else:
                    body = json.loads(raw)
                    owner.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    status, payload = owner.reply(body) if self.path == "/v1/systemone" else (404, {})
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def answers(by_id: dict[str, dict[str, Any]], input_tokens: int = 120) -> Reply:
    def reply(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 200, {"model": body["model"], "usage": {"input_tokens": input_tokens, "output_tokens": 0},
                     "answers": by_id}
    return reply


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Reply], LoopbackSystemOne]]:
    pytest.importorskip("typesafe_sdk")
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    servers: list[LoopbackSystemOne] = []

    def start(reply: Reply) -> LoopbackSystemOne:
        servers.append(LoopbackSystemOne(reply))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def judge_at(server: LoopbackSystemOne, **settings: Any) -> DecisionModelJudge:
    settings = {"max_retries": 1, "timeout": 5.0, **settings}
    return DecisionModelJudge(DecisionModelConfig("jev-test", api_key="sk-test", api_base=server.url, **settings))


# ----------------------------------------------------------------------------- grading


def test_one_request_for_the_rubric_gives_verdicts_and_probabilities_from_the_answers(serve: Any) -> None:
    server = serve(answers({
        "c0": {"type": "noul", "noul": 0.8},
        "c1": {"type": "choice", "choice": "ok", "confidence": 0.55,
               "probabilities": {"poor": 0.1, "ok": 0.7, "good": 0.2}},
    }))
    with judge_at(server, input_cost_per_token=1e-6) as judge:
        result = judge.grade_item([BINARY, GRADED], "Paris is in France [1].", query="Where is Paris?")

    assert len(server.requests) == 1  # one request for the whole rubric
    sent = server.requests[0]
    assert sent["headers"]["Authorization"] == "Bearer sk-test"
    assert sent["body"]["model"] == "jev-test"
    assert sent["body"]["state"] == {"submission": "Paris is in France [1].", "prompt": "Where is Paris?"}
    questions = sent["body"]["questions"]
    assert list(questions) == ["c0", "c1"]
    assert questions["c0"]["type"] == "noul" and BINARY.requirement in questions["c0"]["instructions"]
    assert questions["c1"] == {"type": "choice", "instructions": GRADED.requirement,
                               "criteria": {"poor": None, "ok": None, "good": None}}

    binary, graded = result.outcomes
    assert binary.verdict is CriterionVerdict.MET and binary.error is None
    assert binary.probabilities == pytest.approx({"MET": 0.8, "UNMET": 0.2})
    assert binary.confidence == pytest.approx(0.6)  # (2 * 0.8 - 1) / (2 - 1)
    assert graded.verdict is None and graded.selected_index == 1
    assert graded.probabilities == {"0": 0.1, "1": 0.7, "2": 0.2}
    assert graded.confidence == pytest.approx(0.55)  # (3 * 0.7 - 1) / (3 - 1)
    assert result.model == "jev-test" and result.input_tokens == 120
    assert result.cost_usd == pytest.approx(120e-6)


def test_a_score_answer_comes_back_through_the_sdk_by_level(serve: Any) -> None:
    server = serve(answers({"c0": {"type": "score", "score": 0.4, "confidence": 0.3,
                                   "legend": {"0": "poor", "1": "ok", "2": "good"},
                                   "probabilities": {"0": 0.6, "1": 0.4, "2": 0.0}}}))
    (outcome,) = judge_at(server, ordinal_framing="score").grade_item([GRADED], "text").outcomes
    assert server.requests[0]["body"]["questions"]["c0"]["criteria"] == ["poor", "ok", "good"]
    assert outcome.selected_index == 0 and outcome.probabilities == {"0": 0.6, "1": 0.4, "2": 0.0}
    assert outcome.confidence == pytest.approx((3 * 0.6 - 1) / 2)


@pytest.mark.parametrize(("status", "category"), [(500, "infrastructure"), (400, "parse")])
def test_a_server_error_is_an_error_on_every_criterion_never_a_verdict(serve: Any, status: int, category: str) -> None:
    server = serve(lambda body: (status, {"error": {"message": "boom"}}))
    result = judge_at(server).grade_item([BINARY, GRADED], "text")
    assert len(server.requests) == 1  # max_retries=1: one attempt
    for outcome in result.outcomes:
        assert outcome.error is not None and outcome.error.startswith(f"{category}: ")
        assert outcome.verdict is None and outcome.selected_index is None and outcome.probabilities == {}
    assert result.model is None and result.cost_usd is None


def test_a_server_error_is_retried_within_max_retries(serve: Any) -> None:
    ok = answers({"c0": {"type": "noul", "noul": 0.9}})
    server = serve(lambda body: (503, {}) if len(server.requests) == 1 else ok(body))
    result = judge_at(server, max_retries=2).grade_item([BINARY], "text")
    assert len(server.requests) == 2
    assert result.outcomes[0].verdict is CriterionVerdict.MET


def test_the_response_cache_answers_a_request_sent_before_and_keeps_no_failure(serve: Any, tmp_path: Any) -> None:
    """``cache_enabled``: a request sent again is answered from the cache (no request, the same
    verdicts, tokens repeated, cost 0); another namespace or state is sent; a failure is not kept."""
    ok = answers({"c0": {"type": "noul", "noul": 0.8}})
    fail_next = []
    server = serve(lambda body: (500, {}) if fail_next else ok(body))
    settings = {"cache_enabled": True, "cache_dir": str(tmp_path / "cache"), "input_cost_per_token": 1e-6}
    first = judge_at(server, **settings).grade_item([BINARY], "text")
    again = judge_at(server, **settings).grade_item([BINARY], "text")  # a new judge: the cache is on disk
    assert len(server.requests) == 1
    assert again.outcomes == first.outcomes and again.input_tokens == 120
    assert first.cost_usd == pytest.approx(120e-6) and again.cost_usd == 0.0
    other = DecisionModelJudge(DecisionModelConfig("jev-test", api_key="sk-test", api_base=server.url, max_retries=1,
                                                   timeout=5.0, **settings), cache_namespace="another-judge")
    other.grade_item([BINARY], "text")
    assert len(server.requests) == 2  # judges keep their own answers
    fail_next.append(True)
    failed = judge_at(server, **settings).grade_item([BINARY], "new text")
    fail_next.clear()
    retried = judge_at(server, **settings).grade_item([BINARY], "new text")
    assert failed.outcomes[0].error is not None and retried.outcomes[0].verdict is CriterionVerdict.MET
    assert len(server.requests) == 4  # the failure was sent again, not served


def test_an_unusable_answer_fails_only_its_own_criterion(serve: Any) -> None:
    server = serve(answers({
        "c0": {"type": "noul", "noul": 0.3},
        "c1": {"type": "choice", "choice": "excellent", "confidence": 0.9,
               "probabilities": {"poor": 0.0, "ok": 0.1, "good": 0.9}},
    }))
    binary, graded = judge_at(server).grade_item([BINARY, GRADED], "text").outcomes
    assert binary.verdict is CriterionVerdict.UNMET and binary.probabilities == pytest.approx({"MET": 0.3, "UNMET": 0.7})
    assert graded.error is not None and graded.error.startswith("parse: ") and "excellent" in graded.error
    assert graded.selected_index is None


# ----------------------------------------------------------------------------- answers (pure)


def test_score_framing_snaps_the_expected_level_half_to_even_and_skips_na() -> None:
    criterion = Criterion(requirement="Depth", options=[
        CriterionOption(label="n/a", na=True), CriterionOption(label="shallow", value=0.0),
        CriterionOption(label="some", value=0.5), CriterionOption(label="deep", value=1.0)])
    config = DecisionModelConfig("m", ordinal_framing="score")
    assert decision_questions([criterion], config)["c0"] == {
        "type": "score", "instructions": "Depth", "criteria": ["shallow", "some", "deep"]}
    answer = {"type": "score", "score": 1.5, "confidence": 0.2, "legend": {},
              "probabilities": {"0": 0.25, "1": 0.0, "2": 0.75}}
    outcome = decision_outcome(criterion, answer, config)
    assert outcome.selected_index == 3  # round(1.5) == 2 -> level 2 -> option 3 (after the NA option)
    assert outcome.probabilities == {"1": 0.25, "2": 0.0, "3": 0.75}  # no NA key: NA was not offered
    assert outcome.confidence == pytest.approx((3 * 0.75 - 1) / 2)


@pytest.mark.parametrize(("weight", "verdict"), [(10.0, CriterionVerdict.UNMET), (-5.0, CriterionVerdict.MET)])
def test_exactly_at_the_threshold_the_verdict_is_the_worst_for_the_weight_sign(weight: float, verdict: Any) -> None:
    criterion = Criterion(requirement="r", weight=weight)
    config = DecisionModelConfig("m", decision_threshold=0.7)
    assert decision_outcome(criterion, {"type": "noul", "noul": 0.7}, config).verdict is verdict
    assert decision_outcome(criterion, {"type": "noul", "noul": 0.71}, config).verdict is CriterionVerdict.MET
    assert decision_outcome(criterion, {"type": "noul", "noul": 0.69}, config).verdict is CriterionVerdict.UNMET


def test_binary_choice_framing_can_abstain() -> None:
    config = DecisionModelConfig("m", binary_framing="choice")
    assert decision_questions([BINARY], config)["c0"]["type"] == "choice"
    answer = {"type": "choice", "choice": "CANNOT_ASSESS", "confidence": 0.4,
              "probabilities": {"MET": 0.2, "UNMET": 0.2, "CANNOT_ASSESS": 0.6}}
    outcome = decision_outcome(BINARY, answer, config)
    assert outcome.verdict is CriterionVerdict.CANNOT_ASSESS and outcome.confidence == pytest.approx(0.4)


@pytest.mark.parametrize("answer", [None, {"type": "choice", "choice": "MET", "probabilities": {}},
                                    {"type": "noul", "noul": 1.5}, {"type": "noul", "noul": True}])
def test_a_missing_or_malformed_answer_is_a_parse_error(answer: Any) -> None:
    outcome = decision_outcome(BINARY, answer, DecisionModelConfig("m"))
    assert outcome.error is not None and outcome.error.startswith("parse: ") and outcome.verdict is None


def test_selection_confidence_is_zero_at_chance_and_one_at_certainty() -> None:
    assert selection_confidence(0.25, 4) == 0.0 and selection_confidence(0.1, 4) == 0.0
    assert selection_confidence(1.0, 3) == 1.0


# ----------------------------------------------------------------------------- the config


def test_the_config_has_autorubrics_fields_and_defaults_and_needs_no_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    import autorubric_local

    monkeypatch.setitem(sys.modules, "typesafe_sdk", None)  # construction must not import it
    config = autorubric_local.DecisionModelConfig("jev-latest")
    assert config == DecisionModelConfig(model="jev-latest")
    assert (config.api_key, config.api_base, config.timeout, config.max_retries, config.max_parallel_requests,
            config.cache_enabled, config.cache_dir, config.cache_ttl, config.extra_headers, config.binary_framing,
            config.ordinal_framing, config.decision_threshold, config.input_cost_per_token) == (
        None, None, 60.0, 3, None, False, ".autorubric_cache", None, {}, "noul_framed", "choice", 0.5, None)
    with pytest.raises(TypeError):
        DecisionModelConfig("m", "key")  # type: ignore[misc]  # every field after model is keyword-only
    assert "sk-secret" not in repr(DecisionModelConfig("m", api_key="sk-secret"))


@pytest.mark.parametrize(("field", "value"), [
    ("timeout", 0), ("timeout", float("inf")), ("max_retries", 0), ("max_retries", 2.0),
    ("max_parallel_requests", 0), ("cache_ttl", -1), ("binary_framing", "yes-no"), ("ordinal_framing", "rank"),
    ("decision_threshold", 1.5), ("decision_threshold", True), ("input_cost_per_token", -1e-6),
    ("api_base", "ftp://host"), ("api_base", "http://host/?q=1"), ("api_base", "http://host\n"),
    ("cache_enabled", "yes"), ("extra_headers", {"X-A": 1}),
])
def test_bad_config_values_are_refused_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(InputError, match=f"DecisionModelConfig.{field}"):
        DecisionModelConfig("m", **{field: value})


def test_an_empty_model_is_refused() -> None:
    with pytest.raises(InputError, match="DecisionModelConfig.model"):
        DecisionModelConfig("  ")


def test_building_a_judge_without_the_sdk_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "typesafe_sdk", None)
    with pytest.raises(InputError, match="pip install typesafe-sdk"):
        DecisionModelJudge(DecisionModelConfig("m", api_key="k"))


def test_a_judge_without_an_api_key_is_refused_when_built(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("typesafe_sdk")
    monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    with pytest.raises(InputError, match="API key"):
        DecisionModelJudge(DecisionModelConfig("m"))
