"""Grammar-constrained token choice: an Outlines-compiled regex applied to one branch's logits.

Outlines (``outlines_core``) compiles the regex against the model's vocabulary into an
``Index`` once; each decoding branch walks it with its own ``Guide``. At every step the branch's
logits are masked to the tokens the grammar allows, then the token is chosen greedily or by
temperature sampling, and the guide advances. A branch whose guide is finished has produced a
complete match.

The engines need one grammar, the body of a JSON string (:data:`JSON_STRING_BODY_REGEX`), in
two lengths: any length, or one sentence (:data:`JSON_SENTENCE_BODY_REGEX`, chosen per request
by ``GenerateRequest.sentence``); :func:`split_string_body` decodes what was generated,
whichever backend generated it. A request may bring its own regex instead
(``GenerateRequest.pattern``: ``LLMClient`` on a local engine), such as
:data:`FREE_TEXT_REGEX`; :func:`read_generated` reads either kind.

Where a regex may end (a final state of its automaton), Outlines allows the vocabulary's
end-of-sequence token: a branch then ends when it chooses it, or where the regex can only end
(:meth:`RegexGrammar.new_guide`). Every other special token stays banned.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# Body of a JSON string followed by its closing quote: no raw quote, backslash or control
# character; escapes limited to the JSON ones.
JSON_STRING_BODY_REGEX = r'([^"\\\x00-\x1f]|\\["\\/bfnrt])*"'

_CHAR = r'([^"\\\x00-\x1f.!?]|\\["\\/bfnrt])'
# One sentence: a sentence end (. ! ?) is followed either by the closing quote, which ends the
# string, or by a character that cannot start a new sentence (not a space, newline, quote or
# another sentence end), as in "3.5" or "U.S.A"; so the body stops at its first
# sentence end instead of running on to the token budget.
JSON_SENTENCE_BODY_REGEX = rf'({_CHAR}|[.!?][^"\\\x00-\x1f.!? ])*[.!?]?"'

FREE_TEXT_REGEX = r"(?s:.*)"
"""Any text: it ends at the model's end-of-sequence token or the token budget."""


@dataclass
class RegexGrammar:
    """A compiled regex over a tokenizer's vocabulary.

    Attributes
    ----------
    index : outlines_core.Index
    banned : tuple of int
        Token ids never chosen even where the regex would match their text: the tokenizer's
        special tokens (``<|im_start|>`` inside an explanation would read as a chat turn).
    temperature : float
        0 chooses the most likely allowed token; above 0 samples from the allowed tokens.
    eos : tuple of int
        The vocabulary's end-of-sequence token: allowed (though special) where the regex may
        end, and ending the branch when chosen (:class:`StoppingGuide`). Empty: never chosen.
    """

    index: Any
    temperature: float = 0.0
    banned: tuple[int, ...] = ()
    eos: tuple[int, ...] = ()
    _allowed: dict[tuple[Any, ...], Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_transformers(cls, model: Any, tokenizer: Any, regex: str, *, temperature: float = 0.0) -> RegexGrammar:
        """Compile ``regex`` for a Hugging Face model's tokenizer with the outlines_core backend."""
        import outlines
        from outlines.backends import get_regex_logits_processor

        processor = get_regex_logits_processor("outlines_core", outlines.from_transformers(model, tokenizer), regex)
        banned = tuple(sorted(set(getattr(tokenizer, "all_special_ids", []) or [])))
        return cls(index=processor.index, temperature=temperature, banned=banned,
                   eos=_eos(getattr(tokenizer, "eos_token_id", None)))

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, regex: str, *, temperature: float = 0.0) -> RegexGrammar:
        """Compile ``regex`` for a Hugging Face tokenizer alone (no model object; llama.cpp backend).

        The vocabulary is built as Outlines builds it for a transformers model
        (``OutlinesCoreBackend.create_outlines_core_vocabulary`` over Outlines'
        ``TransformerTokenizer``), so both backends walk the same grammar.
        """
        from outlines.backends.outlines_core import OutlinesCoreBackend
        from outlines.models.transformers import TransformerTokenizer
        from outlines_core import Index

        wrapped = TransformerTokenizer(tokenizer)
        vocabulary = OutlinesCoreBackend.create_outlines_core_vocabulary(
            wrapped.vocabulary, wrapped.eos_token_id, wrapped.eos_token, wrapped.convert_token_to_string)
        banned = tuple(sorted(set(getattr(tokenizer, "all_special_ids", []) or [])))
        index = Index(regex, vocabulary)
        return cls(index=index, temperature=temperature, banned=banned, eos=_eos(wrapped.eos_token_id))

    def new_guide(self) -> Any:
        """A fresh walker at the grammar's start state (a :class:`StoppingGuide` when ``eos`` is set)."""
        from outlines_core import Guide

        guide = Guide(self.index)
        return StoppingGuide(guide, self) if self.eos else guide

    def only_ends(self, guide: Any) -> bool:
        """Whether ``guide``'s state allows nothing but the end-of-sequence token (built once per state)."""
        key = ("ends", guide.get_state())
        ends = self._allowed.get(key)
        if ends is None:
            ends = set(guide.get_tokens()) <= set(self.eos)
            self._allowed[key] = ends
        return bool(ends)

    def allowed_ids(self, guide: Any, vocab: int, device: Any) -> Any:
        """Long tensor of the token ids ``guide``'s state allows, in the grammar's own order.

        Tokens past the logits' width ``vocab`` (padding rows of the embedding) and the banned
        ones are left out. Built once per state, vocabulary width and device.
        """
        import torch

        key = (guide.get_state(), vocab, str(device))
        allowed = self._allowed.get(key)
        if allowed is None:  # a grammar has few states: each state's token set is built once
            allowed = torch.tensor(guide.get_tokens(), dtype=torch.long, device=device)
            allowed = allowed[allowed < vocab]
            banned = [token for token in self.banned if token not in self.eos]
            if banned:
                allowed = allowed[~torch.isin(allowed, torch.tensor(banned, device=allowed.device))]
            self._allowed[key] = allowed
        return allowed

    def allowed_mask(self, guide: Any, vocab: int, device: Any) -> Any:
        """Bool tensor (vocab,): True at the ids :meth:`allowed_ids` lists (built once per state)."""
        import torch

        key = ("mask", guide.get_state(), vocab, str(device))
        mask = self._allowed.get(key)
        if mask is None:
            mask = torch.zeros(vocab, dtype=torch.bool, device=device)
            mask[self.allowed_ids(guide, vocab, device)] = True
            self._allowed[key] = mask
        return mask

    def choose(self, guide: Any, logits: Any, sampler: Any = None) -> int:
        """Pick the next token of ``guide``'s branch from ``logits`` (shape (vocab,)) and advance.

        Tokens past the tokenizer's vocabulary (padding rows of the embedding) are never allowed.
        Greedy ties go to the id listed first by the grammar (:meth:`allowed_ids`).
        """
        import torch

        allowed = self.allowed_ids(guide, logits.shape[-1], logits.device)
        scores = logits[allowed].float()
        if self.temperature > 0 and sampler is not None:
            probabilities = torch.softmax(scores / self.temperature, dim=-1).cpu()
            pick = int(torch.multinomial(probabilities, 1, generator=sampler).item())
        else:
            pick = int(torch.argmax(scores).item())
        token = int(allowed[pick].item())
        guide.advance(token_id=token, return_tokens=False)
        return token


def choose_tokens(grammars: Sequence[RegexGrammar], guides: Sequence[Any], logits: Any, sampler: Any = None) -> list[int]:
    """Next token of every branch at once from ``logits`` (shape (n_branches, vocab)); advances each guide.

    Row ``i`` is masked to what ``grammars[i]`` allows in ``guides[i]``'s state
    (:meth:`RegexGrammar.allowed_mask`), then all rows are chosen in one tensor operation:

    - greedy (no sampler, or temperature 0): the allowed token of highest logit; a tie is broken
      as :meth:`RegexGrammar.choose` breaks it, so the tokens equal choosing branch by branch;
    - sampling (a sampler and temperature > 0, the same for every grammar): one
      ``torch.multinomial`` draw over the rows' softmax at that temperature, from the seeded CPU
      ``sampler``. Reproducible for a seed, but not the draws of calling ``choose`` per branch.

    Returns the chosen token ids, length n_branches.

    Raises
    ------
    ValueError
        If the grammars sample at different temperatures, or the lengths disagree.
    """
    import torch

    if not (len(grammars) == len(guides) == logits.shape[0]):
        raise ValueError(f"{len(grammars)} grammars, {len(guides)} guides, {logits.shape[0]} logit rows")
    temperatures = {g.temperature for g in grammars}
    if len(temperatures) > 1:
        raise ValueError(f"grammars sample at different temperatures {sorted(temperatures)}")
    vocab, device = logits.shape[-1], logits.device
    mask = torch.stack([g.allowed_mask(guide, vocab, device) for g, guide in zip(grammars, guides, strict=True)])
    scores = logits.float().masked_fill(~mask, float("-inf"))
    temperature = temperatures.pop()
    if temperature > 0 and sampler is not None:
        probabilities = torch.softmax(scores / temperature, dim=-1).cpu()
        tokens = torch.multinomial(probabilities, 1, generator=sampler)[:, 0].tolist()
    else:
        top = scores.topk(min(2, vocab), dim=-1)  # one pass: the best and, to spot ties, the runner-up
        tokens = top.indices[:, 0].tolist()
        tied = (top.values[:, 0] == top.values[:, -1]).nonzero()[:, 0].tolist() if vocab > 1 else []
        for row in tied:  # rare: resolve in the grammar's order, as choose does
            allowed = grammars[row].allowed_ids(guides[row], vocab, device)
            tokens[row] = int(allowed[int(torch.argmax(logits[row, allowed].float()))])
    for guide, token in zip(guides, tokens, strict=True):
        guide.advance(token_id=token, return_tokens=False)
    return tokens


class StoppingGuide:
    """An Outlines ``Guide`` that ends its branch at the end-of-sequence token.

    Outlines allows that token where the regex may end but cannot advance on it; this walker
    records it instead. :meth:`is_finished` is True once it was chosen, or where the regex can
    only end (e.g. after a JSON string's closing quote), so a regex that may go on (free text)
    runs until the model ends it or the budget does.
    """

    def __init__(self, guide: Any, grammar: RegexGrammar) -> None:
        self.guide = guide
        self.grammar = grammar
        self.ended = False

    def get_state(self) -> Any:
        return self.guide.get_state()

    def get_tokens(self) -> list[int]:
        return self.guide.get_tokens()

    def advance(self, token_id: int, return_tokens: bool = False) -> Any:
        if token_id in self.grammar.eos:
            self.ended = True
            return None
        return self.guide.advance(token_id=token_id, return_tokens=return_tokens)

    def is_finished(self) -> bool:
        return self.ended or self.grammar.only_ends(self.guide)


def _eos(eos_token_id: Any) -> tuple[int, ...]:
    """The end-of-sequence token the Outlines vocabulary was built with, as ``RegexGrammar.eos``
    (Outlines takes the tokenizer's ``eos_token_id``; empty when it has none)."""
    return () if eos_token_id is None else (int(eos_token_id),)


def read_generated(request: Any, tokenizer: Any, ids: Sequence[int]) -> tuple[str, bool]:
    """The text of ``ids`` generated for ``request`` (a ``GenerateRequest``) and whether it was
    cut inside a JSON string: a JSON string body is decoded by :func:`split_string_body`; a
    request with its own ``pattern`` gets the text as generated, without its end-of-sequence
    token (special tokens are never part of the text), and ``False``."""
    if getattr(request, "pattern", None) is None:
        return split_string_body(tokenizer.decode(ids))
    return tokenizer.decode(ids, skip_special_tokens=True), False


def seeded_sampler(temperature: float, seed: int | None) -> Any:
    """``None`` for greedy decoding (``temperature <= 0``), else a CPU torch generator seeded
    with ``seed`` (0 when None), for :meth:`RegexGrammar.choose`."""
    if temperature <= 0:
        return None
    import torch

    generator = torch.Generator(device="cpu")
    generator.manual_seed(seed if seed is not None else 0)
    return generator


def split_string_body(raw: str) -> tuple[str, bool]:
    """Decode a generated JSON string body (closing quote included if it was reached).

    Returns ``(text, truncated)``: the unescaped text, and whether decoding stopped at the token
    budget before the closing quote. A dangling escape at a cut is dropped.
    """
    closed = raw.endswith('"') and _trailing_backslashes(raw[:-1]) % 2 == 0
    body = raw[:-1] if closed else raw
    if not closed and _trailing_backslashes(body) % 2 == 1:
        body = body[:-1]
    truncated = not closed
    try:
        return json.loads('"' + body + '"'), truncated
    except json.JSONDecodeError:
        # Only possible for a cut inside an escape sequence: keep the text without escapes.
        return body.replace("\\", ""), truncated


def _trailing_backslashes(text: str) -> int:
    return len(text) - len(text.rstrip("\\"))
