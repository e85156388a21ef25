"""Grammar-constrained token choice: an Outlines-compiled regex applied to one branch's logits.

Outlines (``outlines_core``) compiles the regex against the model's vocabulary into an
``Index`` once; each decoding branch walks it with its own ``Guide``. At every step the branch's
logits are masked to the tokens the grammar allows, then the token is chosen greedily or by
temperature sampling, and the guide advances. A branch whose guide is finished has produced a
complete match.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
    """

    index: Any
    temperature: float = 0.0
    banned: tuple[int, ...] = ()

    @classmethod
    def from_transformers(cls, model: Any, tokenizer: Any, regex: str, *, temperature: float = 0.0) -> RegexGrammar:
        """Compile ``regex`` for a Hugging Face model's tokenizer with the outlines_core backend."""
        import outlines
        from outlines.backends import get_regex_logits_processor

        processor = get_regex_logits_processor("outlines_core", outlines.from_transformers(model, tokenizer), regex)
        banned = tuple(sorted(set(getattr(tokenizer, "all_special_ids", []) or [])))
        return cls(index=processor.index, temperature=temperature, banned=banned)

    def new_guide(self) -> Any:
        """A fresh walker at the grammar's start state."""
        from outlines_core import Guide

        return Guide(self.index)

    def choose(self, guide: Any, logits: Any, sampler: Any = None) -> int:
        """Pick the next token of ``guide``'s branch from ``logits`` (shape (vocab,)) and advance.

        Tokens past the tokenizer's vocabulary (padding rows of the embedding) are never allowed.
        """
        import torch

        allowed = torch.tensor(guide.get_tokens(), dtype=torch.long, device=logits.device)
        allowed = allowed[allowed < logits.shape[-1]]
        if self.banned:
            allowed = allowed[~torch.isin(allowed, torch.tensor(self.banned, device=allowed.device))]
        scores = logits[allowed].float()
        if self.temperature > 0 and sampler is not None:
            probabilities = torch.softmax(scores / self.temperature, dim=-1).cpu()
            pick = int(torch.multinomial(probabilities, 1, generator=sampler).item())
        else:
            pick = int(torch.argmax(scores).item())
        token = int(allowed[pick].item())
        guide.advance(token_id=token, return_tokens=False)
        return token
