"""Batched scoring (many prefix groups per forward pass, :mod:`autorubric_local.engine.transformers.batched`) and
batched branch decoding: batched rows equal the per-group path, plain one-prompt scoring and plain
full-sequence forwards (max abs diff <= 1e-4), on the tiny Llama, a tiny sliding-window Gemma 3
with final-logit softcapping, and (slow) SmolLM2.
"""

from __future__ import annotations

from collections.abc import Callable
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from test_engine_transformers import (
    BINARY,
    CHOICE4,
    TOL,
    generate_requests,
    make_prefix,
    make_requests,
    max_abs_diff,
    reference_logprobs,
    shared_start_requests,
)
from test_packing import TREE_LISTS

from autorubric_local.engine import ScoreRequest, from_transformers
from autorubric_local.engine.transformers.attention import AttentionPlan
from autorubric_local.engine.transformers.batched import Unit, plan_batches, trie_allowed, unit_allowed
from autorubric_local.engine.constrained import (
    JSON_SENTENCE_BODY_REGEX,
    JSON_STRING_BODY_REGEX,
    RegexGrammar,
    choose_tokens,
)
from autorubric_local.engine.transformers.packing import may_attend, pack_trie
from autorubric_local.engine.transformers.backend import _common_prefix_length, default_batch_tokens

torch = pytest.importorskip("torch")

BUDGETS = [1, 300, 100_000]  # every group alone (oversize), a few per pass, all in one pass


def engines(model: Any, tokenizer: Any, budget: int, **kwargs: Any) -> tuple[Any, Any, Any]:
    """The batched engine under test, the per-group engine and the plain (one prompt) engine."""
    return (
        from_transformers(model, tokenizer, model_id="batched", max_batch_tokens=budget, **kwargs),
        from_transformers(model, tokenizer, model_id="per-group", max_batch_tokens=0, **kwargs),
        from_transformers(model, tokenizer, model_id="plain", attention="plain", **kwargs),
    )


def assert_equivalent(model: Any, tokenizer: Any, requests: list[ScoreRequest], budget: int, **kwargs: Any) -> Any:
    """Batched == per-group == plain == full-sequence reference; usage as the per-group path."""
    batched, per_group, plain = engines(model, tokenizer, budget, **kwargs)
    got, grouped, alone = batched.score(requests), per_group.score(requests), plain.score(requests)
    assert batched._batched_proven and batched.max_batch_tokens == budget  # it really ran batched
    for request, result, other, single in zip(requests, got, grouped, alone):
        assert result.error is None
        assert max_abs_diff(result.logprobs, other.logprobs) <= TOL
        assert max_abs_diff(result.logprobs, single.logprobs) <= TOL
        assert max_abs_diff(result.logprobs, reference_logprobs(model, tokenizer, request)) <= TOL
        assert abs(result.off_label_mass - other.off_label_mass) <= TOL
        assert abs(result.off_label_mass - single.off_label_mass) <= TOL
        assert result.usage == other.usage  # same per-request token accounting
        assert result.seconds > 0
    return got


# ---------------------------------------------------------------------------- pure layout


def test_plan_batches_respects_the_padded_budget() -> None:
    rng = random.Random(0)
    for _ in range(200):
        lengths = [rng.randint(1, 50) for _ in range(rng.randint(0, 12))]
        budget = rng.randint(1, 200)
        batches = plan_batches(lengths, budget)
        assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
        for batch in batches:
            longest = max(lengths[i] for i in batch)
            assert len(batch) * longest <= budget or len(batch) == 1
            assert lengths[batch[0]] == longest  # longest first: rows of a batch are alike
    assert plan_batches([5, 9, 5, 2], 18) == [[1, 0], [2, 3]]
    with pytest.raises(ValueError, match="max_tokens must be >= 1, got 0"):
        plan_batches([3], 0)


def test_unit_mask_is_causal_prefix_trie_rule_and_isolated_padding() -> None:
    """Prefix causal; a node sees the whole prefix and exactly :func:`may_attend`'s keys;
    padding sees only itself, and nothing real sees padding."""
    rng = random.Random(1)
    for _ in range(30):
        trees = [([rng.randrange(3) for _ in range(rng.randint(1, 5))],
                  [[rng.randrange(3) for _ in range(rng.randint(1, 4))] for _ in range(rng.randint(0, 3))])
                 for _ in range(rng.randint(1, 4))]
        p = rng.randint(0, 4)
        unit = Unit(list(range(p)), pack_trie(p, trees))
        width = unit.length + rng.randint(0, 3)
        allowed, positions = unit_allowed(unit, width)
        rule = allowed.tolist()
        n = len(unit.row.token_ids)
        for q in range(width):
            for k in range(width):
                if q < p:
                    expected = k <= q
                elif q < p + n:
                    expected = k < p or (p <= k < p + n and may_attend(unit.row, q - p, k - p))
                else:
                    expected = k == q
                assert rule[q][k] == expected
        assert positions.tolist() == [*range(p), *unit.row.positions, *[0] * (width - p - n)]


def test_cpu_default_scores_one_group_per_pass(tiny_model: Any) -> None:
    """Measured on the shared 2-core CPU (scripts/results/bench_engine_batched_2cpu_2026-11-24.txt),
    batching was not a clean win (faster by the median, slower in one round of three), so the CPU
    default keeps the per-group path."""
    assert default_batch_tokens(tiny_model.model) == 0
    assert from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="t").max_batch_tokens == 0
    with pytest.raises(ValueError, match="max_batch_tokens must be >= 0 or None, got -1"):
        from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="t", max_batch_tokens=-1)


# ---------------------------------------------------------------------------- equivalence, tiny Llama


@pytest.mark.parametrize("budget", BUDGETS)
def test_batched_rows_equal_single_rows(tiny_model: Any, budget: int) -> None:
    """Three prefixes of different lengths (padding), binary and 4-option labels, shared
    suffix starts, nested and duplicate suffixes, labels sharing first tokens."""
    model, tokenizer = tiny_model.model, tiny_model.tokenizer
    probe = from_transformers(model, tokenizer, model_id="probe")
    requests = [*make_requests(probe), *shared_start_requests(probe, tokenizer)]
    assert len({len(probe.tokens(r.prefix)) for r in requests}) >= 3
    got = assert_equivalent(model, tokenizer, requests, budget)
    assert max_abs_diff(got[-3].logprobs, got[-2].logprobs) <= TOL  # duplicates


def test_eager_attention_batched_equals_single(tiny_eager_model: Any) -> None:
    model, tokenizer = tiny_eager_model.model, tiny_eager_model.tokenizer
    requests = make_requests(from_transformers(model, tokenizer, model_id="probe"))[:7]
    assert_equivalent(model, tokenizer, requests, 400)


def test_group_needing_several_chunks_keeps_its_prefix_cache(tiny_model: Any) -> None:
    """With a small trie budget, groups whose trie needs several chunks run per group while the
    others are batched; all results still equal the single rows."""
    model, tokenizer = tiny_model.model, tiny_model.tokenizer
    probe = from_transformers(model, tokenizer, model_id="probe")
    one_long_group = [ScoreRequest(make_prefix(probe, "LFP is cheaper."), r.suffix, r.labels)
                      for r in make_requests(probe)]
    lone = [ScoreRequest(make_prefix(probe, "Short."), 'x {"criterion_status": "', BINARY)]
    assert_equivalent(model, tokenizer, [*one_long_group, *lone], 4096, max_packed_tokens=60)


def test_a_too_long_request_does_not_sink_the_batch(tiny_model: Any) -> None:
    model, tokenizer = tiny_model.model, tiny_model.tokenizer
    probe = from_transformers(model, tokenizer, model_id="probe")
    requests = make_requests(probe)[:6]
    context = max(len(probe.prompt_tokens(r.prefix, r.suffix)) for r in requests) + 8
    too_long = ScoreRequest(requests[0].prefix, "many words " * 80 + '"', BINARY)
    alone_too_long = ScoreRequest("<|im_start|>user\n" + "long text " * 80, '"', CHOICE4)
    batch = [too_long, *requests[:3], alone_too_long, *requests[3:]]
    engine = from_transformers(model, tokenizer, model_id="b", max_batch_tokens=4096, context_length=context)
    results = engine.score(batch)
    assert engine._batched_proven
    for index in (0, 4):
        assert results[index].error is not None and results[index].error.startswith("infrastructure:")
        assert str(context) in results[index].error and results[index].logprobs == ()
    for request, result in zip([r for i, r in enumerate(batch) if i not in (0, 4)],
                               [r for i, r in enumerate(results) if i not in (0, 4)]):
        assert result.error is None
        assert max_abs_diff(result.logprobs, reference_logprobs(model, tokenizer, request)) <= TOL


def test_results_in_input_order_and_empty(tiny_model: Any) -> None:
    model, tokenizer = tiny_model.model, tiny_model.tokenizer
    engine = from_transformers(model, tokenizer, model_id="b", max_batch_tokens=4096)
    requests = make_requests(engine)
    forward = engine.score(requests)
    backward = engine.score(list(reversed(requests)))
    for a, b in zip(forward, reversed(backward)):
        assert max_abs_diff(a.logprobs, b.logprobs) <= TOL
    assert engine.score([]) == []


def _refusing(model: Any, monkeypatch: pytest.MonkeyPatch, refuses: Callable[[dict[str, Any]], BaseException | None]) -> None:
    """Make ``model``'s forward raise ``refuses(kwargs)`` when that is not None."""
    forward = model.forward

    def guarded(*args: Any, **kwargs: Any) -> Any:
        exc = refuses(kwargs)
        if exc is not None:
            raise exc
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", guarded)


def _boolean_keep(kwargs: dict[str, Any]) -> bool:
    keep = kwargs.get("logits_to_keep")
    return hasattr(keep, "dtype") and str(keep.dtype) == "torch.bool"


def test_a_failing_batched_pass_falls_back_to_one_group_at_a_time(
    tiny_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transformers without boolean ``logits_to_keep`` raises on the first batched pass: the
    engine switches batching off for good, says why in ``fallbacks``, and scores per group, exactly."""
    engine = from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="b", max_batch_tokens=4096)
    requests = make_requests(engine)[:4]
    _refusing(tiny_model.model, monkeypatch, lambda kwargs: IndexError("too many indices for tensor of dimension 3")
              if _boolean_keep(kwargs) else None)
    results = engine.score(requests)
    assert engine.max_batch_tokens == 0 and engine.attention.packed
    assert engine.fallbacks == ["batched path failed: IndexError: too many indices for tensor of dimension 3; "
                                "scoring one prefix group at a time"]
    for request, result in zip(requests, results, strict=True):
        assert max_abs_diff(result.logprobs, reference_logprobs(tiny_model.model, tiny_model.tokenizer, request)) <= TOL


def test_a_bug_in_our_batching_code_raises_instead_of_falling_back(
    tiny_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the model's own refusal switches batching off: an error raised by our code around the
    forward pass (here the masks) propagates, and the engine keeps its settings."""
    import autorubric_local.engine.transformers.batched as batched

    def broken(*args: Any, **kwargs: Any) -> None:
        raise IndexError("a bug in batch_masks")

    engine = from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="b", max_batch_tokens=4096)
    monkeypatch.setattr(batched, "batch_masks", broken)
    with pytest.raises(IndexError, match="a bug in batch_masks"):
        engine.score(make_requests(engine)[:4])
    assert engine.max_batch_tokens == 4096 and engine.fallbacks == []


def test_out_of_memory_halves_the_batch_and_keeps_batching(tiny_model: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Out of memory is memory: with a model that runs out above half the padded tokens of the
    workload's one batched pass, the engine halves its batch until the passes fit, records each
    step, keeps batching, and scores exactly."""
    import torch

    import autorubric_local.engine.transformers.paths as paths

    engine = from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="b", max_batch_tokens=8192)
    requests = make_requests(engine)
    seen: list[int] = []
    _refusing(tiny_model.model, monkeypatch, lambda kwargs: seen.append(kwargs["input_ids"].numel())
              if _boolean_keep(kwargs) else None)
    engine.score(requests)
    assert len(seen) == 1 and seen[0] <= 8192  # the whole workload as one pass
    limit, passed = seen[0] // 2, []

    def over_limit(kwargs: dict[str, Any]) -> BaseException | None:
        if not _boolean_keep(kwargs):
            return None
        if kwargs["input_ids"].numel() > limit:
            return torch.OutOfMemoryError("CUDA out of memory")
        passed.append(kwargs["input_ids"].numel())
        return None

    monkeypatch.setattr(paths, "MIN_BATCH_TOKENS", 8)
    engine = from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="b", max_batch_tokens=8192)
    _refusing(tiny_model.model, monkeypatch, over_limit)
    results = engine.score(requests)
    steps = len(engine.fallbacks)
    assert steps >= 1 and engine.max_batch_tokens == 8192 >> steps and engine._batched_proven
    assert engine.fallbacks == [f"out of memory at {8192 >> i} batch tokens; now {8192 >> (i + 1)}" for i in range(steps)]
    assert passed and max(passed) <= limit
    for request, result in zip(requests, results, strict=True):
        assert max_abs_diff(result.logprobs, reference_logprobs(tiny_model.model, tiny_model.tokenizer, request)) <= TOL


# ---------------------------------------------------------------------------- sliding window + softcapping


@pytest.fixture(scope="module")
def tiny_gemma(tiny_model: Any) -> Any:
    """A random 2-layer Gemma 3 (one sliding layer, window 8; one full layer) with final-logit
    softcapping, on the tiny tokenizer: prompts run far past the window."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    tokenizer = tiny_model.tokenizer
    config = Gemma3TextConfig(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, sliding_window=8,
        layer_types=["sliding_attention", "full_attention"], final_logit_softcapping=3.0,
        max_position_embeddings=512, initializer_range=0.2, attn_implementation="sdpa",
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    return Gemma3ForCausalLM(config).to(torch.float32).eval()


@pytest.mark.parametrize("budget", [300, 100_000])
def test_sliding_window_batched_equals_single(tiny_gemma: Any, tiny_model: Any, budget: int) -> None:
    tokenizer = tiny_model.tokenizer
    probe = from_transformers(tiny_gemma, tokenizer, model_id="probe")
    assert probe.attention.per_layer_type and probe.attention.window == 8
    requests = make_requests(probe)
    assert min(len(probe.prompt_tokens(r.prefix, r.suffix)) for r in requests) > 8 * 4
    assert_equivalent(tiny_gemma, tokenizer, requests, budget)


def test_ignoring_the_window_would_be_caught(tiny_gemma: Any, tiny_model: Any) -> None:
    tokenizer = tiny_model.tokenizer
    wrong = from_transformers(tiny_gemma, tokenizer, model_id="wrong", max_batch_tokens=100_000)
    wrong.attention = AttentionPlan(True, None, ("full_attention",), "window ignored (wrong on purpose)")
    request = make_requests(wrong)[0]
    bad = wrong.score([request])[0]
    assert max_abs_diff(bad.logprobs, reference_logprobs(tiny_gemma, tokenizer, request)) > 0.01


# ---------------------------------------------------------------------------- batched decode step


def test_choose_tokens_equals_choosing_branch_by_branch(tiny_model: Any) -> None:
    """Greedy: one masked argmax over all rows gives what :meth:`RegexGrammar.choose` gives per
    row, for branches of two grammars in different states, ties included."""
    model, tokenizer = tiny_model.model, tiny_model.tokenizer
    grammars = [RegexGrammar.from_transformers(model, tokenizer, regex)
                for regex in (JSON_STRING_BODY_REGEX, JSON_SENTENCE_BODY_REGEX)]
    vocab = model.config.vocab_size
    generator = torch.Generator().manual_seed(0)
    rng = random.Random(0)
    for step in range(20):
        picks = [grammars[k % 2] for k in range(8)]
        batch_guides, single_guides = [], []
        for k, grammar in enumerate(picks):  # both copies walk the same random allowed tokens
            pair = grammar.new_guide(), grammar.new_guide()
            for _ in range(k % 4):
                allowed = grammar.allowed_ids(pair[0], vocab, "cpu").tolist()
                token = allowed[rng.randrange(len(allowed))]
                for guide in pair:
                    guide.advance(token_id=token, return_tokens=False)
            if pair[0].is_finished():
                pair = grammar.new_guide(), grammar.new_guide()
            batch_guides.append(pair[0])
            single_guides.append(pair[1])
        logits = torch.randn(8, vocab, generator=generator)
        if step % 2:
            logits = logits.round()  # many ties
        chosen = choose_tokens(picks, batch_guides, logits)
        assert chosen == [g.choose(guide, logits[k]) for k, (g, guide) in enumerate(zip(picks, single_guides))]
        assert [g.get_state() for g in batch_guides] == [g.get_state() for g in single_guides]


def test_choose_tokens_sampling_is_seeded_and_allowed(tiny_model: Any) -> None:
    model, tokenizer = tiny_model.model, tiny_model.tokenizer
    grammar = RegexGrammar.from_transformers(model, tokenizer, JSON_STRING_BODY_REGEX, temperature=1.0)
    logits = torch.randn(6, model.config.vocab_size, generator=torch.Generator().manual_seed(1))

    def draw(seed: int) -> list[int]:
        return choose_tokens([grammar] * 6, [grammar.new_guide() for _ in range(6)], logits,
                             torch.Generator().manual_seed(seed))

    first = draw(3)
    assert first == draw(3) and first != draw(4)
    allowed = set(grammar.allowed_ids(grammar.new_guide(), model.config.vocab_size, "cpu").tolist())
    assert set(first) <= allowed
    with pytest.raises(ValueError, match="different temperatures"):
        choose_tokens([grammar, RegexGrammar(grammar.index)], [grammar.new_guide()] * 2, logits[:2])


def test_batched_decode_equals_one_branch_at_a_time(tiny_model: Any) -> None:
    """All branches of a chunk decode in one step each; the tokens equal decoding each request in
    its own call (one branch per step) and the plain path."""
    model, tokenizer = tiny_model.model, tiny_model.tokenizer
    engine = from_transformers(model, tokenizer, model_id="b")
    plain = from_transformers(model, tokenizer, model_id="plain", attention="plain")
    requests = generate_requests(engine, max_new_tokens=16)
    together = engine.generate(requests)
    for request, result in zip(requests, together):
        (alone,) = engine.generate([request])
        (single,) = plain.generate([request])
        assert (result.text, result.truncated) == (alone.text, alone.truncated) == (single.text, single.truncated)
        assert result.usage.completion_tokens == alone.usage.completion_tokens


# ---------------------------------------------------------------------------- SmolLM2 (slow)


@pytest.mark.slow
def test_smollm2_batched_rows_equal_single_rows(smollm2_engine: Any) -> None:
    engine = smollm2_engine
    model, tokenizer = engine.model, engine.tokenizer
    probe = from_transformers(model, tokenizer, model_id="probe", prompt_format=engine.prompt_format)
    requests = [*make_requests(probe), *shared_start_requests(probe, tokenizer)]
    # The per-group and plain engines take no budget: scored once, compared with both budgets.
    _, per_group, plain = engines(model, tokenizer, 0, prompt_format=engine.prompt_format)
    grouped, alone = per_group.score(requests), plain.score(requests)
    for budget in (600, 100_000):
        batched = engines(model, tokenizer, budget, prompt_format=engine.prompt_format)[0]
        got = batched.score(requests)
        assert batched._batched_proven and batched.max_batch_tokens == budget
        for result, other, single in zip(got, grouped, alone):
            assert result.error is None
            assert max_abs_diff(result.logprobs, other.logprobs) <= TOL
            assert max_abs_diff(result.logprobs, single.logprobs) <= TOL
            assert abs(result.off_label_mass - single.off_label_mass) <= TOL
            assert result.usage == other.usage


def test_llm_config_max_batch_tokens_reaches_the_engine_and_the_hash_only_when_set(tiny_model_dir: Path) -> None:
    from autorubric_local.judges import engines
    from autorubric_local.judges.config import LLMConfig

    unset = LLMConfig(model=str(tiny_model_dir), device="cpu")
    chosen = LLMConfig(model=str(tiny_model_dir), device="cpu", max_batch_tokens=2048)
    # Unset, the field stays out of run descriptions, so content hashes of older runs hold.
    assert "max_batch_tokens" not in unset.describe()
    assert chosen.describe()["max_batch_tokens"] == 2048
    loaded = [engines.load_engine(unset), engines.load_engine(chosen)]
    try:
        assert [engine.max_batch_tokens for engine in loaded] == [0, 2048]  # CPU default: one item per pass
    finally:
        for engine in loaded:
            engines.release_engine(engine)


# ------------------------------------------------------------------ masks and shared prefixes


@given(TREE_LISTS)
@settings(max_examples=examples(60), deadline=None)
def test_trie_allowed_is_may_attend(trees) -> None:  # type: ignore[no-untyped-def]
    """The binary-lifting mask equals the reference rule, node by node."""
    row = pack_trie(3, trees)
    allowed = trie_allowed(row).tolist()
    n = len(row.token_ids)
    assert allowed == [[may_attend(row, q, k) for k in range(n)] for q in range(n)]


def test_trie_allowed_on_deep_branching_paths() -> None:
    """Depths up to 140, a branch at every level of a long suffix."""
    rng = random.Random(3)
    suffix = [rng.randrange(50) for _ in range(130)]
    trees = [(suffix[:cut], [[rng.randrange(50, 60) for _ in range(rng.randint(1, 12))]]) for cut in range(1, 131, 7)]
    row = pack_trie(0, trees)
    assert row.max_depth >= 128
    allowed = trie_allowed(row)
    n = len(row.token_ids)
    expected = torch.tensor([[may_attend(row, q, k) for k in range(n)] for q in range(n)])
    assert torch.equal(allowed, expected)


def test_trie_allowed_refuses_a_parent_numbered_after_its_child() -> None:
    """The row copies need parents first (as _Trie.insert numbers them); a row breaking that is
    our bug and raises, never a wrong mask."""
    import dataclasses

    row = pack_trie(0, [([1, 2, 3], [[4]])])
    broken = dataclasses.replace(row, parents=[1, -1, 1])
    with pytest.raises(AssertionError, match="parents must come first"):
        trie_allowed(broken)


@given(st.lists(st.lists(st.integers(0, 2), min_size=1, max_size=6), min_size=1, max_size=5))
def test_common_prefix_length_is_the_shared_start(prompts: list[list[int]]) -> None:
    """Longest start shared by every prompt, capped at the shortest prompt's length minus one."""
    expected = 0
    while expected < min(map(len, prompts)) - 1 and len({p[expected] for p in prompts}) == 1:
        expected += 1
    assert _common_prefix_length(prompts) == expected


def test_only_a_row_scored_on_a_prefix_cache_makes_a_mask_block(tiny_model: Any) -> None:
    """The batched path builds its masks per batch (:func:`batch_masks`): it makes no memoised
    trie block; the per-group path makes one per trie and reuses it, exactly."""
    batched, per_group, _ = engines(tiny_model.model, tiny_model.tokenizer, 100_000)
    requests = make_requests(batched)
    got, grouped = batched.score(requests), per_group.score(requests)
    assert batched._layouts()._layouts and batched._layouts()._blocks == {}
    assert per_group._layouts()._blocks and all(b is not None for b in per_group._layouts()._blocks.values())
    for request, a, b in zip(requests, got, grouped, strict=True):
        reference = reference_logprobs(tiny_model.model, tiny_model.tokenizer, request)
        assert max_abs_diff(a.logprobs, reference) <= TOL and max_abs_diff(b.logprobs, reference) <= TOL
