"""Speed benchmark of sktspt: training throughput, latency, memory, FLOP/s and a peer ratio.

Run ``python benchmarks/speed.py`` (about 5-8 minutes on 2 cores) or ``--quick`` (under a
minute). One run measures, on synthetic series of controlled shape and on GunPoint:

- training throughput (series/s) of the two skorch nets the estimators train: masked
  reconstruction (``SPTPretrainer``) and classification (``SPTClassifier`` fine-tuning),
  each through the estimator's own ``fit`` with ``validation_fraction=0`` and timed per
  epoch by a skorch callback; the first epoch is warm-up and dropped, the rest give a median;
- the same for sktime's ``MVTSTransformerClassifier`` at equal size (``d_model``, layers,
  heads, feed-forward width, batch size), timed per epoch of its own training loop, in the
  same run, reported as a ratio;
- achieved FLOP/s of training (analytic count, checked against
  ``torch.utils.flop_counter.FlopCounterMode`` by the tests) as a fraction of the machine's
  measured float32 matmul peak (2048 x 2048, same thread count);
- inference latency of ``predict_proba`` for a batch of 1 and of 256 series;
- peak memory of each ``fit``: resident-set-size (RSS) growth above the level before the fit,
  sampled every 2 ms by a thread after ``gc`` and ``malloc_trim``;
- the default ``SPTClassifier().fit`` time on GunPoint, and measured levers (batch iterator,
  fused AdamW, batch size, dropout, threads, ``torch.compile``).

Every time is measured on two clocks: wall time and process CPU time. On a shared machine
CPU time is the steadier of the two (another process's load stretches wall time, not our
CPU time), so ratios and FLOP fractions are computed on CPU time, with wall-clock figures
alongside. Tables go to ``--output`` (Markdown and CSV); ``--write-docs`` regenerates
``docs/performance.md`` from the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime
import gc
import math
import os
import platform
import shlex
import statistics
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from skorch.callbacks import Callback

from sktspt.benchmark.datasets import load_dataset
from sktspt.benchmark.report import md_table
from sktspt.benchmark.run import Timing, cpu_count, timed, torch_threads
from sktspt.data import TARGET_TOKENS  # what patch_size="auto" aims at

ROOT = Path(__file__).resolve().parents[1]
DOCS_PAGE = ROOT / "docs" / "performance.md"


# --- configuration -----------------------------------------------------------------------
@dataclass(frozen=True)
class SpeedConfig:
    """What one run measures. ``QUICK`` and ``FULL`` are the two presets of the CLI."""

    lengths: tuple[int, ...] = (128, 512, 2048, 8192)
    depths: tuple[int, ...] = (2, 4, 8)
    d_models: tuple[int, ...] = (64, 128)
    n_heads: int = 4
    ff_factor: int = 2  # dim_feedforward = ff_factor * d_model (the core's default ratio)
    n_series: int = 32
    n_channels: int = 1
    batch_size: int = 16
    epochs: int = 4  # per timed fit; the first is warm-up
    reps: int = 5  # latency and matmul repetitions
    mvts_lengths: tuple[int, ...] = (128, 512)
    mvts_epochs: int = 3  # halved (at least 2) above length 256, where MVTS steps are slow
    mvts_n_series: int = 32  # halved (at least 16) above length 256
    # (d_model, batch_size) at depth 4, length 512: where does training approach the peak?
    wide: tuple[tuple[int, int], ...] = ((128, 16), (128, 128), (256, 16), (256, 128))
    wide_n_series: int = 256
    gunpoint: bool = True
    gunpoint_full_fit: bool = True  # the default 100 + 100 epoch fit; else a 5 + 5 epoch fit
    levers: bool = True
    compile_lever: bool = False  # minutes of compilation on a small CPU: opt in with --compile
    # GunPoint at equal work: SPT with patch_size=1 (one token per step, as MVTS) vs MVTS
    equal_tokens: bool = True
    equal_tokens_repeats: int = 3  # side-by-side pairs; the median ratio is reported
    equal_tokens_epochs: int = 10
    threads: int = 1
    seed: int = 0


FULL = SpeedConfig()
QUICK = SpeedConfig(
    lengths=(128, 2048), depths=(2,), d_models=(64,), n_series=32, epochs=3, reps=3,
    mvts_lengths=(128,), mvts_epochs=2, mvts_n_series=16, wide=(), gunpoint_full_fit=False,
    levers=False, equal_tokens=False,
)


# --- clocks, memory, machine ---------------------------------------------------------------
# Timing, timed (wall and CPU clocks) and torch_threads come from sktspt.benchmark.run.
def _median_timing(timings: Sequence[Timing]) -> Timing:
    return Timing(statistics.median(t.wall for t in timings),
                  statistics.median(t.cpu for t in timings))


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # not Linux: fall back to the process's peak so far
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _release_memory() -> None:
    """Collect garbage and hand freed heap back to the OS, so RSS growth is measurable."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


class PeakRSS:
    """Peak RSS growth (MB) of the enclosed block, sampled by a background thread.

    RSS, unlike ``tracemalloc``, sees torch's tensor memory; it also counts the allocator's
    cached pages, so it is an upper bound on what the block needed at once.
    """

    def __init__(self, interval: float = 0.002):
        self.interval = interval
        self.baseline = self.peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, _rss_bytes())

    def __enter__(self) -> PeakRSS:
        _release_memory()
        self.baseline = self.peak = _rss_bytes()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_bytes())

    @property
    def mb(self) -> float:
        return (self.peak - self.baseline) / 2**20


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def machine_info() -> dict:
    return {
        "cpu": cpu_model(),
        "cpu_count": cpu_count(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
    }


# --- FLOPs -------------------------------------------------------------------------------
def n_tokens_for(n_timepoints: int) -> tuple[int, int]:
    """``(patch_size, n_tokens)`` chosen by ``patch_size="auto"``."""
    p = max(1, math.ceil(n_timepoints / TARGET_TOKENS))
    return p, math.ceil(n_timepoints / p)


def forward_flops(
    n_tokens: int, patch_values: int, d_model: int, depth: int, dim_feedforward: int,
    head: str = "reconstruction", n_classes: int = 2,
) -> dict[str, int]:
    """Matmul FLOPs (2 per multiply-add) of one series' forward pass, by part.

    ``patch_values`` is ``n_channels * patch_size``. Counted: patch embedding (values and
    availability flags, so ``2 * patch_values`` inputs), q/k/v and output projections,
    attention scores and the weighted sum, the feed-forward block, and the head
    (per-token reconstruction or pooled classification). Norms, activations, softmax and
    masking are not matmuls and are left out, as ``FlopCounterMode`` does.
    """
    k, d, f = n_tokens, d_model, dim_feedforward
    parts = {
        "embedding": 2 * k * (2 * patch_values) * d,
        "qkv_out": depth * (2 * k * d * 3 * d + 2 * k * d * d),
        "attention": depth * (2 * k * k * d + 2 * k * k * d),
        "ffn": depth * (2 * k * d * f + 2 * k * f * d),
    }
    if head == "reconstruction":
        parts["head"] = 2 * k * d * patch_values
    elif head == "classification":
        parts["head"] = 2 * d * n_classes
    else:
        raise ValueError(f"head must be 'reconstruction' or 'classification', got {head!r}.")
    return parts


def training_flops(**kwargs) -> int:
    """FLOPs of one series' training step: forward plus backward.

    Backward costs two matmuls per forward matmul (gradients of input and of weight),
    except the patch embedding, whose input (the data) needs no gradient.
    """
    parts = forward_flops(**kwargs)
    forward = sum(parts.values())
    return forward + 2 * forward - parts["embedding"]


def counted_training_flops(model: torch.nn.Module, loss_fn: Callable[[], torch.Tensor]) -> int:
    """FLOPs of ``loss_fn()`` and its backward pass, as ``FlopCounterMode`` counts them."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        loss_fn().backward()
    model.zero_grad(set_to_none=True)
    return int(counter.get_total_flops())


def matmul_peak(n: int = 2048, reps: int = 5) -> dict[str, float]:
    """Median GFLOP/s of an ``n x n`` float32 matmul on both clocks (torch's thread setting)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    timings = []
    for _ in range(reps):
        with timed() as t:
            torch.mm(a, b)
        timings.append(t)
    m = _median_timing(timings)
    flop = 2 * n**3
    return {"n": n, "gflops_wall": flop / m.wall / 1e9, "gflops_cpu": flop / m.cpu / 1e9}


# --- data ----------------------------------------------------------------------------------
def synthetic_panel(n: int, n_channels: int, n_timepoints: int, seed: int = 0,
                    n_classes: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Noisy sines whose frequency depends on the class: a shape we control exactly."""
    g = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    tt = np.linspace(0.0, 1.0, n_timepoints)
    freq = 2 + 3 * y[:, None, None]
    phase = g.uniform(0, 2 * np.pi, size=(n, n_channels, 1))
    X = np.sin(2 * np.pi * freq * tt + phase) + 0.1 * g.normal(size=(n, n_channels, n_timepoints))
    return X.astype(np.float32), y


def load_gunpoint() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """GunPoint's default split as float32 arrays, through the accuracy benchmark's loader."""
    X, y, Xt, yt, _ = load_dataset("GunPoint")
    return X.astype(np.float32), y, Xt.astype(np.float32), yt


# --- SPT training throughput ---------------------------------------------------------------
class EpochTimer(Callback):
    """Record each training epoch's wall and CPU seconds."""

    def initialize(self):
        self.epochs_: list[Timing] = []
        return self

    def on_epoch_begin(self, net, **kwargs):
        self._start = (time.perf_counter(), time.process_time())

    def on_epoch_end(self, net, **kwargs):
        w0, c0 = self._start
        self.epochs_.append(Timing(time.perf_counter() - w0, time.process_time() - c0))


def _steady(epochs: Sequence[Timing]) -> Timing:
    """Median epoch after the warm-up epoch."""
    if len(epochs) < 2:
        raise ValueError("Need at least 2 timed epochs (the first is warm-up).")
    return _median_timing(epochs[1:])


def spt_size(depth: int, d_model: int, cfg: SpeedConfig) -> dict:
    return dict(depth=depth, d_model=d_model, n_heads=cfg.n_heads,
                dim_feedforward=cfg.ff_factor * d_model)


def time_spt_fit(phase: str, X: np.ndarray, y: np.ndarray, epochs: int, batch_size: int,
                 seed: int = 0, **params):
    """Fit one SPT net for ``epochs`` epochs; return (estimator, steady epoch, peak MB)."""
    from sktspt import SPTClassifier, SPTPretrainer
    from sktspt._param_hints import REMOVED

    timer = EpochTimer()
    params = {REMOVED.get(k) or k: v for k, v in params.items()}  # sizes as routed settings
    common = dict(batch_size=batch_size, validation_fraction=0.0, callbacks=[timer],
                  random_state=seed, **params)
    if phase == "pretrain":
        est = SPTPretrainer(pretrain_epochs=epochs, **common)
        with PeakRSS() as mem:
            est.fit(X)
    elif phase == "finetune":
        est = SPTClassifier(pretrain_epochs=0, max_epochs=epochs, **common)
        with PeakRSS() as mem:
            est.fit(X, y)
    else:
        raise ValueError(f"phase must be 'pretrain' or 'finetune', got {phase!r}.")
    return est, _steady(timer.epochs_), mem.mb


def _training_row(dataset: str, phase: str, X: np.ndarray, epoch: Timing, mem_mb: float,
                  size: dict, batch_size: int, patch_size: int, n_classes: int,
                  peak: dict) -> dict:
    n, c, t = X.shape
    k = math.ceil(t / patch_size)
    head = "reconstruction" if phase == "pretrain" else "classification"
    flops = training_flops(
        n_tokens=k, patch_values=c * patch_size, d_model=size["d_model"], depth=size["depth"],
        dim_feedforward=size["dim_feedforward"], head=head, n_classes=n_classes,
    )
    sps_cpu, sps_wall = n / epoch.cpu, n / epoch.wall
    return dict(
        dataset=dataset, phase=phase, n_series=n, n_channels=c, n_timepoints=t, **size,
        batch_size=batch_size, patch_size=patch_size, n_tokens=k,
        series_per_s_cpu=sps_cpu, series_per_s_wall=sps_wall,
        us_per_series_cpu=1e6 / sps_cpu,
        gflop_per_series=flops / 1e9, achieved_gflops_cpu=flops * sps_cpu / 1e9,
        peak_fraction_cpu=flops * sps_cpu / 1e9 / peak["gflops_cpu"],
        peak_fraction_wall=flops * sps_wall / 1e9 / peak["gflops_wall"],
        peak_rss_mb=mem_mb,
    )


def measure_training(cfg: SpeedConfig, peak: dict, log: Callable = print):
    """SPT training rows over the length x depth x d_model grid, and inference rows."""
    train_rows, infer_rows = [], []
    for t in cfg.lengths:
        X, y = synthetic_panel(cfg.n_series, cfg.n_channels, t, cfg.seed)
        Xi, _ = synthetic_panel(256, cfg.n_channels, t, cfg.seed + 1)
        for depth in cfg.depths:
            for d_model in cfg.d_models:
                size = spt_size(depth, d_model, cfg)
                for phase in ("pretrain", "finetune"):
                    # The fine-tuned classifier (last phase) is kept for the latency rows.
                    est, epoch, mem = time_spt_fit(
                        phase, X, y, cfg.epochs, cfg.batch_size, cfg.seed, **size
                    )
                    row = _training_row("synthetic", phase, X, epoch, mem, size,
                                        cfg.batch_size, est.patch_size_, 2, peak)
                    train_rows.append(row)
                    log(f"  {phase:8s} t={t:5d} depth={depth} d={d_model:3d}: "
                        f"{row['series_per_s_cpu']:8.0f} series/s (cpu), "
                        f"{row['peak_fraction_cpu']:.1%} of peak, {mem:6.1f} MB")
                infer_rows += measure_inference(est, Xi, cfg.reps, "synthetic", size)
    return train_rows, infer_rows


def measure_wide(cfg: SpeedConfig, peak: dict, log: Callable = print) -> list[dict]:
    """Fine-tuning of wider models and larger batches: the FLOP fraction they reach."""
    rows = []
    if not cfg.wide:
        return rows
    X, y = synthetic_panel(cfg.wide_n_series, cfg.n_channels, 512, cfg.seed)
    for d_model, batch_size in cfg.wide:
        size = spt_size(4, d_model, cfg)
        est, epoch, mem = time_spt_fit("finetune", X, y, 3, batch_size, cfg.seed, **size)
        row = _training_row("synthetic-wide", "finetune", X, epoch, mem, size, batch_size,
                            est.patch_size_, 2, peak)
        rows.append(row)
        log(f"  finetune t=  512 depth=4 d={d_model:3d} batch={batch_size:3d}: "
            f"{row['series_per_s_cpu']:6.0f} series/s (cpu), "
            f"{row['peak_fraction_cpu']:.1%} of peak")
    return rows


def measure_inference(clf, X: np.ndarray, reps: int, dataset: str, size: dict) -> list[dict]:
    """Median latency of ``predict_proba`` (validation and normalisation included)."""
    rows = []
    for batch in (1, 256):
        xb = X[:batch]
        clf.predict_proba(xb)  # warm-up
        timings = []
        for _ in range(reps):
            with timed() as t:
                clf.predict_proba(xb)
            timings.append(t)
        m = _median_timing(timings)
        rows.append(dict(
            dataset=dataset, n_timepoints=X.shape[2], **size, batch=len(xb),
            latency_ms_cpu=1e3 * m.cpu, latency_ms_wall=1e3 * m.wall,
            series_per_s_cpu=len(xb) / m.cpu,
        ))
    return rows


# --- the peer: sktime's MVTSTransformerClassifier ------------------------------------------
_MVTS_EPOCHS: list[Timing] = []


def _timed_mvts_class():
    """``MVTSTransformerClassifier`` whose training epochs are timed (sktime's own loop)."""
    from sktime.classification.deep_learning import MVTSTransformerClassifier

    class TimedMVTS(MVTSTransformerClassifier):
        def _run_epoch(self, epoch, dataloader):
            with timed() as t:
                super()._run_epoch(epoch, dataloader)
            _MVTS_EPOCHS.append(t)

    return TimedMVTS


def time_mvts_fit(X: np.ndarray, y: np.ndarray, epochs: int, batch_size: int, depth: int,
                  d_model: int, n_heads: int, dim_feedforward: int, seed: int = 0):
    """Fit MVTS at the given size; return (steady epoch, peak MB)."""
    cls = _timed_mvts_class()
    clf = cls(d_model=d_model, n_heads=n_heads, num_layers=depth,
              dim_feedforward=dim_feedforward, num_epochs=epochs, batch_size=batch_size,
              verbose=False, random_state=seed)
    _MVTS_EPOCHS.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with PeakRSS() as mem:
            clf.fit(X, y)
    return _steady(list(_MVTS_EPOCHS)), mem.mb


def compare_mvts(dataset: str, X: np.ndarray, y: np.ndarray, size: dict, cfg: SpeedConfig,
                 epochs: int, spt_epochs: int | None = None) -> dict:
    """SPT fine-tuning and MVTS training at equal size on the same data, side by side."""
    spt_est, spt_epoch, spt_mem = time_spt_fit(
        "finetune", X, y, spt_epochs or cfg.epochs, cfg.batch_size, cfg.seed, **size
    )
    mvts_epoch, mvts_mem = time_mvts_fit(X, y, epochs, cfg.batch_size, seed=cfg.seed, **size)
    n = len(X)
    return dict(
        dataset=dataset, n_series=n, n_timepoints=X.shape[2], **size,
        batch_size=cfg.batch_size, spt_tokens=math.ceil(X.shape[2] / spt_est.patch_size_),
        mvts_tokens=X.shape[2],
        spt_series_per_s_cpu=n / spt_epoch.cpu, mvts_series_per_s_cpu=n / mvts_epoch.cpu,
        ratio_cpu=mvts_epoch.cpu / spt_epoch.cpu, ratio_wall=mvts_epoch.wall / spt_epoch.wall,
        spt_peak_rss_mb=spt_mem, mvts_peak_rss_mb=mvts_mem,
    )


def measure_mvts(cfg: SpeedConfig, log: Callable = print) -> list[dict]:
    rows = []
    for t in cfg.mvts_lengths:
        n, epochs = cfg.mvts_n_series, cfg.mvts_epochs
        if t > 256:  # one MVTS step costs seconds here; each timed epoch still has full steps
            n, epochs = max(16, n // 2), max(2, epochs // 2)
        X, y = synthetic_panel(n, cfg.n_channels, t, cfg.seed)
        for depth in cfg.depths:
            for d_model in cfg.d_models:
                row = compare_mvts("synthetic", X, y, spt_size(depth, d_model, cfg), cfg,
                                   epochs)
                rows.append(row)
                log(f"  MVTS t={t:5d} depth={depth} d={d_model:3d}: SPT is "
                    f"{row['ratio_cpu']:.1f}x faster (cpu), {row['ratio_wall']:.1f}x (wall)")
    return rows


# --- GunPoint ------------------------------------------------------------------------------
DEFAULT_SIZE = dict(depth=3, d_model=64, n_heads=4, dim_feedforward=128)


def measure_gunpoint(cfg: SpeedConfig, peak: dict, log: Callable = print) -> dict:
    """Throughput, MVTS ratio, latency and the default full fit on GunPoint."""
    from sklearn.metrics import accuracy_score

    from sktspt import SPTClassifier

    X, y, Xt, yt = load_gunpoint()
    out = {"training": [], "inference": []}
    for phase in ("pretrain", "finetune"):
        est, epoch, mem = time_spt_fit(phase, X, y, max(cfg.epochs, 6), 16, cfg.seed,
                                       **DEFAULT_SIZE)
        out["training"].append(_training_row("GunPoint", phase, X, epoch, mem, DEFAULT_SIZE,
                                             16, est.patch_size_, 2, peak))
    out["inference"] = measure_inference(est, Xt, cfg.reps, "GunPoint", DEFAULT_SIZE)
    out["mvts"] = compare_mvts("GunPoint", X, y, DEFAULT_SIZE, replace(cfg, batch_size=16),
                               cfg.mvts_epochs + 1, spt_epochs=max(cfg.epochs, 6))
    log(f"  GunPoint MVTS at default size: SPT is {out['mvts']['ratio_cpu']:.1f}x faster (cpu)")
    epochs = (dict(pretrain_epochs="auto") if cfg.gunpoint_full_fit
              else dict(pretrain_epochs=5, max_epochs=5))
    clf = SPTClassifier(random_state=cfg.seed, **epochs)
    with PeakRSS() as mem, timed() as t:
        clf.fit(X, y)
    out["full_fit"] = dict(
        dataset="GunPoint", n_series=len(X), n_timepoints=X.shape[2],
        pretrain_epochs=clf.pretrain_epochs, max_epochs=clf.max_epochs,
        fit_s_wall=t.wall, fit_s_cpu=t.cpu, peak_rss_mb=mem.mb,
        test_accuracy=accuracy_score(yt, clf.predict(Xt)),
    )
    log(f"  GunPoint fit ({clf.pretrain_epochs}+{clf.max_epochs} epochs): {t.wall:.1f} s wall, "
        f"{t.cpu:.1f} s cpu, accuracy {out['full_fit']['test_accuracy']:.3f}")
    return out


# --- equal work ---------------------------------------------------------------------------
#: The size of issue 13's equal-work comparison (8 heads, feed-forward 4 x d_model).
EQUAL_WORK_SIZE = dict(depth=3, d_model=64, n_heads=8, dim_feedforward=256)


def measure_equal_tokens(cfg: SpeedConfig, log: Callable = print) -> list[dict]:
    """SPT fine-tuning vs MVTS on GunPoint at equal token count, beside default patching.

    ``patch_size=1`` gives SPT one token per time step (150), as MVTS has; the default
    patching gives 30. Both see all training data (``validation_fraction=0``), batch 16,
    ``EQUAL_WORK_SIZE``; each repeat times MVTS and both SPT variants side by side, and
    the rows give the median (and range) of the per-repeat ratios.
    """
    X, y, _, _ = load_gunpoint()
    epochs, size = cfg.equal_tokens_epochs, EQUAL_WORK_SIZE
    runs: dict = {1: [], "auto": []}
    for _ in range(cfg.equal_tokens_repeats):
        mvts, _ = time_mvts_fit(X, y, epochs, 16, seed=cfg.seed, **size)
        for patch in runs:
            est, spt, _ = time_spt_fit("finetune", X, y, epochs, 16, cfg.seed,
                                       patch_size=patch, **size)
            runs[patch].append((est.patch_size_, spt, mvts))
    rows = []
    for pairs in runs.values():
        ratios = np.array([m.cpu / s.cpu for _, s, m in pairs])
        rows.append(dict(
            dataset="GunPoint", n_timepoints=X.shape[2], **size, batch_size=16,
            patch_size=pairs[0][0], spt_tokens=math.ceil(X.shape[2] / pairs[0][0]),
            mvts_tokens=X.shape[2], repeats=len(pairs),
            spt_series_per_s_cpu=float(np.median([len(X) / s.cpu for _, s, _ in pairs])),
            mvts_series_per_s_cpu=float(np.median([len(X) / m.cpu for _, _, m in pairs])),
            ratio_cpu=float(np.median(ratios)), ratio_cpu_min=float(ratios.min()),
            ratio_cpu_max=float(ratios.max()),
            ratio_wall=float(np.median([m.wall / s.wall for _, s, m in pairs])),
        ))
        log(f"  GunPoint, {rows[-1]['spt_tokens']} SPT tokens vs {X.shape[2]} MVTS tokens: "
            f"SPT is {rows[-1]['ratio_cpu']:.2f}x faster (cpu, median of {len(pairs)})")
    return rows


# --- levers --------------------------------------------------------------------------------
def _net_throughput(make_net: Callable, X, y) -> Timing:
    timer = EpochTimer()
    net = make_net(timer)
    net.fit(X, y)
    return _steady(timer.epochs_)


def _classifier_net(timer, X, **overrides):
    """The fine-tuning net as ``SPTClassifier`` builds it, with overrides for one lever."""
    from skorch import NeuralNetClassifier

    from sktspt.loaders import TensorBatchIterator
    from sktspt.nn.heads import ClassificationModel
    from sktspt.training import fused_adamw_params

    p, k = n_tokens_for(X.shape[2])
    kw = dict(
        module=ClassificationModel, module__n_classes=2, module__n_channels=X.shape[1],
        module__patch_size=p, module__max_tokens=k, module__dropout=0.1,
        **{f"module__{a}": b for a, b in DEFAULT_SIZE.items()},
        criterion=torch.nn.CrossEntropyLoss, optimizer=torch.optim.AdamW, lr=1e-3,
        max_epochs=4, batch_size=16, train_split=None, iterator_train=TensorBatchIterator,
        iterator_train__shuffle=True, callbacks=[timer], verbose=0, **fused_adamw_params("cpu"),
    )
    kw.update(overrides)
    return NeuralNetClassifier(**kw)


def measure_levers(cfg: SpeedConfig, log: Callable = print) -> list[dict]:
    """Each lever against its baseline, measured side by side in rounds (medians)."""
    from torch.utils.data import DataLoader

    t = 512
    X, y = synthetic_panel(128, cfg.n_channels, t, cfg.seed)
    variants: dict[str, tuple[str, dict]] = {
        "iterator: TensorBatchIterator (kept)": ("iterator", {}),
        "iterator: skorch DataLoader": ("iterator", {"iterator_train": DataLoader}),
        "AdamW: for-loop": ("optimizer", {"optimizer__fused": False}),
        "AdamW: fused (kept)": ("optimizer", {}),
        "batch size 16 (default)": ("batch size", {}),
        "batch size 32": ("batch size", {"batch_size": 32}),
        "batch size 64": ("batch size", {"batch_size": 64}),
        "batch size 128": ("batch size", {"batch_size": 128}),
        "dropout 0.1 (default)": ("dropout", {}),
        "dropout 0": ("dropout", {"module__dropout": 0.0}),
    }
    results: dict[str, list[Timing]] = {k: [] for k in variants}
    for _ in range(3):  # rounds interleave the variants, so load changes hit all alike
        for name, (_, over) in variants.items():
            results[name].append(_net_throughput(
                lambda timer, over=over: _classifier_net(timer, X, max_epochs=3, **over), X, y
            ))
    rows = []
    for name, (lever, _) in variants.items():
        m = _median_timing(results[name])
        rows.append(dict(lever=lever, variant=name, n_timepoints=t, n_series=len(X),
                         series_per_s_cpu=len(X) / m.cpu, series_per_s_wall=len(X) / m.wall))
    rows += _thread_lever(X, y, cfg)
    if cfg.compile_lever:
        rows += _compile_lever(X, y)
    base = {}
    for row in rows:
        base.setdefault(row["lever"], row["series_per_s_cpu"])
        row["relative_cpu"] = row["series_per_s_cpu"] / base[row["lever"]]
        log(f"  {row['variant']:40s} {row['series_per_s_cpu']:8.0f} series/s (cpu) "
            f"x{row['relative_cpu']:.2f}")
    return rows


def _thread_lever(X, y, cfg: SpeedConfig) -> list[dict]:
    """One process with 1 vs all torch threads: wall time is what matters here."""
    rows = []
    counts = sorted({1, cpu_count()})
    res: dict[int, list[Timing]] = {n: [] for n in counts}
    for _ in range(3):
        for n in counts:
            with torch_threads(n):
                res[n].append(_net_throughput(
                    lambda tm: _classifier_net(tm, X, max_epochs=3), X, y
                ))
    for n in counts:
        m = _median_timing(res[n])
        rows.append(dict(lever="threads", variant=f"{n} torch thread(s)", n_timepoints=X.shape[2],
                         n_series=len(X), series_per_s_cpu=len(X) / m.cpu,
                         series_per_s_wall=len(X) / m.wall))
    return rows


def _compile_lever(X, y) -> list[dict]:
    """``torch.compile`` of the module: steady-state speed and the one-off compile time."""
    rows = []
    for name, compiled in (("eager (kept)", False), ("torch.compile", True)):
        timer = EpochTimer()
        net = _classifier_net(timer, X, compile=compiled, max_epochs=5)
        try:
            with timed() as total:
                net.fit(X, y)
        except Exception as exc:  # noqa: BLE001 - a missing compiler must not end the run
            failed = f"{name}: failed ({type(exc).__name__})"
            rows.append(dict(lever="torch.compile", variant=failed,
                             n_timepoints=X.shape[2], n_series=len(X),
                             series_per_s_cpu=float("nan"), series_per_s_wall=float("nan")))
            continue
        m = _steady(timer.epochs_)
        rows.append(dict(lever="torch.compile", variant=name, n_timepoints=X.shape[2],
                         n_series=len(X), series_per_s_cpu=len(X) / m.cpu,
                         series_per_s_wall=len(X) / m.wall,
                         first_epoch_s_wall=timer.epochs_[0].wall, fit_s_wall=total.wall))
    return rows


# --- summary, tables, docs -----------------------------------------------------------------
def _slope(lengths, values) -> float:
    """Exponent of growth with length: slope of log(value) on log(length)."""
    lengths, values = np.asarray(lengths, float), np.asarray(values, float)
    if len(lengths) < 2 or np.any(values <= 0):
        return float("nan")
    return float(np.polyfit(np.log(lengths), np.log(values), 1)[0])


def scaling_table(training: pd.DataFrame) -> pd.DataFrame:
    """Growth exponents of time and memory per series with length, per model size."""
    rows = []
    synth = training[training.dataset == "synthetic"]
    for (phase, depth, d_model), g in synth.groupby(["phase", "depth", "d_model"]):
        g = g.sort_values("n_timepoints")
        rows.append(dict(
            phase=phase, depth=depth, d_model=d_model,
            min_length=int(g.n_timepoints.min()), max_length=int(g.n_timepoints.max()),
            time_exponent=_slope(g.n_timepoints, g.us_per_series_cpu),
            memory_exponent=_slope(g.n_timepoints, g.peak_rss_mb.clip(lower=0.1)),
            us_per_series_at_max=float(g.us_per_series_cpu.iloc[-1]),
            peak_rss_mb_at_max=float(g.peak_rss_mb.iloc[-1]),
        ))
    return pd.DataFrame(rows)


def targets(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Each target of issue 5 against what this run reached."""
    tr, mv = tables["training"], tables["mvts"]
    by_length = "; ".join(
        f"{name} t={t}: " + (f"{g.ratio_cpu.min():.1f}x" if len(g) == 1 else
                             f"{g.ratio_cpu.min():.1f}x - {g.ratio_cpu.max():.1f}x")
        for (name, t), g in mv.groupby(["dataset", "n_timepoints"], sort=False)
    )
    rows = [dict(
        target="training throughput vs MVTSTransformerClassifier at equal size",
        goal=">= 10x", reached=by_length, met=bool(mv.ratio_cpu.min() >= 10),
    )]
    best = tr.loc[tr.peak_fraction_cpu.idxmax()]
    default = tr[(tr.dataset == "GunPoint") & (tr.phase == "finetune")]
    reached = f"best {best.peak_fraction_cpu:.0%} ({best.phase}, t={best.n_timepoints}, " \
              f"depth {best.depth}, d_model {best.d_model})"
    if len(default):
        reached += f"; GunPoint default size {default.peak_fraction_cpu.iloc[0]:.0%}"
    rows.append(dict(target="training FLOP/s vs measured float32 matmul peak", goal=">= 40%",
                     reached=reached, met=bool(best.peak_fraction_cpu >= 0.4)))
    sc = tables["scaling"]
    if len(sc):
        te, me = sc.time_exponent.max(), sc.memory_exponent.max()
        rows.append(dict(
            target=f"time and memory per series vs length ({sc.min_length.min()} - "
                   f"{sc.max_length.max()})",
            goal="exponent <= 1", reached=f"time {te:.2f}, memory {me:.2f} (worst size)",
            met=bool(te <= 1.05 and me <= 1.05),
        ))
        top = tr[tr.n_timepoints == tr.n_timepoints.max()]
        rows.append(dict(target=f"training memory at length {int(top.n_timepoints.max())}",
                         goal="< 2 GB", reached=f"{top.peak_rss_mb.max():.0f} MB (largest size)",
                         met=bool(top.peak_rss_mb.max() < 2048)))
    eq = tables.get("equal_tokens")
    if eq is not None and len(eq):
        same = eq[eq.spt_tokens == eq.mvts_tokens]
        if len(same):
            r = same.iloc[0]
            rows.append(dict(
                target="training throughput vs MVTS at equal token count",
                goal=">= 5x", reached=f"GunPoint, {r.spt_tokens} tokens each: "
                f"{r.ratio_cpu:.2f}x (median of {r.repeats}; {r.ratio_cpu_min:.2f}x - "
                f"{r.ratio_cpu_max:.2f}x)", met=bool(r.ratio_cpu >= 5),
            ))
    if "full_fit" in tables and len(tables["full_fit"]):
        ff = tables["full_fit"].iloc[0]
        rows.append(dict(
            target=f"default fit on GunPoint ({ff.pretrain_epochs}+{ff.max_epochs} epochs)",
            goal="well under 60 s", reached=f"{ff.fit_s_wall:.1f} s wall, {ff.fit_s_cpu:.1f} s cpu",
            met=bool(ff.fit_s_wall < 60),
        ))
    return pd.DataFrame(rows)


def _fmt(v) -> str:
    if isinstance(v, float | np.floating):
        if not np.isfinite(v):
            return "-"
        if abs(v) >= 100:
            return f"{v:.0f}"
        return f"{v:.3g}"
    return str(v)


def markdown_table(df: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    df = df if columns is None else df[[c for c in columns if c in df.columns]]
    return md_table(list(df.columns), [[_fmt(v) for v in row]
                                       for row in df.itertuples(index=False)])


TRAINING_COLUMNS = (
    "dataset", "phase", "n_timepoints", "depth", "d_model", "batch_size", "patch_size",
    "n_tokens", "series_per_s_cpu", "series_per_s_wall", "gflop_per_series",
    "achieved_gflops_cpu", "peak_fraction_cpu", "peak_rss_mb",
)


EQUAL_TOKENS_HEADING = "## Against MVTS at equal work (equal token count, GunPoint)"
EQUAL_TOKENS_TEXT = (
    "SPT fine-tuning with `patch_size=1` (one token per time step, as MVTS) and with the "
    "default patching, against MVTS, d_model 64, 3 layers, 8 heads, feed-forward 256, "
    "batch 16, 10 epochs, all training data (`validation_fraction=0`); `ratio_cpu` is the "
    "median of the side-by-side repeats (range in the next two columns)."
)
EQUAL_TOKENS_COLUMNS = (
    "dataset", "n_timepoints", "patch_size", "spt_tokens", "mvts_tokens", "repeats",
    "spt_series_per_s_cpu", "mvts_series_per_s_cpu", "ratio_cpu", "ratio_cpu_min",
    "ratio_cpu_max", "ratio_wall",
)


def markdown_report(tables: dict[str, pd.DataFrame], info: dict, command: str) -> str:
    peak = tables["peak"]
    parts = [
        "## Targets", "", markdown_table(tables["targets"]), "",
        "## Machine", "",
        f"- Command: `{command}`",
        f"- CPU: {info['cpu']}, {info['cpu_count']} cores; {info['platform']}; "
        f"Python {info['python']}; torch {info['torch']}; {info['threads']} torch thread(s)",
        f"- Date: {info['date']}; run took {info['duration_s']:.0f} s",
        f"- float32 matmul peak ({int(peak.n.iloc[0])}x{int(peak.n.iloc[0])}, median of "
        f"{info['reps']}, measured at start and end, best kept): "
        f"{peak.gflops_cpu.max():.1f} GFLOP/s (cpu clock), {peak.gflops_wall.max():.1f} "
        "GFLOP/s (wall clock)",
        "", "## Training throughput", "",
        "Series per second of training (forward, backward, optimiser step, masks, skorch "
        "loop), median epoch after a warm-up epoch; `peak_rss_mb` is the fit's RSS growth.",
        "", markdown_table(tables["training"], TRAINING_COLUMNS), "",
        "## Against sktime's MVTSTransformerClassifier (equal size, same data, same run)", "",
        "`ratio_cpu` = MVTS epoch time / SPT fine-tuning epoch time. MVTS makes one token per "
        "time step; SPT patches to ~32 tokens.", "",
        markdown_table(tables["mvts"], ("dataset", "n_timepoints", "depth", "d_model",
                                        "dim_feedforward", "batch_size", "spt_tokens",
                                        "mvts_tokens", "spt_series_per_s_cpu",
                                        "mvts_series_per_s_cpu", "ratio_cpu", "ratio_wall",
                                        "spt_peak_rss_mb", "mvts_peak_rss_mb")), "",
        "## Growth with length", "",
        "Exponent of time (and memory) per series against length, fitted on log-log over the "
        "lengths measured; 1 is linear.", "", markdown_table(tables["scaling"]), "",
        "## Inference latency (`predict_proba`, input validation included)", "",
        markdown_table(tables["inference"]), "",
    ]
    if "equal_tokens" in tables and len(tables["equal_tokens"]):
        parts += [EQUAL_TOKENS_HEADING, "", EQUAL_TOKENS_TEXT, "",
                  markdown_table(tables["equal_tokens"], EQUAL_TOKENS_COLUMNS), ""]
    if "full_fit" in tables:
        parts += ["## Default fit on GunPoint", "", markdown_table(tables["full_fit"]), ""]
    if "levers" in tables and len(tables["levers"]):
        parts += ["## Levers (fine-tuning net, length 512, 128 series, default size)", "",
                  markdown_table(tables["levers"]), ""]
    return "\n".join(parts)


DOCS_INTRO = """# Performance

Generated by `benchmarks/speed.py`; do not edit by hand. Re-run the command below to
regenerate this page.

How the figures are taken: all times are medians (training: of the epochs after a warm-up
epoch; latency and matmul: of several repetitions), each on two clocks, wall time and
process CPU time. The machine that produced this page is shared with other jobs, so wall
times are noisy and stretched by other processes' load; CPU time is not, which is why
ratios and FLOP fractions use CPU time. The MVTS ratio is measured side by side, on the
same data and in the same process. Memory is the RSS growth of one `fit` (sampled every
2 ms after `gc` and `malloc_trim`), an upper bound that includes the allocator's caching.
FLOPs are counted analytically (matmuls only; backward = 2x forward except the embedding's
input gradient), which the tests check against `torch.utils.flop_counter.FlopCounterMode`.

No GPU figures were measured: no GPU was lent to the sessions that wrote this page. So
these figures of issue 13 are unmeasured: GPU training throughput at the large-fit size
(target >= 160 TFLOP/s, 20 % of the bf16 peak; 25 TFLOP/s was measured in float32 before
`precision` existed), what `precision="bfloat16"`, TF32, fused attention and
`torch.compile` change there, the default GunPoint fit on a GPU (target <= 3 s; 8.4 s
before), data-parallel scaling over several GPUs, and time and memory per series against
length on a GPU. The GPU code paths (pinned memory for batches, non-blocking copies, a
`masking="mixed"` draw that never reads a value back to the host, autocast with TF32,
float16 loss scaling, DDP over NCCL) are taken only when CUDA is in use; the CUDA tests
are skipped on CPU. What CPU tests cover: bfloat16 autocast (accuracy within seed noise of
float32), the float16 loss-scaling step (under CPU autocast), saving and loading across
precisions, and a 2-process DDP fit over gloo.
"""

DOCS_GUIDE = """
## What the figures say

- **Against MVTS** the gain comes from patching: at length 128 SPT has 32 tokens to MVTS's
  128, and both pay the same per-token costs, so the ratio is a few-fold; from a few hundred
  steps on, MVTS's attention over every time step grows quadratically and the ratio reaches
  two orders of magnitude. The 10x target is missed at length 128 (5-9x), borderline at
  GunPoint's 150 steps (8.3x to 10.9x in three full runs of this session) and met by far
  from a few hundred steps on.
- **At equal work** (one token per time step for both, issue 13's comparison) SPT
  fine-tuning is only about 1.25x faster than MVTS on GunPoint: the lead at the default
  size comes from patching (30 tokens against 150), not from a faster transformer, and
  issue 13's >= 5x at equal tokens is not met.
- **FLOP fraction**: at the default size (d_model 64, batch 16) a training step is many
  small kernels (matmuls of a few hundred rows by 64 columns), which run far below the large
  matmul peak; wider models and larger batches approach it (the `synthetic-wide` rows).
- **Length**: `patch_size="auto"` keeps about 32 tokens, so the transformer's cost does not
  grow with length; only the patch embedding and the data do, linearly. Time and memory per
  series therefore grow sub-linearly up to 8192 steps (exponents in "Growth with length").

## Speed levers: what was kept, what to set yourself

- **Whole-tensor batches** (`sktspt.loaders.TensorBatchIterator`) instead of skorch's default
  `DataLoader`, which indexes and collates one series at a time: kept. At the default model
  size the difference is within noise (the `iterator` rows; -3 % to +3 % across three runs),
  because a step's compute dwarfs collating 16 series.
- **Fused AdamW** (`torch.optim.AdamW(fused=True)`, on CPU since torch 2.4) updates every
  weight in one kernel instead of a Python loop over parameter tensors: kept where torch
  supports it for the device (`sktspt.training.fused_adamw_params`): +4 % to +29 % series/s
  across three runs (the `optimizer` rows).
- **Masks** are drawn on the batch's device, vectorised over the batch; `masking="mixed"`
  now picks its objective without reading a value back to the host on accelerators.
- **Dropout** is the largest cost on CPU: random numbers for every activation and every
  attention weight, and attention with dropout cannot use PyTorch's fused CPU attention
  kernel. `dropout=0` trains about twice as fast (the `dropout` rows; at length 128 that
  alone would lift the MVTS ratio past 10x). The default stays at 0.1 until accuracy
  benchmarks show 0 costs nothing on the small UCR sets; set `dropout=0` for speed.
  A cheaper dropout mask (15-bit lanes of int32 draws) was tried: 1.27x on the whole step,
  not adopted, as it changes every seeded result for a modest gain.
- **Batch size**: larger batches raise series/s (the `batch size` rows) but take fewer
  optimiser steps per epoch, which changes what a given number of epochs learns. The
  default (16) suits the small UCR training sets (3 steps per epoch on GunPoint); raise
  `batch_size` (and `lr`) for large training sets.
- **`torch.compile`** (skorch's `compile=True`; measure with `--compile`): measured once in
  this session at length 512, default size: the first fit spent 207 s (wall) compiling and
  the compiled steps were slower than eager ones (0.254 vs 0.193 CPU-s per epoch); later
  fits in the same process reuse the cache. It does not pay on CPU, so no option was added.
- **GPU** (`device="cuda"`, untested here): batches come from pinned memory when CUDA is
  available and masks are drawn on the GPU. Note that shuffled batches are gathered with
  an index, which yields unpinned memory, so pinning helps validation batches only; moving
  the whole (small) training set to the GPU once would remove the per-batch copy; that was
  not added without a GPU to measure on. Mixed precision is the `device__precision` setting
  (next section).

## Precision

`device__precision="auto" | "float32" | "bfloat16" | "float16"` (both estimators and the sktime
adapters; `sktspt.precision`) runs the network's forward passes, in training and in
prediction, under `torch.autocast` for the device. The network's outputs are cast to
float32 before any loss, and the losses, SIGReg and the LEAP exit loss are computed in
float32; weights and optimiser state stay float32, so a model trained in one precision
is saved, loaded and used in any other (`set_params(device__precision=...)` after loading).

- `"auto"` (default): bfloat16 on a CUDA GPU that supports it, float32 elsewhere. On CPU
  it is float32: on this page's CPU (which has AVX512-BF16) bfloat16 autocast made the
  tests' tiny fits slower, not faster (3 fits: 13.4 s against 4.9 s, wall).
- `"float32"`: no autocast, no TF32; the exact reference. Every other setting allows TF32
  for the float32 matmuls left on CUDA, during `fit`, `predict`, `predict_proba` and
  `transform` only (torch's flags are restored afterwards).
- `"bfloat16"`: float32's exponent range, so no loss scaling; CPU or a GPU with bf16.
- `"float16"`: CUDA only, with a `GradScaler` (gradients are unscaled before gradient
  clipping; steps that overflow are skipped). `fit` on CPU raises `ValueError`: most CPUs
  have no float16 arithmetic, so it would be slower than float32, and float16 needs loss
  scaling where bfloat16 does not, so bfloat16 is the CPU choice. Prediction never raises:
  on a device that cannot run the saved precision (a float16 model loaded on a CPU) it
  runs in float32, so saved models work anywhere.

## Data-parallel training: one fit on several GPUs, cores or machines

torch's `DistributedDataParallel` does the work and `torchrun` (shipped with torch)
launches it; `sktspt.distributed.DataParallel` is the skorch callback that plugs a fit
into it. `examples/ddp.py` is a complete script:

```bash
torchrun --standalone --nproc_per_node 2 examples/ddp.py               # 2 CPU processes (gloo)
torchrun --standalone --nproc_per_node 8 examples/ddp.py --device cuda  # 8 GPUs (NCCL)
# two machines, 8 GPUs each: run on both
torchrun --nnodes 2 --nproc_per_node 8 --rdzv_id fit1 --rdzv_backend c10d \\
    --rdzv_endpoint host0:29400 examples/ddp.py --device cuda
```

In your own script: call `sktspt.distributed.init_process_group()`, give every process
the same data and the same integer `random_state`, pass `callbacks=[DataParallel()]` and
`pretrain__callbacks=[DataParallel()]`, and on GPUs `device=f"cuda:{local_rank()}"`. Each
process trains on every `world_size`-th series of each shuffled epoch in batches of
`ceil(batch_size / world_size)` (so `batch_size` stays the batch of one optimiser step and
the learning-rate schedule is unchanged); DDP averages the gradients, so the copies stay
identical; validation runs on the whole split everywhere, so all keep the same epoch.
Save from rank 0 after `set_params(callbacks=None, pretrain__callbacks=None)`.

`tests/test_distributed.py` runs the example with 2 processes over gloo and checks that
each process trained on half the data, that both ended with identical weights, and that
the accuracy matches a 1-process fit's (1.000 and 1.000 on its synthetic task). On CPU,
with these small models, it is a correctness check, not a speed-up: on the 2 shared
cores the 2-process fit took 3.7-3.8 s against 2.9-3.0 s for one process (two runs of
`examples/ddp.py --dataset synthetic --tiny` each).

## Threads, joblib and cross-validation

`device__threads=None` (the default) lets the package choose torch's thread count for each call
by the model's size (`sktspt._concurrency.choose_threads`): one thread, plus one for every
2**30 multiply-adds of a training step (batch size x depth x tokens of
a training-length series x the layer's products), at most torch's own count (one per
core, or fewer under `OMP_NUM_THREADS`, joblib's `loky` workers or `threadpoolctl`). The
default model (d_model 64, depth 3, batch 16, about 32 tokens: 7e7 multiply-adds a step)
gets one thread; a model of d_model 256, depth 6 on 512-token series gets every core.
`device__threads=<int>` overrides the choice. The count is held for the whole call and restored
afterwards, and calls in other threads of the process never change it midway (calls that
want another count wait; see `docs/reliability.md`).

Why one thread for small models: a step is many short kernels, and a second thread gains
little while costing a lot when it waits for a busy core. Default `SPTClassifier` fits on
GunPoint's training split (`python benchmarks/threads.py`, `auto_steps=200`, 2-core shared
machine whose load average from other jobs was 4-6 throughout; "busy" adds one
`python -c "while True: pass"`):

| n_threads | idle (load 4-6) | busy (load 5-6 + 1 spinning process) |
|---|---|---|
| None before this choice (torch's default: 2 threads) | 213.3 s | 326.4 s |
| 1 | 28.4 s | 16.1 s |
| None now (chooses 1) | 35.5 s | 42.0 s |

A full default fit (no arguments, 100 + 100 epochs at `auto_steps`) took 139.7 s with the
new default on the same shared machine (load 5.6); the 21.8 s of the table above was
measured on it when it was quieter. Results are bitwise reproducible for a given seed,
data and thread count; since the chosen count depends on the model's size and the
machine's cores (never on its load), a seeded fit repeats exactly on one machine, but a
machine with another core count may choose another count for a large model and differ in
the last bits (set `device__threads` to pin it).

For parallel work, run one single-threaded fit per core:

- `cross_val_score(..., n_jobs=k)` and `GridSearchCV(..., n_jobs=k)` with joblib's default
  `loky` backend already give each worker `cpu_count // k` torch threads (loky sets the
  OpenMP thread count in its workers), which caps the choice; nothing to do.
- With joblib's `threading` backend the fits share one process: they run their training
  one at a time (the seeded sections hold a lock) and each under its own thread count.
  With dask or ray, workers keep torch's default as the cap; the default model uses one
  thread regardless, and `threadpoolctl.threadpool_limits(1)` or
  `client.run(torch.set_num_threads, 1)` caps large models too.
- Compare the `threads` rows on your own machine with `python benchmarks/speed.py
  --threads 2`, or `python benchmarks/threads.py --threads 1 2`.
"""


def write_outputs(tables: dict[str, pd.DataFrame], report: str, output: Path) -> None:
    output.mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():
        df.to_csv(output / f"{name}.csv", index=False)
    (output / "speed.md").write_text("# Speed benchmark\n\n" + report + "\n")


def warm_up(cfg: SpeedConfig) -> None:
    """One tiny fit of each kind, so lazy imports and first-call allocations are not measured."""
    X, y = synthetic_panel(8, cfg.n_channels, 64, cfg.seed)
    size = spt_size(1, 16, replace(cfg, n_heads=2))
    for phase in ("pretrain", "finetune"):
        est, _, _ = time_spt_fit(phase, X, y, 2, 4, cfg.seed, **size)
    est.predict_proba(X)
    time_mvts_fit(X, y, 2, 4, seed=cfg.seed, **size)


def run(cfg: SpeedConfig, log: Callable = print) -> dict[str, pd.DataFrame]:
    """Measure everything ``cfg`` asks for; return the tables by name."""
    with torch_threads(cfg.threads):
        warm_up(cfg)
        peaks = [matmul_peak(reps=cfg.reps)]
        log(f"matmul peak: {peaks[0]['gflops_cpu']:.1f} GFLOP/s (cpu), "
            f"{peaks[0]['gflops_wall']:.1f} (wall)")
        best = {k: max(p[k] for p in peaks) for k in ("gflops_cpu", "gflops_wall")}
        log("SPT training grid")
        training, inference = measure_training(cfg, best, log)
        training += measure_wide(cfg, best, log)
        log("MVTS at equal size")
        mvts = measure_mvts(cfg, log)
        tables = {}
        if cfg.gunpoint:
            log("GunPoint")
            gp = measure_gunpoint(cfg, best, log)
            training += gp["training"]
            inference += gp["inference"]
            mvts.append(gp["mvts"])
            tables["full_fit"] = pd.DataFrame([gp["full_fit"]])
        if cfg.equal_tokens:
            log("GunPoint at equal token count")
            tables["equal_tokens"] = pd.DataFrame(measure_equal_tokens(cfg, log))
        if cfg.levers:
            log("Levers")
            tables["levers"] = pd.DataFrame(measure_levers(cfg, log))
        peaks.append(matmul_peak(reps=cfg.reps))
    # FLOP fractions against the best peak of the run (start or end).
    best = {k: max(p[k] for p in peaks) for k in ("gflops_cpu", "gflops_wall")}
    training = pd.DataFrame(training)
    flops = training.achieved_gflops_cpu
    training["peak_fraction_cpu"] = flops / best["gflops_cpu"]
    training["peak_fraction_wall"] = (
        training.gflop_per_series * training.series_per_s_wall / best["gflops_wall"]
    )
    tables.update(training=training, inference=pd.DataFrame(inference),
                  mvts=pd.DataFrame(mvts), peak=pd.DataFrame(peaks))
    tables["scaling"] = scaling_table(training)
    tables["targets"] = targets(tables)
    return tables


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="a small grid (under a minute)")
    p.add_argument("--output", type=Path, default=ROOT / "results" / "speed",
                   help="folder for the CSV and Markdown tables (default: results/speed)")
    p.add_argument("--write-docs", action="store_true",
                   help=f"regenerate {DOCS_PAGE.relative_to(ROOT)} from this run")
    p.add_argument("--threads", type=int, default=None,
                   help="torch threads (default 1: see docs/performance.md, 'Threads')")
    p.add_argument("--no-levers", action="store_true", help="skip the lever measurements")
    p.add_argument("--equal-tokens-only", action="store_true",
                   help="only the GunPoint equal-token-count comparison with MVTS (a few "
                        "minutes); prints its table and writes equal_tokens.csv, not the docs")
    p.add_argument("--compile", action="store_true",
                   help="also measure torch.compile (its first compile takes minutes on CPU)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cfg = QUICK if args.quick else FULL
    if args.threads is not None:
        if args.threads < 1:
            raise SystemExit("--threads must be a positive integer.")
        cfg = replace(cfg, threads=args.threads)
    if args.no_levers:
        cfg = replace(cfg, levers=False)
    if args.compile:
        cfg = replace(cfg, compile_lever=True)
    if args.equal_tokens_only:
        if args.write_docs:
            raise SystemExit("--equal-tokens-only measures one table; drop --write-docs.")
        t0 = time.perf_counter()
        with torch_threads(cfg.threads):
            warm_up(cfg)
            table = pd.DataFrame(measure_equal_tokens(cfg))
        args.output.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.output / "equal_tokens.csv", index=False)
        print("\n" + markdown_table(table, EQUAL_TOKENS_COLUMNS))
        print(f"\n{time.perf_counter() - t0:.0f} s; written to {args.output / 'equal_tokens.csv'}")
        return 0
    started = datetime.datetime.now()
    t0 = time.perf_counter()
    tables = run(cfg)
    with torch_threads(cfg.threads):
        info = machine_info()
    info.update(date=started.strftime("%Y-%m-%d %H:%M"), duration_s=time.perf_counter() - t0,
                reps=cfg.reps)
    argv_list = list(sys.argv[1:] if argv is None else argv)
    command = "python benchmarks/speed.py " + " ".join(shlex.quote(a) for a in argv_list)
    report = markdown_report(tables, info, command.strip())
    write_outputs(tables, report, args.output)
    print("\n" + markdown_table(tables["targets"]))
    print(f"\nTables written to {args.output}")
    if args.write_docs:
        DOCS_PAGE.parent.mkdir(parents=True, exist_ok=True)
        DOCS_PAGE.write_text(DOCS_INTRO + "\n" + report + DOCS_GUIDE)
        print(f"Wrote {DOCS_PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
