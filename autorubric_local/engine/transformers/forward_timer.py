"""Time a model's forward passes: :class:`ForwardTimer` (forward hooks on the top-level module).

Benchmarks split a run's wall time into the engine's forward passes and our own host work
(tokenizing, planning, masks, storage) with it (``scripts/bench_engine.py``).
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["ForwardTimer"]


class ForwardTimer:
    """Wall seconds and number of a model's top-level forward calls (forward hooks).

    One timer per model, shared by every engine over it. On CUDA, kernels run asynchronously:
    set ``synchronize`` to wait for each forward's end before reading the clock (benchmarks);
    without it a forward's seconds are its launch time.

    Attributes
    ----------
    seconds : float
        Summed wall time of completed forward calls, >= 0.
    calls : int
        Completed forward calls.
    synchronize : bool
        Whether to wait for the device at the end of each call.
    """

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self.synchronize = False
        self._started = 0.0

    @classmethod
    def of(cls, model: Any) -> ForwardTimer:
        """The timer of ``model``, installed on its first use (a model without hooks gets an
        idle timer)."""
        timer = getattr(model, "_autorubric_forward_timer", None)
        if isinstance(timer, ForwardTimer):
            return timer
        timer = cls()
        try:
            model.register_forward_pre_hook(timer._start)
            model.register_forward_hook(timer._stop)
            model._autorubric_forward_timer = timer
        except AttributeError:
            pass
        return timer

    def _start(self, module: Any, args: Any) -> None:
        self._started = time.perf_counter()

    def _stop(self, module: Any, args: Any, output: Any) -> None:
        if self.synchronize:
            import torch

            if torch.cuda.is_available():
                torch.cuda.synchronize()
        self.seconds += time.perf_counter() - self._started
        self.calls += 1
