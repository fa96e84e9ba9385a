"""What estimators shared between threads must not change: module mode, thread count."""

from __future__ import annotations

import collections
import contextlib
import threading
from dataclasses import dataclass

import torch


@dataclass(frozen=True, kw_only=True)
class Device:
    """Threads and numeric precision: the estimators' ``device__`` settings.

    Parameters
    ----------
    threads : int or None
        CPU threads torch uses inside ``fit``, ``predict`` and ``transform`` (restored after;
        calls in other threads never see it). None chooses by the model's size: one thread,
        plus one for every 2**30 multiply-adds of a training step, at most torch's own count
        (the default model gets one, the fastest on small or busy machines,
        ``docs/performance.md``); never by the machine's load, so a seeded fit is bitwise
        reproducible. An int (at most 4096) overrides it.
    precision : {"auto", "float32", "bfloat16", "float16"}
        Numeric precision of training and prediction (:mod:`sktspt.precision`): autocast
        of the network to bfloat16 or float16 (float16 with loss scaling, CUDA only),
        losses and SIGReg in float32, weights always float32; on CUDA, TF32 matmuls
        unless ``"float32"``. ``"auto"``: bfloat16 on a CUDA GPU that supports it,
        float32 elsewhere (on CPU). Can be changed after fitting: prediction uses the
        current value, and falls back to float32 where the device cannot run it.
    """

    threads: int | None = None
    precision: str = "auto"


#: Guards the switch of a fitted module to evaluation mode (see :func:`settle_eval`).
_EVAL_LOCK = threading.Lock()


def settle_eval(module: torch.nn.Module) -> torch.nn.Module:
    """Put ``module`` in evaluation mode, under a lock, and leave it there.

    Threads share a fitted module: switching it to evaluation mode and back around each
    call let one call turn dropout on in the middle of another's forward pass. So it is
    switched once (after ``fit`` or ``load``, or at the first prediction) and never back.
    """
    with _EVAL_LOCK:
        if any(m.training for m in module.modules()):
            module.eval()
    return module


# --- torch's thread count --------------------------------------------------------------
#: Multiply-adds of one training step per extra torch thread: below it a step is too short
#: for a second thread to pay for its start-up and synchronisation (see
#: :func:`choose_threads` and ``docs/performance.md``).
MACS_PER_THREAD = 2**30


def step_macs(tokens: int, d_model: int, depth: int, dim_feedforward: int,
              batch_size: int) -> int:
    """Multiply-adds of one forward pass of a batch through the encoder: per layer and token,
    attention's four projections, the two feed-forward products and attention itself."""
    per_token = 4 * d_model * d_model + 2 * d_model * dim_feedforward + 2 * tokens * d_model
    return int(batch_size) * int(depth) * int(tokens) * per_token


def choose_threads(macs: int, ceiling: int) -> int:
    """One thread, plus one for every further :data:`MACS_PER_THREAD` of a training step, at
    most ``ceiling`` (torch's own count). Never the machine's load: a seed gives the same
    bits on every run (``Device.threads``)."""
    if ceiling < 1:
        raise ValueError(f"ceiling must be a positive integer, got {ceiling!r}")
    return int(max(1, min(int(ceiling), 1 + int(macs) // MACS_PER_THREAD)))


class ThreadCount:
    """torch's process-wide CPU thread count, held by calls that need a given count.

    ``torch.set_num_threads`` acts on the whole process, so setting and restoring it would
    change the count under calls in other threads. Here a call *holds* a count: calls that
    want the held count run side by side, one that wants another waits (and newcomers
    queue behind it); the last holder restores torch's count. A nested call runs under the
    outer count.
    """

    def __init__(self):
        self._cond = threading.Condition()
        self._count = None
        self._holders = 0
        self._before = None
        self._waiting = collections.Counter()
        self._local = threading.local()

    def ceiling(self) -> int:
        """torch's count when no sktspt call holds one."""
        with self._cond:
            return self._before if self._holders else torch.get_num_threads()

    def _may_enter(self, n: int, queued: bool) -> bool:
        if self._holders == 0:
            return True
        if self._count != n:
            return False
        return queued or not any(k != n and c for k, c in self._waiting.items())

    @contextlib.contextmanager
    def hold(self, n: int | None):
        """Run the block with ``n`` torch threads (None, or an enclosing hold: unchanged)."""
        if n is None or getattr(self._local, "depth", 0) > 0:  # None, or nested
            yield
            return
        n = int(n)
        with self._cond:
            queued = False
            while not self._may_enter(n, queued):
                if not queued:
                    self._waiting[n] += 1
                    queued = True
                self._cond.wait()
            if queued:
                self._waiting[n] -= 1
            if self._holders == 0:
                self._before = torch.get_num_threads()
                self._count = n
                if self._before != n:
                    torch.set_num_threads(n)
            self._holders += 1
        self._local.depth = 1
        try:
            yield
        finally:
            self._local.depth = 0
            with self._cond:
                self._holders -= 1
                if self._holders == 0:
                    if torch.get_num_threads() != self._before:
                        torch.set_num_threads(self._before)
                    self._count = self._before = None
                    self._cond.notify_all()


#: The one holder of torch's thread count for all sktspt calls of the process.
THREADS = ThreadCount()
