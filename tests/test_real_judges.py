"""Both real judge families (SmolLM2-135M: GPT-2-style BPE, full attention, chat template;
Gemma 3 270M: SentencePiece-style BPE, sliding-window layers, completion prompts) score and
decode exactly what one plain forward pass over the jointly tokenized full prompt gives.

The reference here is independent of the engine: the tokenizer's own encoding of the whole
prompt text (markers removed), the label's continuation tokens, and the model called with its
own masks and no cache. Slow: loads both models on CPU.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from autorubric_local.core.types import Criterion, CriterionOption
from autorubric_local.engine import GenerateRequest, ScoreRequest
from autorubric_local.engine.transformers.attention import AttentionPlan
from autorubric_local.engine.constrained import (
    JSON_STRING_BODY_REGEX,
    RegexGrammar,
    split_string_body,
)
from autorubric_local.engine.transformers.backend import from_transformers
from autorubric_local.engine.transformers.paths import forward, output_cache
from autorubric_local.engine.user_text import mark, plain
from autorubric_local.graders.prompts import (
    BINARY_LABELS,
    EXPLANATION_OPENER,
    criterion_text,
    labels_for,
    render_item,
    verdict_opener,
)

pytestmark = pytest.mark.slow
USES_ALL_CORES = True  # torch on every core in this module: tests/conftest.py _torch_threads

TOL = 1e-4  # max |log-probability difference|, float32
JUDGES = ["smollm2_engine", "gemma_engine"]
BINARY = tuple(f'{label}"' for label in BINARY_LABELS)
SHORT = "Lithium-ion cells move lithium ions from the anode to the cathode while discharging."
# ~1,100 tokens: longer than Gemma 3's 512-token sliding window.
LONG = " ".join(
    f"Paragraph {i}: the electrolyte carries ions; the separator keeps electrodes apart; capacity fades "
    f"with cycles ({i * 7 % 13} percent after {i * 50} cycles)." for i in range(40)
)
ORDINAL = Criterion(
    weight=1.0,
    requirement="How well does the answer explain electrode roles?",
    options=[CriterionOption(label=t, value=v) for t, v in (("Not at all", 0.0), ("Partly", 0.5), ("Fully", 1.0))],
)
BINARY_CRITERIA = [
    Criterion(weight=1.0, requirement="Mentions lithium ions."),
    Criterion(weight=-1.0, requirement="Contains factual errors."),
]


@pytest.fixture(scope="module", params=JUDGES)
def judge(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


def prefix_of(engine: Any, submission: str) -> tuple[str, str]:
    parts = render_item(engine.format_chat, submission, query="How does a battery work?", reference_submission=None)
    return parts.prefix, parts.turn_switch


def suffix_of(turn_switch: str, criterion: Criterion, order: list[int] | None = None) -> str:
    return criterion_text(criterion, order) + turn_switch + verdict_opener(criterion)


def workload(engine: Any) -> list[ScoreRequest]:
    """Two prefixes interleaved (one past the sliding window), binary criteria, the 3 cyclic
    rotations of a multi-choice criterion, a duplicate, and a suffix nested in another."""
    short, switch = prefix_of(engine, SHORT)
    long, _ = prefix_of(engine, LONG)
    rotations = [[(k + shift) % 3 for k in range(3)] for shift in range(3)]
    choice = labels_for(ORDINAL, reasoning_first=False)
    nested = criterion_text(BINARY_CRITERIA[0]) + switch  # the start of the binary suffix
    requests = [
        *(ScoreRequest(short, suffix_of(switch, c), BINARY) for c in BINARY_CRITERIA),
        *(ScoreRequest(long, suffix_of(switch, ORDINAL, order), choice) for order in rotations),
        ScoreRequest(short, suffix_of(switch, ORDINAL, rotations[1]), choice),
        ScoreRequest(long, suffix_of(switch, BINARY_CRITERIA[1]), BINARY),
        ScoreRequest(short, suffix_of(switch, BINARY_CRITERIA[0]), BINARY),  # duplicate
        ScoreRequest(short, nested, ('{"criterion_status": "MET"', "{")),  # nested suffix
    ]
    return requests


def reference_ids(tokenizer: Any, prompt: str, label: str) -> tuple[list[int], list[int]]:
    """The tokenizer's encoding of the whole prompt and the label's continuation tokens."""
    prompt_ids = tokenizer.encode(plain(prompt), add_special_tokens=False)
    joint = tokenizer.encode(plain(prompt) + label, add_special_tokens=False)
    if joint[: len(prompt_ids)] == prompt_ids and len(joint) > len(prompt_ids):
        return prompt_ids, joint[len(prompt_ids) :]
    return prompt_ids, tokenizer.encode(label, add_special_tokens=False)


def reference_scores(engine: Any, request: ScoreRequest) -> tuple[tuple[float, ...], float]:
    """Label log-probabilities and off-label mass from plain full-sequence forwards."""
    logprobs = []
    first: dict[int, float] = {}
    for label in request.labels:
        prompt_ids, label_ids = reference_ids(engine.tokenizer, request.prefix + request.suffix, label)
        # logits_to_keep: the model's own option to compute the LM head only at the last
        # len(label_ids) positions, the ones that predict the label (Gemma's 262k-token head over
        # every prompt position cost more than the rest of the forward). Same masks, no cache.
        with torch.inference_mode():
            out = engine.model(input_ids=torch.tensor([prompt_ids + label_ids[:-1]]),
                               logits_to_keep=len(label_ids)).logits[0].float().log_softmax(-1)
        assert out.shape[0] == len(label_ids)
        logprobs.append(sum(out[j, t].item() for j, t in enumerate(label_ids)))
        first[label_ids[0]] = out[0, label_ids[0]].item()
    return tuple(logprobs), 1.0 - sum(math.exp(v) for v in first.values())


@pytest.fixture(scope="module")
def scored(judge: Any) -> tuple[Any, list[ScoreRequest], list[Any], list[Any]]:
    requests = workload(judge)
    return judge, requests, judge.score(requests), [reference_scores(judge, r) for r in requests]


def test_packed_scoring_equals_plain_full_prompt_forward(scored: Any) -> None:
    engine, requests, results, references = scored
    assert engine.attention.packed  # the packed trie really ran
    for request, result, (logprobs, off_mass) in zip(requests, results, references):
        assert result.error is None
        assert max(abs(a - b) for a, b in zip(result.logprobs, logprobs)) <= TOL
        assert result.off_label_mass is not None and abs(result.off_label_mass - off_mass) <= TOL
    assert max(abs(a - b) for a, b in zip(results[7].logprobs, results[0].logprobs)) <= TOL  # duplicate


@pytest.mark.fast
def test_short_prompt_scoring_equals_plain_forward(judge: Any) -> None:
    """The fast tier's real-weights check, one per family (docs/contributing.md): the packed
    scoring of one short prompt, a binary criterion and a cyclic rotation of a multi-choice one
    sharing it, equals plain full-prompt forwards. A subset of the test above, without its long
    prompt and with 6 reference forwards instead of 26, so it runs in seconds, not minutes."""
    short = prefix_of(judge, SHORT)[0]
    requests = [r for r in workload(judge) if r.prefix == short][:3:2]
    assert [r.labels for r in requests] == [BINARY, labels_for(ORDINAL, reasoning_first=False)]
    for request, result in zip(requests, judge.score(requests), strict=True):
        logprobs, off_mass = reference_scores(judge, request)
        assert result.error is None
        assert max(abs(a - b) for a, b in zip(result.logprobs, logprobs, strict=True)) <= TOL
        assert result.off_label_mass is not None and abs(result.off_label_mass - off_mass) <= TOL


def test_long_prompt_really_passes_the_sliding_window(scored: Any) -> None:
    engine, requests, _, _ = scored
    n = len(engine.prompt_tokens(requests[2].prefix, requests[2].suffix))
    assert n > 600
    if engine.attention.window is not None:
        assert n > engine.attention.window + 100


def test_ignoring_the_sliding_window_would_be_caught(gemma_engine: Any) -> None:
    """The equivalence check is sensitive: masks without the window give other numbers on Gemma."""
    requests = workload(gemma_engine)[2:3]
    wrong = from_transformers(gemma_engine.model, gemma_engine.tokenizer, model_id="gemma-window-ignored")
    assert wrong.attention.window == 512
    wrong.attention = AttentionPlan(True, None, ("full_attention",), "window ignored (wrong on purpose)")
    bad = wrong.score(requests)[0]
    reference, _ = reference_scores(gemma_engine, requests[0])
    assert max(abs(a - b) for a, b in zip(bad.logprobs, reference)) > 0.1


def test_plain_path_equals_the_reference(scored: Any) -> None:
    judge, requests, _, references = scored
    plain_engine = from_transformers(judge.model, judge.tokenizer, model_id="plain", attention="plain",
                                     prompt_format=judge.prompt_format)
    assert plain_engine.attention_path.startswith("plain")
    for result, (logprobs, off_mass) in zip(plain_engine.score(requests[:3]), references):
        assert max(abs(a - b) for a, b in zip(result.logprobs, logprobs)) <= TOL
        assert result.off_label_mass is not None and abs(result.off_label_mass - off_mass) <= TOL


def reference_decode(engine: Any, grammar: Any, request: GenerateRequest) -> list[int]:
    """Greedy grammar-constrained decoding of the joint prompt, one sequence, the model's own cache."""
    ids = engine.tokenizer.encode(plain(request.prefix + request.suffix), add_special_tokens=False)
    guide = grammar.new_guide()
    out: list[int] = []
    with torch.inference_mode():
        step = engine.model(input_ids=torch.tensor([ids]), use_cache=True, logits_to_keep=1)
        while len(out) < request.max_new_tokens and not guide.is_finished():
            out.append(grammar.choose(guide, step.logits[0, -1]))
            # forward passes the cache by the keyword this transformers takes (no deprecation warning)
            step = forward(engine.model, input_ids=torch.tensor([[out[-1]]]), past_key_values=output_cache(step),
                           use_cache=True)
    return out


def test_branch_decoding_equals_plain_greedy_decoding(judge: Any) -> None:
    short, switch = prefix_of(judge, SHORT)
    long, _ = prefix_of(judge, LONG)
    opener = criterion_text(BINARY_CRITERIA[0]) + switch + EXPLANATION_OPENER
    requests = [
        GenerateRequest(short, opener, 12),
        GenerateRequest(long, opener, 12),
        GenerateRequest(short, criterion_text(ORDINAL) + switch + EXPLANATION_OPENER, 12),
    ]
    grammar = RegexGrammar.from_transformers(judge.model, judge.tokenizer, JSON_STRING_BODY_REGEX)
    generations = judge.generate(requests)
    for request, generation in zip(requests, generations):
        assert generation.error is None
        expected = split_string_body(judge.tokenizer.decode(reference_decode(judge, grammar, request)))
        assert (generation.text, generation.truncated) == expected


# ---------------------------------------------------------------------------- tokenization
SEAM_TEXT = st.lists(
    st.sampled_from([" ", "  ", "\n", "\n\n", "\t", "\u00a0", "\u3000", "a", "Z", "é", "e\u0301", "中", "😀",
                     "▁", ":", '"', "{", "<", ">", "1", "##", "\r\n"]),
    max_size=12,
).map("".join)
LABELS = st.sampled_from(['MET"', 'UNMET"', 'CANNOT_ASSESS"', "1,", "12}", " x", "é", "\n"])


@given(head=SEAM_TEXT, data=SEAM_TEXT, tail=SEAM_TEXT, label=LABELS)
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_prompt_tokens_are_the_tokenizers_encoding_of_the_whole_prompt(
    judge: Any, head: str, data: str, tail: str, label: str
) -> None:
    """Random unicode and whitespace at every seam (template/data, prefix/suffix, prompt/label):
    the prompt is encoded as one text, and prompt + label tokens spell exactly prompt + label."""
    prefix = "Grade this.\n" + head + mark(data)
    suffix = tail + '{"criterion_status": "'
    prompt_ids = judge.prompt_tokens(prefix, suffix)
    assert prompt_ids == judge.tokenizer.encode(plain(prefix + suffix), add_special_tokens=False)
    label_ids = judge.label_tokens(prefix + suffix, prompt_ids, label)
    expected_prompt, expected_label = reference_ids(judge.tokenizer, prefix + suffix, label)
    assert (prompt_ids, label_ids) == (expected_prompt, expected_label)
    decode = lambda ids: judge.tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)  # noqa: E731
    assert decode(prompt_ids + label_ids) == decode(prompt_ids) + label


def test_encoding_prefix_and_suffix_apart_would_change_the_tokens(smollm2_engine: Any) -> None:
    """Why prompts are encoded whole: SmolLM2's BPE splits the prefix/suffix boundary of a
    real judge prompt differently from the two halves encoded apart."""
    prefix, switch = prefix_of(smollm2_engine, SHORT)
    suffix = suffix_of(switch, BINARY_CRITERIA[0])
    apart = smollm2_engine.tokens(prefix) + smollm2_engine.tokens(suffix)
    assert smollm2_engine.prompt_tokens(prefix, suffix) != apart
