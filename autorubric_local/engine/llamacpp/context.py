"""A llama.cpp context driven through llama-cpp-python's C API: token batches, sequences, logits.

Used by :mod:`.backend` alone. It wraps the few calls the judge engine needs:
decode a run of tokens into one KV sequence (asking for logits at chosen positions only),
decode one token for each of several sequences in one batch, copy or drop the cached
positions of a sequence, and read a logits row as a NumPy view. llama-cpp-python is imported
lazily; nothing here runs without it.

KV positions are tracked by the caller (:class:`SequenceState` records which tokens sit in
each sequence), so a new prompt can reuse the longest cached prefix: positions after it are
dropped with ``llama_memory_seq_rm`` and only the rest is decoded. That needs a cache whose
positions can be dropped at any point; for sliding-window models the context is built with
``swa_full=True`` (the full-size cache for the windowed layers too).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


class DecodeError(RuntimeError):
    """llama.cpp refused a batch (``llama_decode`` returned non-zero)."""


@dataclass
class SequenceState:
    """The tokens held in one KV sequence, in position order."""

    tokens: list[int] = field(default_factory=list)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class LlamaContext:
    """One llama.cpp model + context with ``n_seq`` KV sequences over one unified cache.

    Parameters
    ----------
    gguf : path of the GGUF file, loaded as stored (memory-mapped, no conversion).
    n_ctx : KV cells (tokens) shared by all sequences.
    n_seq : sequences (``n_seq_max``).
    n_batch : most tokens per ``llama_decode`` call.
    n_threads : CPU threads for prefill and decode.
    n_gpu_layers : layers offloaded to a GPU (needs a GPU build; -1: all).

    Flash attention is off: with llama.cpp's CPU flash attention (its "auto" enables it) a
    SmolLM2 label log-probability scored in a busy cache differed by up to 0.31 from the same
    request scored alone; with it off, by 0.0. The cache is unified (one for all sequences),
    which copying a prefix between sequences needs.

    Raises
    ------
    RuntimeError
        If llama.cpp cannot load the file or build the context.
    """

    def __init__(self, gguf: str, *, n_ctx: int, n_seq: int, n_batch: int, n_threads: int,
                 n_gpu_layers: int = 0) -> None:
        import llama_cpp
        from llama_cpp import _logger

        _logger.set_verbose(False)  # llama.cpp's load log only on errors
        self._lib = llama_cpp
        self._model = self.ctx = self._batch = None
        llama_cpp.llama_backend_init()
        model_params = llama_cpp.llama_model_default_params()
        model_params.n_gpu_layers = n_gpu_layers
        # No repacked weight layouts: their GEMM kernels run on 4-row tiles and the leftover
        # rows of a batch on GEMV, so a token's result would depend on the batch it is in.
        model_params.use_extra_bufts = False
        self._model = llama_cpp.llama_model_load_from_file(gguf.encode(), model_params)
        if not self._model:
            raise RuntimeError("llama_model_load_from_file failed (not a GGUF llama.cpp can read)")
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = params.n_ubatch = n_batch
        params.n_seq_max = n_seq
        params.n_threads = params.n_threads_batch = n_threads
        params.swa_full = True  # windowed layers keep every position, so any prefix can be kept
        params.kv_unified = True
        params.no_perf = True
        params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
        self.ctx = llama_cpp.llama_init_from_model(self._model, params)
        if not self.ctx:
            raise RuntimeError(f"llama_init_from_model failed (n_ctx={n_ctx}, n_seq={n_seq})")
        self.n_ctx = int(llama_cpp.llama_n_ctx(self.ctx))
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(self._model)))
        self.n_swa = int(llama_cpp.llama_model_n_swa(self._model))
        self.n_seq = n_seq
        self.n_batch = n_batch
        self.sequences = [SequenceState() for _ in range(n_seq)]
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, n_seq)
        self._memory = llama_cpp.llama_get_memory(self.ctx)

    def close(self) -> None:
        """Free the batch, the context and the model."""
        lib = self._lib
        if self._batch is not None:
            lib.llama_batch_free(self._batch)
            self._batch = None
        if self.ctx:
            lib.llama_free(self.ctx)
            self.ctx = None
        if self._model:
            lib.llama_model_free(self._model)
            self._model = None

    def __del__(self) -> None:  # pragma: no cover - interpreter shutdown order varies
        try:
            self.close()
        except Exception:
            pass

    # ------------------------------------------------------------------ KV bookkeeping
    def truncate(self, seq: int, keep: int) -> None:
        """Drop the positions ``>= keep`` of sequence ``seq``; all of them if the rest is unusable.

        A sliding-window model's windowed layers may have recycled the cells of positions
        that fell out of the window while the sequence ran further (llama.cpp's slot search
        treats them as free even with ``swa_full``). A prefix can be kept only if every
        position its next token attends to, ``[keep - n_swa, keep)``, is still cached;
        otherwise the whole sequence is dropped and recomputed.
        """
        state = self.sequences[seq]
        if keep < len(state.tokens):
            if not self._lib.llama_memory_seq_rm(self._memory, seq, keep, -1):
                raise DecodeError(f"llama.cpp could not drop positions {keep}.. of sequence {seq}")
            del state.tokens[keep:]
        if 0 < keep <= len(state.tokens) and not self._window_intact(seq, keep):
            self._lib.llama_memory_seq_rm(self._memory, seq, -1, -1)
            state.tokens.clear()

    def _window_intact(self, seq: int, length: int) -> bool:
        """Whether the positions the next token after ``length`` attends to are all cached."""
        if self.n_swa <= 0:
            return True
        lowest = int(self._lib.llama_memory_seq_pos_min(self._memory, seq))
        return lowest <= max(0, length - self.n_swa)

    def copy_prefix(self, src: int, dst: int, length: int) -> None:
        """Make sequence ``dst`` hold the first ``length`` positions of ``src`` (shared cells, no compute)."""
        self.truncate(dst, 0)
        if length:
            self._lib.llama_memory_seq_cp(self._memory, src, dst, 0, length)
            self.sequences[dst].tokens = list(self.sequences[src].tokens[:length])
            if not self._window_intact(dst, length):
                self.truncate(dst, 0)

    def clear_others(self, seq: int) -> None:
        """Empty every sequence but ``seq`` (frees their cells for it)."""
        for other in range(self.n_seq):
            if other != seq:
                self.truncate(other, 0)

    def reuse(self, seq: int, tokens: Sequence[int]) -> int:
        """Keep the longest cached prefix of ``tokens`` in ``seq``; return its length.

        At most ``len(tokens) - 1`` is kept, so the last token is always decoded again and its
        logits are available.
        """
        keep = min(common_prefix(self.sequences[seq].tokens, tokens), len(tokens) - 1)
        self.truncate(seq, keep)
        return len(self.sequences[seq].tokens)

    # ------------------------------------------------------------------ decoding
    def extend(self, seq: int, tokens: Sequence[int], wanted: Sequence[int]) -> dict[int, np.ndarray]:
        """Decode ``tokens`` after sequence ``seq``'s cached positions; logits at ``wanted``.

        Parameters
        ----------
        tokens : token ids appended to the sequence, in order.
        wanted : absolute positions (within the sequence) whose next-token logits are returned;
            each must be among the appended positions.

        Returns
        -------
        dict position -> float32 array of shape (n_vocab,), a copy of that position's logits.

        Raises
        ------
        DecodeError
            If llama.cpp refuses a batch (e.g. the context is full).
        """
        state = self.sequences[seq]
        start = len(state.tokens)
        want = set(wanted)
        rows: dict[int, np.ndarray] = {}
        for offset, end in _batches(len(tokens), self.n_batch):
            piece = tokens[offset:end]
            flags = [start + offset + i in want for i in range(len(piece))]
            self._fill(piece, [start + offset + i for i in range(len(piece))], [seq] * len(piece), flags)
            self._decode()
            state.tokens.extend(piece)
            for i, flag in enumerate(flags):
                if flag:
                    rows[start + offset + i] = self.logits(i).copy()
        return rows

    def step(self, seqs: Sequence[int], tokens: Sequence[int]) -> list[np.ndarray]:
        """Decode one token per sequence in one batch; the logits after each (copies, in order)."""
        rows: list[np.ndarray] = []
        for offset in range(0, len(seqs), self.n_batch):
            part = list(range(offset, min(offset + self.n_batch, len(seqs))))
            positions = [len(self.sequences[seqs[i]].tokens) for i in part]
            self._fill([tokens[i] for i in part], positions, [seqs[i] for i in part], [True] * len(part))
            self._decode()
            for k, i in enumerate(part):
                self.sequences[seqs[i]].tokens.append(tokens[i])
                rows.append(self.logits(k).copy())
        return rows

    def logits(self, index: int) -> np.ndarray:
        """View of the logits row of batch entry ``index`` of the last decode, shape (n_vocab,)."""
        pointer = self._lib.llama_get_logits_ith(self.ctx, index)
        return np.ctypeslib.as_array(ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), shape=(self.n_vocab,))

    def _fill(self, tokens: Sequence[int], positions: Sequence[int], seqs: Sequence[int], flags: Sequence[bool]) -> None:
        batch = self._batch
        batch.n_tokens = len(tokens)
        for i, (token, position, seq, flag) in enumerate(zip(tokens, positions, seqs, flags, strict=True)):
            batch.token[i] = token
            batch.pos[i] = position
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seq
            batch.logits[i] = flag

    def _decode(self) -> None:
        status = self._lib.llama_decode(self.ctx, self._batch)
        if status != 0:
            raise DecodeError(f"llama_decode returned {status} (1: no KV slot for the batch; <0: error)")


MIN_BATCH = 16
"""Fewest tokens a decode batch of scoring holds (unless fewer are decoded in all): llama.cpp's CPU
kernels for short batches are others than for long ones and give other results (measured: one
token on SmolLM2's Q4_1 file, up to seven on Gemma's Q4_K file; batches of 8 to 512 agree with
each other; ``scripts/eval_llamacpp_plain.py``)."""


def _batches(count: int, size: int) -> list[tuple[int, int]]:
    """``[start, end)`` spans of ``count`` tokens in batches of at most ``size``, the last of at
    least :data:`MIN_BATCH` (or ``count``) tokens: a short last batch takes tokens from the one
    before it."""
    spans = [(start, min(start + size, count)) for start in range(0, count, size)]
    short = MIN_BATCH - (spans[-1][1] - spans[-1][0]) if spans else 0
    if len(spans) > 1 and short > 0 and size >= 2 * MIN_BATCH:
        (a, b), (_, d) = spans[-2], spans[-1]
        spans[-2:] = [(a, b - short), (b - short, d)]
    return spans
