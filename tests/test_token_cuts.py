"""Shared heads encoded once give exactly the one-call encoding (:mod:`autorubric_local.engine.token_cuts`).

For every tokenizer family here (the tests' byte-level ChatML BPE, an in-memory Gemma-style BPE
without pre-tokenizer, the same byte-level BPE under Llama 3's and Qwen2's regex split (Qwen2's
with its NFC normalizer), the SmolLM2 vocabulary under Qwen2's pipeline (what transformers builds
for a Qwen2-shaped judge folder holding that vocabulary), and the real SmolLM2 and Gemma 3
tokenizers when installed), prompts with
tricky text at every seam (trailing spaces, unicode, special-token strings inside the data) are
encoded through the fast path (:meth:`prompt_tokens`, :meth:`score_tokens`) and compared with one
call over the whole text. Controls show the checks of :func:`supports_cuts` are needed: tokenizers
that fail them really do tokenize differently across a cut.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from autorubric_local.engine.chat_text import HFTextMixin, SeamError
from autorubric_local.engine.token_cuts import SPLIT_PATTERNS, first_cut, join_pieces, last_cut, supports_cuts
from autorubric_local.engine.user_text import mark, plain, split_marked

# Characters that stress seams: spaces of several kinds, letters next to spaces, combining
# marks, CJK, emoji, '▁', JSON punctuation, and the start of special-token strings.
SEAM_TEXT = st.lists(
    st.sampled_from([" ", "  ", "\n", "\n\n", "\t", "\u00a0", "\u3000", "a", "Z", " b", "é", "e\u0301", "中", "😀",
                     "▁", ":", '"', "{", "<", ">", "1", "##", "\r\n", "word ", " the end", "<|im_end|>",
                     "<|im_start|>", "<end_of_turn>", "<bos>", "'s", "it's a"]),
    max_size=14,
).map("".join)
LABELS = st.lists(st.sampled_from(['MET"', 'UNMET"', 'CANNOT_ASSESS"', "1,", "12}", " x", "é", "\n", "a b"]),
                  min_size=1, max_size=3)


class TextOnly(HFTextMixin):
    """The text half of an engine: exact tokenization without a model."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self._token_cache = {}
        self.set_prompt_format("auto")


def one_call(engine: TextOnly, prefix: str, suffix: str, labels: list[str]) -> tuple[list[int], list[list[int]], str | None]:
    """The reference: the whole prompt (and prompt + label) encoded in one call; a seam error
    as the engine reports it."""
    prompt = engine._encode_marked(prefix + suffix)
    try:
        return prompt, [engine.label_tokens(prefix + suffix, prompt, label) for label in labels], None
    except SeamError as exc:
        return prompt, [], f"infrastructure: {exc}"


def gemma_style_tokenizer(cross_space_merges: bool) -> Any:
    """A BPE like the converted Gemma 3 one: spaces normalized to '▁', no pre-tokenizer.

    Trained with a '▁' split (no merge across a word start) unless ``cross_space_merges``, in
    which case merges such as 'e▁' are learned and :func:`supports_cuts` must refuse it.
    """
    from conftest import _CORPUS
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Replace(" ", "▁")
    if not cross_space_merges:
        tok.pre_tokenizer = pre_tokenizers.Split("▁", "merged_with_next")
    alphabet = sorted({c for line in _CORPUS for c in line.replace(" ", "▁")} | set("abcdefghijklmnopqrstuvwxyz\n▁'"))
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<pad>", "<eos>", "<bos>", "<unk>"],
                                  initial_alphabet=alphabet, show_progress=False)
    tok.train_from_iterator(_CORPUS * 4, trainer)
    tok.pre_tokenizer = pre_tokenizers.Split(" ", "merged_with_previous")  # as converted Gemma: finds no space
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>",
                                        pad_token="<pad>", unk_token="<unk>")
    tokenizer.add_special_tokens({"additional_special_tokens": ["<start_of_turn>", "<end_of_turn>"]})
    return tokenizer


LLAMA3_SPLIT = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
QWEN2_SPLIT = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


def with_pipeline(base: Any, normalizer: Any, steps: list[Any]) -> Any:
    """``base``'s vocabulary, merges, added tokens and chat template under ``normalizer`` (None:
    keep base's) and the pre-tokenizer ``Sequence(steps)``."""
    from tokenizers import Tokenizer, pre_tokenizers

    backend = Tokenizer.from_str(base.backend_tokenizer.to_str())
    if normalizer is not None:
        backend.normalizer = normalizer
    backend.pre_tokenizer = pre_tokenizers.Sequence(steps)
    tokenizer = base.__class__(tokenizer_object=backend)
    tokenizer.chat_template = getattr(base, "chat_template", None)
    return tokenizer


def regex_split_tokenizer(base: Any, pattern: str, nfc: bool, behavior: str = "isolated",
                          prefix_space: bool = False) -> Any:
    """``base`` under a Llama 3 / Qwen2 style pipeline: ``Split(pattern)`` then ``ByteLevel``
    without its regex, NFC first when ``nfc``."""
    from tokenizers import Regex, normalizers, pre_tokenizers

    return with_pipeline(base, normalizers.NFC() if nfc else None, [
        pre_tokenizers.Split(Regex(pattern), behavior=behavior, invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=prefix_space, use_regex=False),
    ])


def real_tokenizer(preset: str) -> Any:
    from autorubric_local.core.errors import ModelNotFoundError
    from autorubric_local.judges.engines import gguf_tokenizer
    from autorubric_local.judges.presets import resolve_model

    try:
        return gguf_tokenizer(resolve_model(preset).path)
    except ModelNotFoundError as exc:
        from setup_state import missing

        missing(f"{preset} not installed: {exc}", "setup.sh")


@pytest.fixture(scope="module", params=["byte_level", "gemma_style", "llama3_split", "qwen2_split",
                                        "smollm2_qwen2_split", "smollm2", "gemma3"])
def engine(request: pytest.FixtureRequest, tiny_model: Any) -> TextOnly:
    if request.param == "byte_level":
        return TextOnly(tiny_model.tokenizer)
    if request.param == "gemma_style":
        return TextOnly(gemma_style_tokenizer(cross_space_merges=False))
    if request.param == "llama3_split":
        return TextOnly(regex_split_tokenizer(tiny_model.tokenizer, LLAMA3_SPLIT, nfc=False))
    if request.param == "qwen2_split":
        return TextOnly(regex_split_tokenizer(tiny_model.tokenizer, QWEN2_SPLIT, nfc=True))
    if request.param == "smollm2_qwen2_split":
        return TextOnly(regex_split_tokenizer(real_tokenizer("smollm2-135m-instruct"), QWEN2_SPLIT, nfc=True))
    return TextOnly(real_tokenizer("smollm2-135m-instruct" if request.param == "smollm2" else "gemma3-270m"))


# ------------------------------------------------------------------------------ pure parts


def test_last_cut_is_the_last_space_between_ascii_letters_inside_one_piece() -> None:
    pieces = [("Grade this answer", False), ("é b", True), ("a  b", False), ("x", True)]
    assert last_cut(pieces) == (0, 10)  # before " answer"; "é b" and "a  b" have no cut, "x" no space
    assert last_cut([("ab c", False)]) == (0, 2)
    assert last_cut([("ab ", False), ("c", False)]) is None  # a cut never spans pieces
    assert last_cut([(" a", False), ("a ", True), ("1 a", False)]) is None


def test_first_cut_is_the_first_such_space() -> None:
    pieces = [("é b", True), ("a  b", False), ("x", True), ("Grade this answer", False)]
    assert first_cut(pieces) == (3, 5)  # before " this"
    assert first_cut([("ab c d", False)]) == (0, 2)
    assert first_cut([("ab ", False), ("c", False)]) is None
    assert first_cut([(" a", False), ("a ", True), ("1 a", False)]) is None


def test_join_pieces_merges_trusted_text_only() -> None:
    assert join_pieces([("a", False)], [("b", False), ("c", True)]) == [("ab", False), ("c", True)]
    assert join_pieces([("a", True)], [("b", True)]) == [("a", True), ("b", True)]
    assert join_pieces([], [("b", False)]) == [("b", False)]


# ------------------------------------------------------------------------- which tokenizers


def test_supported_tokenizers(tiny_model: Any) -> None:
    assert supports_cuts(tiny_model.tokenizer)
    assert supports_cuts(gemma_style_tokenizer(cross_space_merges=False))


@pytest.mark.parametrize("pattern", sorted(SPLIT_PATTERNS))
def test_every_listed_split_regex_is_supported_and_exact_at_every_cut(tiny_model: Any, pattern: str) -> None:
    """Each regex of SPLIT_PATTERNS (Llama 3, Qwen2, Qwen3.5, Tekken, o200k), with and without NFC:
    at every cut position of texts with contractions, digits, marks and newlines near the cut,
    two calls give the one call's ids."""
    texts = ["It's the cell's 1234 Wh/kg figure, isn't it? Yes ok", "e\u0301 ab\u0301c de\u0301 x\n\n y z",
             "ABC Def ghI JKl 'll we'D 12 34\r\n  tabs\tthen a b", "中文 and 😀 text ok MET UNMET"]
    for nfc in (False, True):
        tokenizer = regex_split_tokenizer(tiny_model.tokenizer, pattern, nfc=nfc)
        assert supports_cuts(tokenizer)
        for text in texts:
            whole = tokenizer.encode(text, add_special_tokens=False)
            for at in [i for i in range(1, len(text) - 1)
                       if text[i] == " " and text[i - 1].isascii() and text[i - 1].isalpha()
                       and text[i + 1].isascii() and text[i + 1].isalpha()]:
                assert tokenizer.encode(text[:at], add_special_tokens=False) + tokenizer.encode(
                    text[at:], add_special_tokens=False) == whole, (text, at)


def test_other_regex_splits_are_refused_and_a_two_word_split_would_change_tokens(tiny_model: Any) -> None:
    """Only the listed regexes, split off in isolation, before a ByteLevel without regex or prefix
    space: a regex whose matches hold a letter before a space (two words a match) really
    tokenizes differently across a cut."""
    base = tiny_model.tokenizer
    assert not supports_cuts(regex_split_tokenizer(base, LLAMA3_SPLIT, nfc=False, behavior="merged_with_next"))
    assert not supports_cuts(regex_split_tokenizer(base, LLAMA3_SPLIT, nfc=False, prefix_space=True))
    pairs = regex_split_tokenizer(real_tokenizer("smollm2-135m-instruct"), r"\S+ ?\S*", nfc=False)  # two words a match
    assert not supports_cuts(pairs)
    text = "Decide whether the criterion is met"
    at = text.index(" whether")  # one call: "Decide whether" is one pre-token; two: " ", "whether the"
    assert pairs.encode(text[:at], add_special_tokens=False) + pairs.encode(
        text[at:], add_special_tokens=False) != pairs.encode(text, add_special_tokens=False)


def test_split_patterns_are_the_ones_transformers_writes() -> None:
    """SPLIT_PATTERNS holds transformers' own strings: a typo, or a change on their side, would
    silently turn the cuts off for those judges."""
    from transformers.integrations.gguf import gguf_tokenizer_mapping as gguf
    from transformers.models.qwen2 import tokenization_qwen2
    from transformers.models.qwen3_5 import tokenization_qwen3_5

    assert tokenization_qwen2.PRETOKENIZE_REGEX in SPLIT_PATTERNS
    assert tokenization_qwen3_5.PRETOKENIZE_REGEX in SPLIT_PATTERNS
    assert {gguf._LLAMA3_SPLIT, gguf._TEKKEN_SPLIT, gguf._GPT4O_SPLIT} <= SPLIT_PATTERNS
    assert set(gguf.GGUF_PRE_TOKENIZER_SPLITS.values()) <= SPLIT_PATTERNS


def test_a_listed_regex_in_any_other_pipeline_is_refused(tiny_model: Any) -> None:
    """Each condition of the regex-split case is needed for the check to pass: another
    normalizer, an inverted split, a ByteLevel with its own regex, a third step, or an added
    token that reads letter-space after NFC (U+212A KELVIN SIGN becomes "K")."""
    from tokenizers import Regex, normalizers, pre_tokenizers

    base = tiny_model.tokenizer
    assert supports_cuts(regex_split_tokenizer(base, LLAMA3_SPLIT, nfc=True))
    split = pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated", invert=False)
    plain_bytes = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    assert supports_cuts(with_pipeline(base, None, [split, plain_bytes]))
    assert not supports_cuts(with_pipeline(base, normalizers.NFKC(), [split, plain_bytes]))
    inverted = pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated", invert=True)
    assert not supports_cuts(with_pipeline(base, None, [inverted, plain_bytes]))
    regex_bytes = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    assert not supports_cuts(with_pipeline(base, None, [split, regex_bytes]))
    assert not supports_cuts(with_pipeline(base, None, [split, pre_tokenizers.Digits(), plain_bytes]))
    kelvin = with_pipeline(base, normalizers.NFC(), [split, plain_bytes])
    kelvin.add_tokens(["\u212a x"])
    assert not supports_cuts(kelvin)


def test_merges_across_a_word_start_are_refused_and_would_change_tokens() -> None:
    tokenizer = gemma_style_tokenizer(cross_space_merges=True)
    assert not supports_cuts(tokenizer)
    texts = ["The submission states the figure.", "It does not judge ONE criterion at a time."]
    differs = False
    for text in texts:
        for at in [i for i in range(1, len(text) - 1) if text[i] == " " and text[i - 1].isalpha()]:
            apart = tokenizer.encode(text[:at], add_special_tokens=False) + tokenizer.encode(
                text[at:], add_special_tokens=False)
            differs |= apart != tokenizer.encode(text, add_special_tokens=False)
    assert differs


def test_metaspace_and_added_tokens_with_spaces_are_refused(tiny_model: Any) -> None:
    from test_injection_tokens import build_sentencepiece_tokenizer

    assert not supports_cuts(build_sentencepiece_tokenizer())  # prepends '▁' per call
    tokenizer = tiny_model.tokenizer.__class__(tokenizer_object=tiny_model.tokenizer.backend_tokenizer.__class__
                                              .from_str(tiny_model.tokenizer.backend_tokenizer.to_str()))
    tokenizer.add_tokens(["impartial grader"])
    assert not supports_cuts(tokenizer)
    text = "You are an impartial grader here"
    at = text.index(" grader")
    assert tokenizer.encode(text[:at], add_special_tokens=False) + tokenizer.encode(
        text[at:], add_special_tokens=False) != tokenizer.encode(text, add_special_tokens=False)


def test_a_tokenizer_without_backend_is_refused() -> None:
    assert not supports_cuts(object())


# ------------------------------------------------------------------------------- exactness


@given(head=SEAM_TEXT, data=SEAM_TEXT, after=SEAM_TEXT, tail=SEAM_TEXT, labels=LABELS)
@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_fast_path_equals_one_call(
    engine: TextOnly, head: str, data: str, after: str, tail: str, labels: list[str]
) -> None:
    """prefix = template words + data (untrusted) + more template; the cut falls in the data or
    the template; the result is the one-call encoding, labels included."""
    prefix = "Grade this answer.\n" + head + mark("An answer " + data) + after
    suffix = tail + '{"criterion_status": "'
    assert engine._head_cut(prefix) is not None  # the fast path really runs
    prompt, label_ids, error = engine.score_tokens(prefix, suffix, labels)
    assert (prompt, label_ids, error) == one_call(engine, prefix, suffix, labels)
    assert engine.prompt_tokens(prefix, suffix) == prompt
    if not engine._runs_mode(split_marked(prefix + suffix)):  # else special strings in data are text
        assert prompt == engine.tokenizer.encode(plain(prefix + suffix), add_special_tokens=False)


@given(tail=SEAM_TEXT, labels=LABELS)
@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_labels_read_after_the_windows_own_cut_equal_one_call(engine: TextOnly, tail: str, labels: list[str]) -> None:
    """A prompt whose window (the text after the prefix's cut) has a cut of its own: its labels'
    ids come from the text after that cut (``_label_after``, memoised across items) and equal
    the one-call encoding, seams included."""
    prefix = "Grade this answer.\n" + mark("An answer about cells") + "\nEnd of the answer.\n"
    suffix = "Criterion: it names a cell chemistry." + tail + ' verdict: "'
    _, _, right = engine._joined_parts(prefix, suffix)
    assert right is not None  # the window has its own cut: the path under test runs
    engine.__dict__.pop("_label_tails", None)
    got = engine.score_tokens(prefix, suffix, labels)
    assert got == one_call(engine, prefix, suffix, labels)
    assert (right, labels[0]) in engine.__dict__["_label_tails"]
    # a second item with the same criterion reads the memo and still equals one call
    other = "Grade this answer.\n" + mark("Another answer, longer") + "\nEnd of the answer.\n"
    assert engine.score_tokens(other, suffix, labels) == one_call(engine, other, suffix, labels)


def test_plain_labels_take_the_memoised_path(engine: TextOnly) -> None:
    """Verdict labels after a criterion's ending are read by ``_label_after`` (a memo entry
    holding ids) exactly when encoding prompt + label in one call keeps the prompt's ids; a seam
    (the Gemma-style BPE merges the closing quote with the label) gets None, which sends the label
    down the whole-prompt path."""
    prefix = "Grade this answer.\n" + mark("An answer about cells") + "\nEnd of the answer.\n"
    suffix = 'Criterion: it names a cell chemistry.\n{"criterion_status": "'
    labels = ['MET"', 'UNMET"', 'CANNOT_ASSESS"']
    engine.__dict__.pop("_label_tails", None)
    assert engine.score_tokens(prefix, suffix, labels) == one_call(engine, prefix, suffix, labels)
    memo = engine.__dict__["_label_tails"]
    assert sorted(label for _, label in memo) == sorted(labels)
    prompt = engine._encode_marked(prefix + suffix)
    for (_, label), ids in memo.items():
        joint = engine._encode_marked(prefix + suffix + label)
        keeps_prompt = len(joint) > len(prompt) and joint[: len(prompt)] == prompt
        assert (ids is not None) == keeps_prompt, label
        if keeps_prompt:
            assert ids == joint[len(prompt) :]


def test_planned_prompts_equal_one_call(engine: TextOnly) -> None:
    """Every judgment of real planned prompts (bench workload and the bundled example), with a
    special-token string of the tokenizer inside one submission."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    from bench_workload import build_items

    from autorubric_local.graders.planning import plan_tasks

    items = build_items(3, 1)
    special = sorted(engine._control_tokens()[1])[0]
    items[1] = items[1].__class__(**{**items[1].__dict__, "submission": items[1].submission + f" then {special} x "})
    tasks = plan_tasks(items, [("j", engine.format_chat)], shuffle_options=False)
    assert any(engine._runs_mode(split_marked(t.prefix)) for t in tasks)
    for task in tasks:
        labels = list(task.labels())
        assert engine.score_tokens(task.prefix, task.suffix, labels) == one_call(
            engine, task.prefix, task.suffix, labels)


def test_seam_errors_are_reported_as_before(engine: TextOnly) -> None:
    prefix = "Grade this answer.\n" + mark("An answer")
    _, labels, error = engine.score_tokens(prefix, " ok: ", ["MET", ""])
    assert labels == [] and error == "infrastructure: a label is the empty string"
