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
        CPU threads torch uses inside ``fit`` and the methods that predict or transform;
        torch's previous count is restored afterwards, and calls in other threads never see
        it. None lets the package choose by the model's size: one thread, plus one for every
        2**30 multiply-adds of a training step, at most torch's own count. The default model
        gets one thread, the fastest on small or busy machines (``docs/performance.md``). The
        choice depends on the model's size and the machine's cores, never on its load; CPU
        results differ in the last bits between thread counts, so it is part of what makes a
        seeded fit bitwise reproducible. An int (at most 4096) overrides it.
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
    """Put ``module`` (all of its submodules) in evaluation mode, and leave it there.

    Prediction runs on a module that threads share. Switching it to evaluation mode and
    back around each call let one call's ``train(True)`` turn dropout on in the middle of
    another thread's forward pass; so a fitted module is switched once, here (at the end
    of ``fit``, after ``load``, or at the first prediction of an estimator pickled in
    training mode) and never back. Training switches it to training mode itself (skorch
    does at every step). The check and switch run under a lock, so a thread never sees a
    module half switched.
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
    """Multiply-adds of one forward pass of a batch through the encoder.

    Per layer and token: the four ``d_model``-square projections of attention, the two
    feed-forward products and the attention over ``tokens`` keys.
    """
    per_token = 4 * d_model * d_model + 2 * d_model * dim_feedforward + 2 * tokens * d_model
    return int(batch_size) * int(depth) * int(tokens) * per_token


def choose_threads(macs: int, ceiling: int) -> int:
    """The torch thread count for a model whose training step costs ``macs`` multiply-adds.

    One thread, plus one for every further :data:`MACS_PER_THREAD`, at most ``ceiling``
    (the threads torch would use by itself: the cores this process may run on, or fewer
    where ``OMP_NUM_THREADS``, joblib's ``loky`` workers or ``threadpoolctl`` limit it).
    The small default model (about 7e7 multiply-adds a step on a 32-token series) runs on
    one thread: its kernels are too short to share, and on a busy machine a second thread
    waiting for a core made a default fit many times slower. The count depends on the
    model's size and the ceiling only, never on the machine's load, so that a given seed
    gives the same bits on every run on one machine.
    """
    if ceiling < 1:
        raise ValueError(f"ceiling must be a positive integer, got {ceiling!r}")
    return int(max(1, min(int(ceiling), 1 + int(macs) // MACS_PER_THREAD)))


class ThreadCount:
    """torch's process-wide CPU thread count, held by calls that need a given count.

    ``torch.set_num_threads`` acts on the whole process, so a call that sets its count
    and restores the previous one afterwards changes the count under every other call
    running in another thread (fits in threads then differ from serial fits in the last
    bits). Here a call *holds* a count: calls that want the count already held run side
    by side; a call that wants another count waits until the holders are done (and
    newcomers wanting the held count wait behind it, so it is not starved). The count
    torch had before is restored when the last holder leaves. A call made while its
    thread already holds a count (a fit inside a fit) runs under the outer count.
    """

    def __init__(self):
        self._cond = threading.Condition()
        self._count = None
        self._holders = 0
        self._before = None
        self._waiting = collections.Counter()
        self._local = threading.local()

    def ceiling(self) -> int:
        """torch's count when no sktspt call holds one (what a thread count is capped at)."""
        with self._cond:
            return self._before if self._holders else torch.get_num_threads()

    def held(self) -> bool:
        """Whether this thread already runs under a held count."""
        return getattr(self._local, "depth", 0) > 0

    def _may_enter(self, n: int, queued: bool) -> bool:
        if self._holders == 0:
            return True
        if self._count != n:
            return False
        return queued or not any(k != n and c for k, c in self._waiting.items())

    @contextlib.contextmanager
    def hold(self, n: int | None):
        """Run the block with ``n`` torch threads (None, or an enclosing hold: unchanged)."""
        if n is None or self.held():
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
