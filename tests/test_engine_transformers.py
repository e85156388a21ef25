"""The transformers engine on a tiny random Llama: batched prefix-shared scoring must equal scoring
every ``prefix + suffix + label`` sequence on its own, and constrained generation must give
JSON string bodies that parse.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Sequence
from typing import Any

import pytest

from autorubric_local.core.types import CriterionJudgment
from autorubric_local.engine import (
    Engine,
    GenerateRequest,
    ScoreRequest,
    from_transformers,
)
from autorubric_local.engine.constrained import (
    JSON_SENTENCE_BODY_REGEX,
    JSON_STRING_BODY_REGEX,
    split_string_body,
)
from autorubric_local.engine.transformers.backend import TransformersEngine
from autorubric_local.graders.prompts import BINARY_LABELS

torch = pytest.importorskip("torch")

TOL = 1e-4
BINARY = tuple(f'{label}"' for label in BINARY_LABELS)
CHOICE4 = ("1,", "2,", "3,", "4,")


def ids(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def reference_logprobs(model: Any, tokenizer: Any, request: ScoreRequest) -> tuple[float, ...]:
    """Score each label by one plain forward pass over tokens(prefix)+tokens(suffix)+tokens(label)."""
    prompt = ids(tokenizer, request.prefix) + ids(tokenizer, request.suffix)
    out = []
    with torch.inference_mode():
        for label in request.labels:
            label_ids = ids(tokenizer, label)
            sequence = prompt + label_ids
            logits = model(input_ids=torch.tensor([sequence])).logits[0].float().log_softmax(-1)
            out.append(
                float(sum(logits[len(prompt) - 1 + j, token].item() for j, token in enumerate(label_ids)))
            )
    return tuple(out)


def softmax(values: Sequence[float]) -> list[float]:
    top = max(values)
    weights = [math.exp(v - top) for v in values]
    return [w / sum(weights) for w in weights]


def max_abs_diff(a: Sequence[float], b: Sequence[float]) -> float:
    assert len(a) == len(b)
    return max(abs(x - y) for x, y in zip(a, b))


def make_prefix(engine: Any, submission: str) -> str:
    return engine.format_chat(
        [
            {"role": "system", "content": "You are a strict, impartial grader."},
            {"role": "user", "content": f"<submission>\n{submission}\n</submission>\n\n"},
        ]
    )


SUBMISSIONS = [
    "NMC cells reach 250-300 Wh/kg.",
    "LFP is cheaper, has no cobalt and lasts 2000-5000 cycles; thermal runaway near 270 C.",
    "Batteries store energy.",
]
CRITERIA = [
    "States NMC energy density",
    "Identifies LFP thermal stability as higher",
    "Incorrectly claims LFP has higher density",
    "Says LFP is cheaper",
]


def make_requests(engine: Any) -> list[ScoreRequest]:
    """3 prefixes x 4 suffixes, binary and 4-option labels, prefixes interleaved."""
    requests = []
    for c, criterion in enumerate(CRITERIA):
        for s, submission in enumerate(SUBMISSIONS):
            prefix = make_prefix(engine, submission)
            if (c + s) % 2 == 0:
                suffix = f"<criterion>{criterion}</criterion><|im_end|>\n<|im_start|>assistant\n" + '{"criterion_status": "'
                labels = BINARY
            else:
                suffix = (
                    f"<criterion>{criterion}\nOptions:\n1. none\n2. some\n3. most\n4. all</criterion>"
                    '<|im_end|>\n<|im_start|>assistant\n{"selected_option": '
                )
                labels = CHOICE4
            requests.append(ScoreRequest(prefix, suffix, labels))
    return requests


@pytest.fixture(scope="module")
def requests(tiny_engine: Any) -> list[ScoreRequest]:
    return make_requests(tiny_engine)


@pytest.fixture(scope="module")
def expected(tiny_model: Any, requests: list[ScoreRequest]) -> list[tuple[float, ...]]:
    return [reference_logprobs(tiny_model.model, tiny_model.tokenizer, r) for r in requests]


# ---------------------------------------------------------------------------- set-up sanity


def test_engine_satisfies_protocol(tiny_engine: Any) -> None:
    assert isinstance(tiny_engine, TransformersEngine)
    assert isinstance(tiny_engine, Engine)
    assert tiny_engine.model_id == "tiny"
    assert tiny_engine.context_length == 512


def test_tiny_tokenizer_makes_multi_token_labels(tiny_model: Any) -> None:
    tokenizer = tiny_model.tokenizer
    assert len(ids(tokenizer, 'CANNOT_ASSESS"')) > 1
    for text in [*BINARY, *CHOICE4, '{"explanation": "', "0123456789"]:
        assert tokenizer.decode(ids(tokenizer, text)) == text


def test_reference_is_sensitive(expected: list[tuple[float, ...]]) -> None:
    """The label distributions are far from uniform and differ between requests, so the
    equivalence tests below could detect a wrong attention mask or position."""
    spreads = [max(lp) - min(lp) for lp in expected]
    assert min(spreads) > 0.1
    assert len({round(lp[0], 3) for lp in expected}) == len(expected)


# ---------------------------------------------------------------------------- equivalence


def test_batched_scoring_equals_single_full_sequence_scoring(
    tiny_engine: Any, requests: list[ScoreRequest], expected: list[tuple[float, ...]]
) -> None:
    results = tiny_engine.score(requests)
    assert len(results) == len(requests)
    # The packed trie ran (no fallback to the plain path after a failed first pass).
    assert tiny_engine.attention.packed and tiny_engine.attention_path == "packed-trie (sdpa; full attention)"
    for request, result, reference in zip(requests, results, expected):
        assert result.error is None
        assert len(result.logprobs) == len(request.labels)
        assert max_abs_diff(result.logprobs, reference) <= TOL
        assert max_abs_diff(result.probabilities, softmax(reference)) <= TOL
        assert math.isclose(sum(result.probabilities), 1.0, abs_tol=1e-9)
        assert all(lp <= 0 for lp in result.logprobs)


@pytest.mark.parametrize("max_packed_tokens", [1, 8, 40])
def test_scoring_in_several_chunks_is_unchanged(
    tiny_model: Any, requests: list[ScoreRequest], expected: list[tuple[float, ...]], max_packed_tokens: int
) -> None:
    """Small packing budgets split trees into many chunks (1: every tree alone, oversize)."""
    engine = from_transformers(
        tiny_model.model, tiny_model.tokenizer, model_id="tiny", max_packed_tokens=max_packed_tokens
    )
    results = engine.score(requests)
    for result, reference in zip(results, expected):
        assert result.error is None
        assert max_abs_diff(result.logprobs, reference) <= TOL


def test_eager_attention_gives_the_same_equivalence(tiny_eager_model: Any, requests: list[ScoreRequest]) -> None:
    model, tokenizer = tiny_eager_model.model, tiny_eager_model.tokenizer
    assert model.config._attn_implementation == "eager"
    engine = from_transformers(model, tokenizer, model_id="tiny-eager", max_packed_tokens=32)
    sample = requests[:6]
    for request, result in zip(sample, engine.score(sample)):
        assert result.error is None
        assert max_abs_diff(result.logprobs, reference_logprobs(model, tokenizer, request)) <= TOL


def test_results_in_input_order_when_prefixes_interleave(
    tiny_engine: Any, requests: list[ScoreRequest], expected: list[tuple[float, ...]]
) -> None:
    # Reverse and rotate so groups of one prefix are scattered differently than before.
    order = list(reversed(range(len(requests))))
    order = order[5:] + order[:5]
    shuffled = [requests[i] for i in order]
    results = tiny_engine.score(shuffled)
    for i, result in zip(order, results):
        assert max_abs_diff(result.logprobs, expected[i]) <= TOL


def test_duplicate_requests_get_identical_scores(tiny_engine: Any, requests: list[ScoreRequest]) -> None:
    results = tiny_engine.score([requests[0], requests[1], requests[0]])
    assert max_abs_diff(results[0].logprobs, results[2].logprobs) <= TOL


def test_usage_counts_prefix_once_as_cache_hits(tiny_engine: Any, tiny_model: Any) -> None:
    prefix = make_prefix(tiny_engine, SUBMISSIONS[0])
    suffixes = ['a {"criterion_status": "', 'bb {"criterion_status": "', 'ccc {"criterion_status": "']
    results = tiny_engine.score([ScoreRequest(prefix, s, BINARY) for s in suffixes])
    n_prefix = len(ids(tiny_model.tokenizer, prefix))
    for position, (suffix, result) in enumerate(zip(suffixes, results)):
        assert result.usage.prompt_tokens == n_prefix + len(ids(tiny_model.tokenizer, suffix))
        assert result.usage.cache_read_input_tokens == (0 if position == 0 else n_prefix)
        assert result.usage.completion_tokens == 0
        assert result.seconds >= 0


OPTIONS = ["none", "some", "most", "all"]
CHOICE_OPENER = '<|im_end|>\n<|im_start|>assistant\n{"selected_option": '


def rotation_suffix(criterion: str, shift: int) -> str:
    options = OPTIONS[shift:] + OPTIONS[:shift]
    listed = "".join(f"\n{i}. {option}" for i, option in enumerate(options, start=1))
    return f"<criterion>\nThis is a criterion: {criterion}\nOptions:{listed}</criterion>{CHOICE_OPENER}"


def shared_start_requests(engine: Any, tokenizer: Any) -> list[ScoreRequest]:
    """One prefix: the 4 rotations of a criterion (long shared starts), a suffix that is the
    token-wise start of another, duplicate suffixes, labels sharing their first tokens, and a
    second prefix interleaved."""
    prefix = make_prefix(engine, SUBMISSIONS[1])
    other = make_prefix(engine, SUBMISSIONS[2])
    rotations = [rotation_suffix(CRITERIA[1], shift) for shift in range(4)]
    short = f"<criterion>\nThis is a criterion: {CRITERIA[1]}\nOptions:\n"
    assert ids(tokenizer, rotations[0])[: len(ids(tokenizer, short))] == ids(tokenizer, short)
    binary = f"<criterion>{CRITERIA[0]}</criterion>" + '<|im_end|>\n<|im_start|>assistant\n{"criterion_status": "'
    sharing_labels = ('CANNOT_ASSESS"', 'CANNOT"', 'MET"', 'UNMET"')
    return [
        *(ScoreRequest(prefix, suffix, CHOICE4) for suffix in rotations),
        ScoreRequest(prefix, short, ("1. ", "2. ", "1. none")),  # runs into the rotations' nodes
        ScoreRequest(other, rotations[2], CHOICE4),
        ScoreRequest(prefix, rotations[1], CHOICE4),  # duplicate of a rotation
        ScoreRequest(prefix, binary, sharing_labels),
        ScoreRequest(prefix, binary, sharing_labels),  # duplicate, labels with shared starts
        ScoreRequest(prefix, rotations[0], ("1,", "2,")),  # same suffix, other labels
    ]


@pytest.mark.parametrize("max_packed_tokens", [1, 24, 2048])
def test_shared_starts_equal_single_full_sequence_scoring(tiny_model: Any, max_packed_tokens: int) -> None:
    """Suffixes and labels that share starts are computed once in the trie; the label
    log-probabilities still equal scoring every full sequence on its own."""
    model, tokenizer = tiny_model.model, tiny_model.tokenizer
    engine = from_transformers(model, tokenizer, model_id="tiny", max_packed_tokens=max_packed_tokens)
    batch = shared_start_requests(engine, tokenizer)
    labels = ids(tokenizer, 'CANNOT_ASSESS"'), ids(tokenizer, 'CANNOT"')
    assert labels[0][0] == labels[1][0]  # the labels really share a start
    results = engine.score(batch)
    assert len(results) == len(batch)
    for request, result in zip(batch, results):
        assert result.error is None
        assert max_abs_diff(result.logprobs, reference_logprobs(model, tokenizer, request)) <= TOL
    # Duplicates give the same numbers; different rotations differ.
    assert max_abs_diff(results[6].logprobs, results[1].logprobs) <= TOL
    assert max_abs_diff(results[7].logprobs, results[8].logprobs) <= TOL
    assert len({round(r.logprobs[0], 4) for r in results[:4]}) == 4


def test_usage_apportions_shared_suffix_nodes(tiny_model: Any) -> None:
    """Computed prompt tokens (prompt - cached) add up to the prefix plus the distinct suffix
    nodes: shared starts are counted once, split among the requests using them."""
    model, tokenizer = tiny_model.model, tiny_model.tokenizer
    engine = from_transformers(model, tokenizer, model_id="tiny")
    prefix = make_prefix(engine, SUBMISSIONS[0])
    suffixes = [rotation_suffix(CRITERIA[0], shift) for shift in range(4)]
    batch = [ScoreRequest(prefix, s, CHOICE4) for s in [*suffixes, suffixes[0]]]
    results = engine.score(batch)
    n_prefix = len(ids(tokenizer, prefix))
    suffix_ids = [ids(tokenizer, r.suffix) for r in batch]
    distinct = {tuple(s[: d + 1]) for s in suffix_ids for d in range(len(s))}
    assert len(distinct) < sum(len(s) for s in suffix_ids)  # there is sharing to account for
    computed = [r.usage.prompt_tokens - r.usage.cache_read_input_tokens for r in results]
    assert sum(computed) == n_prefix + len(distinct)
    for result, ids_ in zip(results, suffix_ids):
        assert result.usage.prompt_tokens == n_prefix + len(ids_)
        assert 0 <= result.usage.cache_read_input_tokens <= result.usage.prompt_tokens
        assert result.seconds > 0
    assert results[0].usage.cache_read_input_tokens < n_prefix  # the first request pays for the prefix
    assert all(r.usage.cache_read_input_tokens >= n_prefix for r in results[1:])
    # Every request pays less than its whole suffix: the shared start is split.
    assert all(c < len(s) for c, s in zip(computed[1:], suffix_ids[1:]))


def test_row_mask_equals_reference_rule(tiny_engine: Any) -> None:
    """The vectorised 4D mask is :func:`may_attend` over the row plus a fully visible prefix."""
    import random

    from autorubric_local.engine.transformers.packing import may_attend, pack_trie

    rng = random.Random(0)
    for _ in range(30):
        trees = [
            (
                [rng.randrange(3) for _ in range(rng.randint(1, 5))],
                [[rng.randrange(3) for _ in range(rng.randint(1, 4))] for _ in range(rng.randint(0, 3))],
            )
            for _ in range(rng.randint(1, 5))
        ]
        prefix_len = rng.randint(0, 4)
        row = pack_trie(prefix_len, trees)
        mask = tiny_engine._row_mask(row)
        n = len(row.token_ids)
        assert tuple(mask.shape) == (1, 1, n, prefix_len + n)
        allowed = (mask[0, 0] == 0).tolist()
        for q in range(n):
            assert all(allowed[q][:prefix_len])
            assert allowed[q][prefix_len:] == [may_attend(row, q, k) for k in range(n)]


def test_empty_workloads(tiny_engine: Any) -> None:
    assert tiny_engine.score([]) == []
    assert tiny_engine.generate([]) == []


# ---------------------------------------------------------------------------- context length


def test_prompt_longer_than_context_is_an_error_for_that_request_only(tiny_model: Any) -> None:
    tokenizer = tiny_model.tokenizer
    short = ScoreRequest("<|im_start|>user\nshort<|im_end|>\n", 'x {"criterion_status": "', BINARY)
    long_prefix = ScoreRequest("<|im_start|>user\n" + "long text " * 40 + "<|im_end|>\n", 'y "', BINARY)
    long_suffix = ScoreRequest(short.prefix, "z " * 60 + '"', BINARY)
    n_short = len(ids(tokenizer, short.prefix)) + len(ids(tokenizer, short.suffix))
    context = n_short + max(len(ids(tokenizer, label)) for label in BINARY) + 4
    assert len(ids(tokenizer, long_prefix.prefix)) > context
    assert len(ids(tokenizer, long_suffix.suffix)) > context
    engine = from_transformers(tokenizer=tokenizer, model=tiny_model.model, model_id="tiny", context_length=context)
    other = ScoreRequest(short.prefix, 'w {"criterion_status": "', BINARY)
    batch = [short, long_prefix, long_suffix, other]
    results = engine.score(batch)
    assert len(results) == 4
    for i in (1, 2):
        assert results[i].error is not None and results[i].error.startswith("infrastructure:")
        assert str(context) in results[i].error
        assert results[i].logprobs == ()
        assert results[i].probabilities == ()
    for i in (0, 3):
        assert results[i].error is None
        reference = reference_logprobs(tiny_model.model, tokenizer, batch[i])
        assert max_abs_diff(results[i].logprobs, reference) <= TOL
    # The usage of the first fitting request carries the prefix (no cache hit there).
    assert results[0].usage.cache_read_input_tokens == 0
    assert results[3].usage.cache_read_input_tokens == len(ids(tokenizer, short.prefix))


def test_generation_longer_than_context_is_an_infrastructure_error(tiny_model: Any) -> None:
    engine = from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="tiny", context_length=40)
    request = GenerateRequest("<|im_start|>user\n" + "word " * 50, '{"explanation": "', max_new_tokens=4)
    short = GenerateRequest("<|im_start|>user\nhi", '{"explanation": "', max_new_tokens=3)
    too_many = GenerateRequest(short.prefix, short.suffix, max_new_tokens=60)  # same prompt, budget overflows
    result, fits, overflows = engine.generate([request, short, too_many])
    assert result.error is not None and result.error.startswith("infrastructure:")
    assert result.text == ""
    assert fits.error is None and 1 <= fits.usage.completion_tokens <= 3
    assert overflows.error is not None and overflows.error.startswith("infrastructure:")


# ---------------------------------------------------------------------------- generation

OPENER = '<|im_end|>\n<|im_start|>assistant\n{"criterion_status": "MET", "explanation": "'


def generate_requests(engine: Any, max_new_tokens: int = 12) -> list[GenerateRequest]:
    """4 requests over 3 prefixes (the first and last share one), interleaved."""
    pairs = [*zip(SUBMISSIONS, CRITERIA), (SUBMISSIONS[0], CRITERIA[3])]
    return [
        GenerateRequest(make_prefix(engine, submission), f"<criterion>{criterion}</criterion>" + OPENER, max_new_tokens)
        for submission, criterion in pairs
    ]


def reference_decode(model: Any, tokenizer: Any, grammar: Any, request: GenerateRequest) -> tuple[list[int], bool]:
    """Greedy grammar-constrained decoding by plain full-sequence forwards (no cache, no packing)."""
    prompt = ids(tokenizer, request.prefix) + ids(tokenizer, request.suffix)
    guide = grammar.new_guide()
    out: list[int] = []
    with torch.inference_mode():
        while len(out) < request.max_new_tokens:
            logits = model(input_ids=torch.tensor([prompt + out])).logits[0, -1]
            out.append(grammar.choose(guide, logits))
            if guide.is_finished():
                break
    return out, guide.is_finished()


@pytest.fixture(scope="module")
def grammar(tiny_model: Any) -> Any:
    from autorubric_local.engine.constrained import RegexGrammar

    return RegexGrammar.from_transformers(tiny_model.model, tiny_model.tokenizer, JSON_STRING_BODY_REGEX)


@pytest.fixture(scope="module")
def generations(tiny_engine: Any) -> list[Any]:
    return tiny_engine.generate(generate_requests(tiny_engine))


@pytest.fixture(scope="module")
def reference_generations(tiny_model: Any, tiny_engine: Any, grammar: Any) -> list[tuple[list[int], bool]]:
    return [
        reference_decode(tiny_model.model, tiny_model.tokenizer, grammar, r) for r in generate_requests(tiny_engine)
    ]


def test_generated_bodies_assemble_into_valid_judgments(generations: list[Any]) -> None:
    assert len(generations) == 4
    for generation in generations:
        assert generation.error is None
        assert isinstance(generation.text, str)
        assembled = '{"criterion_status": "MET", "explanation": ' + json.dumps(generation.text) + "}"
        judgment = CriterionJudgment.model_validate_json(assembled)
        assert judgment.explanation == generation.text
        assert 1 <= generation.usage.completion_tokens <= 12
        assert generation.seconds >= 0


def test_branch_decoding_equals_plain_greedy_decoding(
    tiny_model: Any, generations: list[Any], reference_generations: list[tuple[list[int], bool]]
) -> None:
    """Decoding all explanations as branches over a shared prefix cache gives, token for token,
    what greedy constrained decoding over each full prompt gives (results in input order)."""
    for generation, (expected_ids, finished) in zip(generations, reference_generations):
        text, truncated = split_string_body(tiny_model.tokenizer.decode(expected_ids))
        assert generation.text == text
        assert generation.truncated == (truncated or not finished)
        assert generation.usage.completion_tokens == len(expected_ids)


def test_reference_decoding_is_sensitive(reference_generations: list[tuple[list[int], bool]]) -> None:
    """Different prompts decode differently, so the equivalence above would catch a mix-up."""
    assert len({tuple(token_ids) for token_ids, _ in reference_generations}) == len(reference_generations)


def test_one_sentence_and_free_branches_decode_together_as_each_alone(tiny_model: Any, tiny_engine: Any) -> None:
    """Requests of both lengths in one call: each branch walks its own grammar, token for token
    what plain greedy decoding under that grammar gives, and every finished sentence body matches
    the one-sentence regex."""
    from autorubric_local.engine.constrained import RegexGrammar

    requests = [dataclasses.replace(r, sentence=k % 2 == 0, max_new_tokens=24)
                for k, r in enumerate(generate_requests(tiny_engine))]
    grammars = {regex: RegexGrammar.from_transformers(tiny_model.model, tiny_model.tokenizer, regex)
                for regex in (JSON_SENTENCE_BODY_REGEX, JSON_STRING_BODY_REGEX)}
    results = tiny_engine.generate(requests)
    for request, result in zip(requests, results):
        expected, finished = reference_decode(tiny_model.model, tiny_model.tokenizer, grammars[request.regex], request)
        assert result.text == split_string_body(tiny_model.tokenizer.decode(expected))[0]
        assert result.usage.completion_tokens == len(expected)
        if request.sentence and finished:
            assert re.fullmatch(JSON_SENTENCE_BODY_REGEX, json.dumps(result.text)[1:]) is not None


@pytest.mark.parametrize("max_packed_tokens", [1, 30])
def test_generation_in_several_chunks_is_unchanged(
    tiny_model: Any, generations: list[Any], max_packed_tokens: int
) -> None:
    engine = from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="tiny", max_packed_tokens=max_packed_tokens)
    again = engine.generate(generate_requests(engine))
    assert [(g.text, g.truncated) for g in again] == [(g.text, g.truncated) for g in generations]


def test_generation_results_in_input_order(tiny_engine: Any, tiny_model: Any, generations: list[Any]) -> None:
    tokenizer = tiny_model.tokenizer
    for request, generation in zip(generate_requests(tiny_engine), generations):
        assert generation.usage.prompt_tokens == len(ids(tokenizer, request.prefix)) + len(ids(tokenizer, request.suffix))
    reversed_requests = list(reversed(generate_requests(tiny_engine)))
    assert [g.text for g in tiny_engine.generate(reversed_requests)] == [g.text for g in reversed(generations)]


def test_tiny_budget_truncates_and_still_parses(tiny_engine: Any) -> None:
    request = generate_requests(tiny_engine)[0]
    (generation,) = tiny_engine.generate([GenerateRequest(request.prefix, request.suffix, max_new_tokens=2)])
    assert generation.error is None
    assert generation.truncated is True
    assert generation.usage.completion_tokens == 2
    assembled = '{"criterion_status": "MET", "explanation": ' + json.dumps(generation.text) + "}"
    assert CriterionJudgment.model_validate_json(assembled).criterion_status.value == "MET"


def test_greedy_generation_is_deterministic(tiny_engine: Any) -> None:
    request = generate_requests(tiny_engine)[1]
    short = GenerateRequest(request.prefix, request.suffix, max_new_tokens=6)
    first, second = tiny_engine.generate([short, short])
    assert first.text == second.text
    assert first.truncated == second.truncated


def test_each_request_keeps_its_own_token_budget(tiny_engine: Any) -> None:
    request = generate_requests(tiny_engine)[2]
    small = GenerateRequest(request.prefix, request.suffix, max_new_tokens=2)
    large = GenerateRequest(request.prefix, request.suffix, max_new_tokens=24)
    (alone,) = tiny_engine.generate([small])
    assert alone.truncated
    batched_small, batched_large = tiny_engine.generate([small, large])
    assert batched_small.text == alone.text
    assert batched_small.truncated
    assert batched_small.usage.completion_tokens == 2
    assert batched_large.usage.completion_tokens > 2


def test_sampled_generation_is_seeded_and_parses(tiny_model: Any) -> None:
    def run(seed: int) -> list[str]:
        engine = from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="tiny", temperature=1.0, seed=seed)
        return [g.text for g in engine.generate(generate_requests(engine, max_new_tokens=8))]

    first = run(5)
    assert first == run(5)  # seeded: reproducible
    assert first != run(6)  # and really sampled
    for text in first:
        assembled = '{"criterion_status": "UNMET", "explanation": ' + json.dumps(text) + "}"
        assert CriterionJudgment.model_validate_json(assembled).explanation == text


def test_generation_never_emits_special_tokens(tiny_model: Any) -> None:
    model, tokenizer = tiny_model.model, tiny_model.tokenizer
    special = tokenizer.convert_tokens_to_ids("<|im_start|>")
    assert special != tokenizer.eos_token_id

    def favour_special(module: Any, inputs: Any, output: Any) -> Any:
        output = output.clone()
        output[..., special] += 100.0  # the model "wants" a chat control token
        return output

    handle = model.lm_head.register_forward_hook(favour_special)
    try:
        engine = from_transformers(model, tokenizer, model_id="tiny-special")
        generations = engine.generate(generate_requests(engine, max_new_tokens=4))
    finally:
        handle.remove()
    for generation in generations:
        assert generation.error is None
        for token in tokenizer.all_special_tokens:
            assert token not in generation.text


def test_generation_usage_counts_the_computed_prefix_once(tiny_engine: Any, tiny_model: Any) -> None:
    """The group's common prompt tokens (here the prefix and the whole shared suffix start)
    are computed once: the first request pays, the others read them."""
    request = generate_requests(tiny_engine)[0]
    batch = [GenerateRequest(request.prefix, request.suffix + str(i), max_new_tokens=2) for i in range(3)]
    prompts = [ids(tiny_model.tokenizer, r.prefix + r.suffix) for r in batch]
    shared = next(k for k in range(len(prompts[0])) if len({tuple(p[: k + 1]) for p in prompts}) > 1)
    assert shared > len(ids(tiny_model.tokenizer, request.prefix))  # the suffix start is shared too
    cached = [g.usage.cache_read_input_tokens for g in tiny_engine.generate(batch)]
    assert cached == [0, shared, shared]


# ---------------------------------------------------------------------------- split_string_body


@pytest.mark.parametrize(
    ("raw", "text", "truncated"),
    [
        ('hello"', "hello", False),
        ('"', "", False),
        ("", "", True),
        ("hello", "hello", True),
        ('say \\"hi\\""', 'say "hi"', False),  # escaped quotes inside, closed
        ('abc\\"', 'abc"', True),  # escaped quote at the end: not closed
        ("abc\\", "abc", True),  # dangling backslash at the cut is dropped
        ('abc\\\\"', "abc\\", False),  # escaped backslash then the closing quote
        ("abc\\\\", "abc\\", True),  # escaped backslash at the cut
        ('line\\nnext\\ttab"', "line\nnext\ttab", False),
        ('a\\/b"', "a/b", False),
        ('caf\\u00e9"', "café", False),  # unicode escape
        ('\\ud83d\\ude00"', "\U0001f600", False),  # surrogate pair
        ('café 中文"', "café 中文", False),  # raw non-ASCII
    ],
)
def test_split_string_body(raw: str, text: str, truncated: bool) -> None:
    assert split_string_body(raw) == (text, truncated)


def test_split_string_body_cut_inside_unicode_escape() -> None:
    text, truncated = split_string_body("caf\\u00")
    assert truncated is True
    assert text.startswith("caf")
    assert "\\" not in text


@pytest.mark.parametrize(
    ("body", "ok"),
    [
        ('One sentence."', True),
        ('No end mark"', True),
        ('It is 3.5 m, says the U.S.A report!"', True),
        ('Really?"', True),
        ('"', True),
        ('with \\"escaped\\" quote."', True),
        ('One. Two."', False),
        ('One.\\nTwo"', False),
        ('Stop.. now"', False),
        ('raw "quote" inside."', False),
        ("unterminated.", False),
    ],
)
def test_json_sentence_body_regex(body: str, ok: bool) -> None:
    assert (re.fullmatch(JSON_SENTENCE_BODY_REGEX, body) is not None) is ok
    if ok:
        assert isinstance(json.loads('"' + body), str)
        assert re.fullmatch(JSON_STRING_BODY_REGEX, body) is not None  # a sentence body is a string body


@pytest.mark.parametrize(
    ("body", "ok"),
    [
        ('plain text"', True),
        ('"', True),
        ('with \\"escaped\\" quote"', True),
        ('tab\\t newline\\n slash\\/ backslash\\\\"', True),
        ('unicode é 中"', True),
        ('raw "quote" inside"', False),
        ('raw\nnewline"', False),
        ('bad \\x escape"', False),
        ("unterminated", False),
    ],
)
def test_json_string_body_regex(body: str, ok: bool) -> None:
    assert (re.fullmatch(JSON_STRING_BODY_REGEX, body) is not None) is ok
    if ok:
        assert isinstance(json.loads('"' + body), str)


def test_a_model_the_packed_path_fails_on_falls_back_to_the_plain_path(
        tiny_model: Any, requests: list[ScoreRequest], expected: list[tuple[float, ...]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A model whose forward rejects the trie's masks (as a state-space model's would) is scored on
    the plain path, exactly, and the engine records why."""
    engine = from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="tiny")
    forward = tiny_model.model.forward

    def refuse_position_ids(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("position_ids") is not None:
            raise TypeError("forward() got an unexpected keyword argument 'position_ids'")
        return forward(*args, **kwargs)

    monkeypatch.setattr(tiny_model.model, "forward", refuse_position_ids)
    results = engine.score(requests)
    assert engine.attention_path.startswith("plain (packed path failed: TypeError")
    assert engine.fallbacks == ["packed path failed: TypeError: forward() got an unexpected keyword argument "
                                "'position_ids'; using the plain path"]
    for result, reference in zip(results, expected, strict=True):
        assert result.error is None and max_abs_diff(result.logprobs, reference) <= TOL


def test_a_bug_in_our_packing_code_raises_instead_of_falling_back(
        tiny_model: Any, requests: list[ScoreRequest], monkeypatch: pytest.MonkeyPatch) -> None:
    """An error raised by our own code on the packed path (here the row's mask) is a bug: it
    propagates, and the engine stays on the packed path with no fallback recorded."""
    engine = from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="tiny")

    def broken(*_: Any) -> None:
        raise TypeError("a bug in the row mask")

    monkeypatch.setattr(engine, "_row_mask", broken)
    with pytest.raises(TypeError, match="a bug in the row mask"):
        engine.score(requests)
    assert engine.attention.packed and engine.fallbacks == []


def test_forward_timer_counts_every_model_forward(tiny_model: Any) -> None:
    """The engine's forward timer sees each top-level forward call once, whatever the path, and
    is shared by engines over the same model."""
    from autorubric_local.engine.transformers.forward_timer import ForwardTimer

    engine = from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="timed", max_packed_tokens=256)
    assert ForwardTimer.of(tiny_model.model) is engine.forward_timer
    seen: list[int] = []
    handle = tiny_model.model.register_forward_hook(lambda *_: seen.append(1))
    try:
        calls, seconds = engine.forward_timer.calls, engine.forward_timer.seconds
        engine.score(make_requests(engine))
        engine.generate(generate_requests(engine, max_new_tokens=3))
    finally:
        handle.remove()
    assert engine.forward_timer.calls - calls == len(seen) >= 3
    assert engine.forward_timer.seconds > seconds
