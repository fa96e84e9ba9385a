"""One torch thread keeps the suite fast on 2 cores (oversubscription costs ~10x)."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

torch.set_num_threads(1)


ROOT = Path(__file__).resolve().parents[1]


def load_benchmark(name: str):
    """Import ``benchmarks/<name>.py`` (a script folder, not a package) as a module.

    One-off probes live in ``benchmarks/probes/``: pass ``"probes/<name>"``.
    """
    spec = importlib.util.spec_from_file_location(f"sktspt_bench_{name.replace('/', '_')}",
                                                  ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def make_panel(n=40, c=2, t=48, seed=0, n_classes=2):
    """Synthetic classes: a sine whose frequency depends on the class, plus noise."""
    g = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    tt = np.linspace(0, 1, t)
    freq = 2 + 3 * y[:, None, None]
    phase = g.uniform(0, 2 * np.pi, size=(n, c, 1))
    X = np.sin(2 * np.pi * freq * tt[None, None, :] + phase) + 0.1 * g.normal(size=(n, c, t))
    return X.astype(np.float32), y


@pytest.fixture
def panel():
    return make_panel()
