"""Cross-item batched constrained decoding (:mod:`autorubric_local.engine.transformers.decode_batched`).

The open branches of many items advance in one forward pass per step, each on its own item's
prefix keys. Greedy tokens must equal the per-group path's (one item's branches per step,
``max_decode_tokens=0``) and plain one-prompt decoding, on the tiny random model with items of
different prefix lengths; and the equality check must catch a broken batch (a row fed another
item's cache).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from test_engine_transformers import CRITERIA, OPENER, SUBMISSIONS, make_prefix

from autorubric_local.engine import GenerateRequest, from_transformers
from autorubric_local.engine.transformers.backend import _common_prefix_length, default_decode_tokens
from autorubric_local.engine.transformers.decode_batched import decode_units, plan_rows

torch = pytest.importorskip("torch")


def items_requests(engine: Any, max_new_tokens: int = 12) -> list[GenerateRequest]:
    """Three items of different prefix lengths (short, long, medium submissions), 2-4 criteria
    each, items interleaved, budgets and grammars (free / one sentence) mixed."""
    submissions = [SUBMISSIONS[2], SUBMISSIONS[1] + " " + SUBMISSIONS[0], SUBMISSIONS[0]]
    requests = []
    for c, criterion in enumerate(CRITERIA):
        for s, submission in enumerate(submissions):
            if c >= 2 + s:  # item s has 2 + s criteria
                continue
            requests.append(GenerateRequest(
                make_prefix(engine, submission), f"<criterion>{criterion}</criterion>" + OPENER,
                max_new_tokens=max_new_tokens - (c + s) % 3, sentence=(c + s) % 2 == 1))
    return requests


def tokens_of(results: list[Any]) -> list[tuple[str, bool, int]]:
    return [(r.text, r.truncated, r.usage.completion_tokens) for r in results]


def check_same(got: list[Any], expected: list[Any]) -> None:
    """The equality check of this file: the same tokens (as text), truncation and token counts."""
    assert len(got) == len(expected)
    for k, (a, b) in enumerate(zip(got, expected, strict=True)):
        assert a == b, f"request {k}: {a!r} != {b!r}"


@pytest.fixture(scope="module")
def three_engines(tiny_model: Any) -> tuple[Any, Any, Any]:
    model, tokenizer = tiny_model.model, tiny_model.tokenizer
    return (from_transformers(model, tokenizer, model_id="cross", max_decode_tokens=100_000),
            from_transformers(model, tokenizer, model_id="per-group", max_decode_tokens=0),
            from_transformers(model, tokenizer, model_id="plain", attention="plain"))


@pytest.fixture(scope="module")
def per_group(three_engines: tuple[Any, Any, Any]) -> list[tuple[str, bool, int]]:
    _, grouped, plain = three_engines
    requests = items_requests(grouped)
    expected = tokens_of(grouped.generate(requests))
    check_same(tokens_of(plain.generate(requests)), expected)
    assert len({text for text, _, _ in expected}) > len(expected) // 2  # items decode differently
    return expected


def test_prefixes_differ_in_length(three_engines: tuple[Any, Any, Any]) -> None:
    engine = three_engines[0]
    lengths = {len(engine.prompt_tokens(r.prefix, "")) for r in items_requests(engine)}
    assert len(lengths) == 3


@pytest.mark.parametrize("max_decode_tokens", [1, 300, 100_000])
@pytest.mark.parametrize("max_packed_tokens", [2048, 30])
def test_cross_item_decoding_equals_per_group_and_plain(
        tiny_model: Any, per_group: list[tuple[str, bool, int]], max_decode_tokens: int, max_packed_tokens: int) -> None:
    """One row per item (or per chunk with a small ``max_packed_tokens``), rows batched whole
    (100k), a few at a time (300) or alone (1): the same tokens as per-group and plain decoding."""
    engine = from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="x",
                               max_decode_tokens=max_decode_tokens, max_packed_tokens=max_packed_tokens)
    check_same(tokens_of(engine.generate(items_requests(engine))), per_group)
    assert engine._decode_batched_proven and not engine.fallbacks


def test_one_batch_really_carries_several_items(three_engines: tuple[Any, Any, Any],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """At 100k slots every item is a row of one batch: one call of decode_units with 3 rows."""
    from autorubric_local.engine.transformers import decode_batched

    seen: list[int] = []
    real = decode_batched.decode_units

    def spy(model: Any, plan: Any, units: Any, sampler: Any) -> Any:
        seen.append(len(units))
        return real(model, plan, units, sampler)

    monkeypatch.setattr(decode_batched, "decode_units", spy)
    engine = three_engines[0]
    engine.generate(items_requests(engine))
    assert seen == [3]


def units_of(engine: Any, requests: list[GenerateRequest]) -> tuple[list[Any], list[list[int]]]:
    """The rows the engine builds for ``requests`` (one per item, as _generate_batched does) and
    the request indices of each row's branches."""
    by_prefix: dict[str, list[int]] = {}
    for k, r in enumerate(requests):
        by_prefix.setdefault(r.prefix, []).append(k)
    units, order = [], []
    for indices in by_prefix.values():
        prompts = [engine.prompt_tokens(requests[k].prefix, requests[k].suffix) for k in indices]
        shared = _common_prefix_length(prompts)
        cache = engine._prefix_cache(prompts[0][:shared])
        units.append(engine._decode_unit(shared, cache, [
            (p[shared:], requests[k].max_new_tokens, requests[k].regex) for p, k in zip(prompts, indices)]))
        order.append(indices)
    return units, order


def decoded_texts(engine: Any, requests: list[GenerateRequest], units: list[Any],
                  order: list[list[int]]) -> list[tuple[str, bool, int]]:
    from autorubric_local.engine.constrained import read_generated

    out: list[Any] = [None] * len(requests)
    with torch.inference_mode():
        decoded = decode_units(engine.model, engine.attention, units, engine._sampler())
    for indices, branches in zip(order, decoded, strict=True):
        for k, (ids, closed) in zip(indices, branches, strict=True):
            body, truncated = read_generated(requests[k], engine.tokenizer, ids)
            out[k] = (body, truncated or not closed, len(ids))
    return out


def test_the_units_decoded_directly_equal_per_group(three_engines: tuple[Any, Any, Any],
                                                     per_group: list[tuple[str, bool, int]]) -> None:
    engine = three_engines[0]
    requests = items_requests(engine)
    with torch.inference_mode():
        units, order = units_of(engine, requests)
    check_same(decoded_texts(engine, requests, units, order), per_group)


def test_the_equality_check_catches_a_row_fed_another_items_cache(
        three_engines: tuple[Any, Any, Any], per_group: list[tuple[str, bool, int]]) -> None:
    """A deliberately broken batch: the row of the short item gets the long item's keys and
    values (cut to its own length). Its branches then decode on the wrong item, and
    check_same must fail."""
    engine = three_engines[0]
    requests = items_requests(engine)
    with torch.inference_mode():
        units, order = units_of(engine, requests)
    short, long_ = min(range(3), key=lambda u: units[u].length), max(range(3), key=lambda u: units[u].length)
    n = units[short].length
    units[short] = dataclasses.replace(units[short], layers=[
        (k[:, :, :n].clone(), v[:, :, :n].clone()) for k, v in units[long_].layers])
    broken = decoded_texts(engine, requests, units, order)
    with pytest.raises(AssertionError, match="request"):
        check_same(broken, per_group)
    # only the broken row's requests change; the other items are untouched by it
    for u, indices in enumerate(order):
        same = all(broken[k] == per_group[k] for k in indices)
        assert same == (u != short)


def test_sampled_cross_item_decoding_is_seeded(tiny_model: Any) -> None:
    def run(seed: int) -> list[str]:
        engine = from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="s", temperature=1.0,
                                   seed=seed, max_decode_tokens=100_000)
        return [g.text for g in engine.generate(items_requests(engine, max_new_tokens=8))]

    first = run(5)
    assert first == run(5) and first != run(6)


def test_a_refused_batched_step_falls_back_to_one_group_at_a_time(
        tiny_model: Any, per_group: list[tuple[str, bool, int]], monkeypatch: pytest.MonkeyPatch) -> None:
    from autorubric_local.engine.transformers import decode_batched
    from autorubric_local.engine.transformers.paths import PathUnsupported

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PathUnsupported("batched", TypeError("no 4-D masks with a batch"))

    monkeypatch.setattr(decode_batched, "decode_units", refuse)
    engine = from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="f", max_decode_tokens=100_000)
    check_same(tokens_of(engine.generate(items_requests(engine))), per_group)
    assert engine.max_decode_tokens == 0
    assert engine.fallbacks == ["batched path failed: TypeError: no 4-D masks with a batch; "
                                "decoding one prefix group at a time"]


def test_plan_rows_keeps_order_and_budget() -> None:
    assert plan_rows([5, 3, 4, 10, 2], 12) == [[0, 1], [2], [3], [4]]
    assert plan_rows([5, 3, 4], 1000) == [[0, 1, 2]]
    assert plan_rows([5, 3], 1) == [[0], [1]]
    with pytest.raises(ValueError, match="max_tokens must be >= 1, got 0"):
        plan_rows([1], 0)


def test_default_decode_tokens_and_validation(tiny_model: Any) -> None:
    assert default_decode_tokens(tiny_model.model) == 0  # CPU: one prefix group per step
    assert from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="d").max_decode_tokens == 0
    with pytest.raises(ValueError, match="max_decode_tokens must be >= 0 or None, got -1"):
        from_transformers(tiny_model.model, tiny_model.tokenizer, model_id="v", max_decode_tokens=-1)
