"""Text handling shared by backends that wrap a Hugging Face tokenizer.

Prompt formats
--------------
``"chat"``: the tokenizer's own chat template (instruction-tuned judges). ``"completion"``: a
plain-text layout for base (pretrained, non-chat) models, :func:`format_completion`, preceded
by the tokenizer's BOS token when its encoder adds one (Gemma, Llama) so the model sees the
start of a document as in pretraining. ``"auto"`` picks ``"chat"`` when the tokenizer has a
chat template, else ``"completion"``.

Exact tokenization
------------------
The token sequence scored for a judgment is the tokenizer's encoding of the whole rendered
prompt (``prefix + suffix``, one call), followed by the label's continuation tokens
(:meth:`HFTextMixin.label_tokens`): the tokens that encoding ``prompt + label`` in one call
adds after the prompt's own tokens. When that joint encoding re-tokenizes the end of the prompt
(a *seam*: BPE merging the prompt's last characters with the label's first, such as a trailing
space), the label is instead scored as its own encoding after the unchanged prompt tokens,
which is what the model emits when it continues the prompt, and only after checking that
decoding ``prompt tokens + label tokens`` gives back ``prompt + label``; if it does not, the
request fails with an error (:class:`SeamError`) rather than score some other text.

Shared heads are encoded once: :meth:`HFTextMixin.score_tokens` and
:meth:`HFTextMixin.prompt_tokens` encode ``prefix + suffix`` (and ``prefix + suffix + label``)
as the prefix's tokens up to its last *hard cut*, computed once per prefix, followed by one call
over the text from the cut on. A hard cut is a position where the tokenizer provably gives the
same tokens in two calls as in one (:mod:`.token_cuts`, which says for which tokenizers); for
any other tokenizer, or a prefix without one, the whole text is encoded in one call. Either
way the ids are those of one call over the whole text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from autorubric_local.engine.direct_encode import Encoder, direct_encoder
from autorubric_local.engine.token_cuts import first_cut, join_pieces, last_cut, split_at, supports_cuts
from autorubric_local.engine.user_text import split_marked

_MAX_MEMOISED = 100_000
_MAX_HEADS = 256
"""Prefixes whose encoding up to their last hard cut is kept (most recent first out last)."""
_MAX_SHARED_HEADS = 64
"""Prefix texts before their first untrusted span (system text, instructions) kept."""
_MAX_WINDOW_OPENINGS = 64
"""Texts between a prefix's cut and the window's first cut kept (the end of the item's own text
and the template after it: the same for every criterion of an item)."""
_MAX_WINDOW_HEADS = 1024
"""Texts between a window's first and last cuts kept (most of a criterion's text: the same for
every item)."""
_MAX_WINDOW_TAILS = 4096
"""Texts after a prompt's last cut kept (a criterion's end, the answer opening, a label)."""

PromptFormat = Literal["auto", "chat", "completion"]

_Right = tuple[tuple[tuple[str, bool], ...], bool]
"""A window's pieces after its last hard cut, and whether it is encoded in runs mode."""

COMPLETION_ANSWER_HEADER = "### Answer (JSON)\n"
"""Where a completion-format prompt hands over to the judge's answer."""


class SeamError(ValueError):
    """A label whose tokens after the prompt do not spell the label (no exact scoring possible)."""


def format_completion(messages: list[dict[str, str]], bos: str = "") -> str:
    """Render chat ``messages`` as one plain-text document for a base model, answer opened.

    Layout: ``bos``, the system text, then each user message under ``### Task`` and each
    assistant message under ``### Answer (JSON)``, blocks separated by a blank line, ending
    with an open ``### Answer (JSON)`` block for the judge to complete.
    """
    headers = {"system": "", "user": "### Task\n", "assistant": COMPLETION_ANSWER_HEADER}
    blocks = [headers.get(m["role"], f"### {m['role'].title()}\n") + m["content"] for m in messages]
    return bos + "\n\n".join(blocks) + "\n\n" + COMPLETION_ANSWER_HEADER


class HFTextMixin:
    """``tokens`` (memoised, no special tokens added) and ``format_chat`` over ``self.tokenizer``."""

    tokenizer: Any
    _token_cache: dict[str, list[int]]
    prompt_format: Literal["chat", "completion"] = "chat"

    def set_prompt_format(self, prompt_format: PromptFormat) -> None:
        """Choose how :meth:`format_chat` renders prompts (module docstring, "Prompt formats").

        Raises
        ------
        ValueError
            ``"chat"`` for a tokenizer without a chat template, or an unknown format.
        """
        has_template = bool(getattr(self.tokenizer, "chat_template", None))
        if prompt_format == "auto":
            prompt_format = "chat" if has_template else "completion"
        if prompt_format not in ("chat", "completion"):
            raise ValueError(f"prompt_format must be 'auto', 'chat' or 'completion', got {prompt_format!r}")
        if prompt_format == "chat" and not has_template:
            raise ValueError("prompt_format 'chat' needs a tokenizer with a chat template; this one has none "
                             "(a base model: use 'completion' or 'auto')")
        self.prompt_format = prompt_format

    def tokens(self, text: str) -> list[int]:
        """Token ids of ``text`` as the tokenizer encodes it, except that data text stays text.

        Spans marked untrusted (:mod:`.user_text`) never yield a special token:

        - when no special-token string lies in (or reaches into) a marked span, the prompt is
          encoded in one call as the tokenizer would encode ``plain(text)``: the marks add no
          seam, and the template's special-token strings become their ids;
        - otherwise the template's own special tokens (strings wholly in trusted text) become
          their ids, and each run of text between two of them, trusted and untrusted together,
          is encoded in one call with special-token parsing off, so the strings in data are
          read as characters. Tokenizers that prepend a word-boundary marker per call
          (SentencePiece-style) may then add one at those runs' starts: the price of
          reading hostile text safely.

        Memoised.
        """
        cache = self.__dict__.setdefault("_token_cache", {})
        cached = cache.get(text)
        if cached is None:
            cached = self._encode_marked(text)
            if len(cache) < _MAX_MEMOISED:
                cache[text] = cached
        return cached

    def _encode_marked(self, text: str) -> list[int]:
        pieces = split_marked(text)
        return self._encode_pieces(pieces, self._runs_mode(pieces))

    def _runs_mode(self, pieces: list[tuple[str, bool]]) -> bool:
        """Whether a special-token string reaches into untrusted text (then runs are encoded
        apart with special-token parsing off, :meth:`tokens`)."""
        pattern, _ = self._control_tokens()
        return pattern is not None and _special_in_untrusted(pieces, pattern)

    def _encode_pieces(self, pieces: list[tuple[str, bool]], runs_mode: bool) -> list[int]:
        """Ids of the marked text split as ``pieces``: one call (``runs_mode`` False) or the
        template's special tokens as ids and the runs between them encoded apart."""
        if not runs_mode:
            return self._encoder()("".join(piece for piece, _ in pieces), False)
        encode = self._encoder()
        pattern, ids_of = self._control_tokens()
        assert pattern is not None
        out: list[int] = []
        run: list[str] = []

        def flush() -> None:
            if run:
                out.extend(encode("".join(run), True))
                run.clear()

        for piece, untrusted in pieces:
            if untrusted:
                run.append(piece)
                continue
            position = 0
            for found in pattern.finditer(piece):
                run.append(piece[position : found.start()])
                flush()
                out.append(ids_of[found.group()])
                position = found.end()
            run.append(piece[position:])
        flush()
        return out

    def _encoder(self) -> Encoder:
        """``tokenizer.encode`` without its wrapper's cost (:mod:`.direct_encode`), made once."""
        known = self.__dict__.get("_direct_encode")
        if known is None:
            known = self.__dict__["_direct_encode"] = direct_encoder(self.tokenizer)
        return known  # type: ignore[no-any-return]

    def _control_tokens(self) -> tuple[re.Pattern[str] | None, dict[str, int]]:
        """The tokenizer's special-token strings as one pattern (longest first) and their ids."""
        known = self.__dict__.get("_controls")
        if known is None:
            ids_of = {t.content: i for i, t in self.tokenizer.added_tokens_decoder.items() if t.special and t.content}
            ordered = sorted(ids_of, key=len, reverse=True)
            pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
            known = self.__dict__["_controls"] = (pattern, ids_of)
        return known

    def prompt_tokens(self, prefix: str, suffix: str) -> list[int]:
        """Token ids of the whole prompt ``prefix + suffix`` as one call encodes it.

        Equals :meth:`tokens` of the concatenation: no seam at the prefix/suffix boundary. The
        prefix up to its last hard cut is encoded once per prefix (module docstring).
        """
        return self._encode_joined(prefix, suffix)

    def _encode_joined(self, head: str, tail: str) -> list[int]:
        """``_encode_marked(head + tail)``, reusing ``head``'s ids up to its last hard cut."""
        left, window, _ = self._joined_parts(head, tail)
        return left + window

    def _joined_parts(self, head: str, tail: str) -> tuple[list[int], list[int], _Right | None]:
        """``_encode_marked(head + tail)`` as two lists that join to it: ``head``'s ids up to its
        last hard cut (one list object per head and encoding mode, memoised: not to be
        changed) and the ids of the text from that cut on (``([], ids)`` without a cut); then
        the window's text after its own last cut and the encoding mode (:data:`_Right`), or
        None when that window has no cut."""
        cut = self._head_cut(head)
        if cut is None:
            return [], self._encode_marked(head + tail), None
        try:
            tail_pieces = split_marked(tail)
        except ValueError:  # a span opened in head and closed in tail: no piece split to reuse
            return [], self._encode_marked(head + tail), None
        left, rest, left_ids, left_runs = cut
        window = join_pieces(rest, tail_pieces)
        # No special-token string spans the cut (token_cuts), so the whole text's mode is
        # either side's.
        runs_mode = left_runs or self._runs_mode(window)
        if runs_mode not in left_ids:
            left_ids[runs_mode] = self._encode_head(left, runs_mode)
        window_ids, right = self._window_parts(window, runs_mode)
        return left_ids[runs_mode], window_ids, right

    def _encode_head(self, pieces: list[tuple[str, bool]], runs_mode: bool) -> list[int]:
        """``_encode_pieces(pieces, runs_mode)`` for a prefix's part before its last cut, split at
        the last cut of the trusted text before its first untrusted span: the side before (the
        system text and instructions every item shares) memoised, the rest (the item's own
        text) encoded. Exact for the reason every cut is (:mod:`.token_cuts`)."""
        first = next((i for i, (_, untrusted) in enumerate(pieces) if untrusted), len(pieces))
        at = last_cut(pieces[:first])
        if at is None:
            return self._encode_pieces(pieces, runs_mode)
        shared, own = split_at(pieces, at)
        return (self._memo_pieces("_shared_heads", _MAX_SHARED_HEADS, shared, runs_mode)
                + self._encode_pieces(own, runs_mode))

    def _window_parts(self, pieces: list[tuple[str, bool]], runs_mode: bool) -> tuple[list[int], _Right | None]:
        """``_encode_pieces(pieces, runs_mode)`` as up to three parts split at the window's own
        first and last hard cuts, each memoised: the opening (the end of the item's text and the
        template up to the criterion: the same for an item's criteria), the middle (most of a
        criterion's text: the same for every item) and the part after the last cut (the end of
        the criterion and the answer opening: the same for every item). Exact for the reason the
        head's cut is (:mod:`.token_cuts`). Also the part after the last cut and the mode (None
        without a cut), for :meth:`_label_after`."""
        at = last_cut(pieces)
        if at is None:
            return self._encode_pieces(pieces, runs_mode), None
        left, right = split_at(pieces, at)
        tail_ids = self._memo_pieces("_window_tails", _MAX_WINDOW_TAILS, right, runs_mode)
        first = first_cut(left)  # a cut of left is one of the window (both sides of it lie in left)
        if first is None:
            return self._memo_pieces("_window_heads", _MAX_WINDOW_HEADS, left, runs_mode) + tail_ids, (tuple(right), runs_mode)
        opening, middle = split_at(left, first)
        return (self._memo_pieces("_window_openings", _MAX_WINDOW_OPENINGS, opening, runs_mode)
                + self._memo_pieces("_window_heads", _MAX_WINDOW_HEADS, middle, runs_mode)
                + tail_ids), (tuple(right), runs_mode)

    def _label_after(self, right: _Right, label: str) -> list[int] | None:
        """The continuation ids of ``label`` after a prompt whose window ends in ``right`` (its
        text after the window's last hard cut, and the mode), or None when they cannot be read
        there (a seam, or a label holding span markers): the caller then takes the whole-prompt
        path. Memoised per (``right``, ``label``): the same for every item.

        The cut stays a cut with the label appended (it depends only on the characters around
        it, :mod:`.token_cuts`), so the joint window's ids are the part before it followed by
        the ids of ``right + label``; they keep the prompt's ids iff the latter start with the
        ids of ``right``, and the continuation is what follows those.
        """
        memo: dict[tuple[_Right, str], list[int] | None] = self.__dict__.setdefault("_label_tails", {})
        key = (right, label)
        if key in memo:
            found = memo[key]
            return None if found is None else list(found)
        pieces, runs_mode = list(right[0]), right[1]
        found = None
        try:
            label_pieces = split_marked(label)
        except ValueError:
            label_pieces = None
        if label_pieces == [(label, False)]:
            base = self._memo_pieces("_window_tails", _MAX_WINDOW_TAILS, pieces, runs_mode)
            joint = self._encode_pieces(join_pieces(pieces, label_pieces), runs_mode)
            if len(joint) > len(base) and joint[: len(base)] == base:
                found = joint[len(base) :]
        if len(memo) >= _MAX_WINDOW_TAILS:
            del memo[next(iter(memo))]
        memo[key] = found
        return None if found is None else list(found)

    def _memo_pieces(self, name: str, cap: int, pieces: list[tuple[str, bool]], runs_mode: bool) -> list[int]:
        """``_encode_pieces`` memoised in the dict ``name`` of at most ``cap`` entries (oldest out)."""
        memo: dict[tuple[tuple[tuple[str, bool], ...], bool], list[int]] = self.__dict__.setdefault(name, {})
        key = (tuple(pieces), runs_mode)
        ids = memo.get(key)
        if ids is None:
            ids = self._encode_pieces(pieces, runs_mode)
            if len(memo) >= cap:
                del memo[next(iter(memo))]
            memo[key] = ids
        return ids

    def _head_cut(
        self, head: str
    ) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]], dict[bool, list[int]], bool] | None:
        """``head`` split at its last hard cut: the pieces before and after it, the ids before
        it (per encoding mode, filled lazily) and whether the part before it needs runs mode;
        None without a cut (unsupported tokenizer, unbalanced markers, no cut position)."""
        supported = self.__dict__.get("_cuts_ok")
        if supported is None:
            supported = self.__dict__["_cuts_ok"] = supports_cuts(self.tokenizer)
        if not supported:
            return None
        heads: dict[str, Any] = self.__dict__.setdefault("_heads", {})
        if head in heads:
            return heads[head]  # type: ignore[no-any-return]
        try:
            pieces = split_marked(head)
        except ValueError:
            found = None
        else:
            at = last_cut(pieces)
            if at is None:
                found = None
            else:
                left, rest = split_at(pieces, at)
                found = (left, rest, {}, self._runs_mode(left))
        if len(heads) >= _MAX_HEADS:
            del heads[next(iter(heads))]
        heads[head] = found
        return found

    def label_tokens(self, prompt: str, prompt_ids: Sequence[int], label: str) -> list[int]:
        """Continuation token ids of ``label`` after ``prompt`` (whose ids are ``prompt_ids``).

        The tokens the joint encoding of ``prompt + label`` adds after ``prompt_ids`` when it
        keeps them unchanged; otherwise (a seam) the label's own encoding, checked to decode
        back to exactly ``prompt + label`` after ``prompt_ids``. Module docstring, "Exact
        tokenization".

        Raises
        ------
        SeamError
            If no token sequence after ``prompt_ids`` spells ``label`` (or the label is empty).
        """
        if not label:
            raise SeamError("a label is the empty string")
        return self._continuation(prompt, prompt_ids, label, self._encode_marked(prompt + label))

    def _continuation(self, prompt: str, prompt_ids: Sequence[int], label: str, joint: list[int]) -> list[int]:
        """:meth:`label_tokens` given ``joint``, the ids of ``prompt + label`` in one call."""
        n = len(prompt_ids)
        if len(joint) > n and joint[:n] == list(prompt_ids):
            return joint[n:]
        alone = list(self.tokenizer.encode(label, add_special_tokens=False))
        before = self._decode(prompt_ids)
        after = self._decode([*prompt_ids, *alone])
        if alone and after == before + label:
            return alone
        raise SeamError(
            f"label {label!r} cannot be scored exactly: encoding prompt + label re-tokenizes the end of the "
            f"prompt, and the label's own tokens {alone} decode to {after[len(before):]!r} after it"
        )

    def score_tokens(self, prefix: str, suffix: str, labels: Sequence[str]) -> tuple[list[int], list[list[int]], str | None]:
        """A score request's prompt ids, each label's continuation ids, and an error or None.

        The error is ``"infrastructure: ..."`` when a label cannot be tokenized exactly
        (:class:`SeamError`); the label list is then empty. The same ids as
        :meth:`prompt_tokens` and :meth:`label_tokens`, the prefix's head encoded once.
        """
        left, window, right = self._joined_parts(prefix, suffix)
        prompt = left + window
        text = prefix + suffix

        def continuation(label: str) -> list[int]:
            if not label:
                raise SeamError("a label is the empty string")
            found = None if right is None else self._label_after(right, label)
            if found is not None:
                return found
            label_left, label_window, _ = self._joined_parts(prefix, suffix + label)
            # The joint ids keep the prompt's iff, past the shared left part, the label's window
            # starts with the prompt's: compared there, not over the whole prompt.
            if (label_left is left or label_left == left) and len(label_window) > len(window) \
                    and label_window[: len(window)] == window:
                return label_window[len(window) :]
            return self._continuation(text, prompt, label, label_left + label_window)

        try:
            return prompt, [continuation(label) for label in labels], None
        except SeamError as exc:
            return prompt, [], f"infrastructure: {exc}"

    def _decode(self, ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False))

    def format_chat(self, messages: list[dict[str, str]]) -> str:
        """Render ``messages`` in this engine's prompt format, the judge's answer opened.

        ``"chat"``: the tokenizer's chat template with the assistant turn opened;
        ``"completion"``: :func:`format_completion` with the tokenizer's BOS token when its
        encoder adds one.
        """
        if self.prompt_format == "chat" and getattr(self.tokenizer, "chat_template", None):
            return str(self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
        return format_completion(messages, bos=self._bos_text())

    def _bos_text(self) -> str:
        """The BOS token's string when the tokenizer's encoder prepends it by default, else ``""``."""
        known = self.__dict__.get("_bos")
        if known is None:
            bos_id = getattr(self.tokenizer, "bos_token_id", None)
            ids = self.tokenizer.encode("a", add_special_tokens=True) if bos_id is not None else []
            known = self.__dict__["_bos"] = str(self.tokenizer.bos_token) if ids and ids[0] == bos_id else ""
        return known


def _special_in_untrusted(pieces: list[tuple[str, bool]], pattern: re.Pattern[str]) -> bool:
    """Whether a special-token string of the joined text overlaps an untrusted piece."""
    untrusted: list[tuple[int, int]] = []
    position = 0
    for piece, flag in pieces:
        if flag:
            untrusted.append((position, position + len(piece)))
        position += len(piece)
    if not untrusted:
        return False
    joined = "".join(piece for piece, _ in pieces)
    return any(
        start < found.end() and found.start() < end
        for found in pattern.finditer(joined)
        for start, end in untrusted
    )
