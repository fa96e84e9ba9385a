"""Data-parallel fits through torch DDP (``sktspt.distributed``), launched by torchrun."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
from skorch.dataset import Dataset

from sktspt.loaders import TensorBatchIterator

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "ddp.py"


@pytest.mark.parametrize("k", [2, 3])
def test_shards_cover_every_series_in_equal_batch_counts(k):
    ds = Dataset(np.zeros((21, 1), dtype=np.float32), np.arange(21))
    shards = []
    for r in range(k):
        torch.manual_seed(0)  # every process draws the same permutation
        it = TensorBatchIterator(ds, batch_size=8, shuffle=True, num_replicas=k, rank=r)
        shards.append([yb.tolist() for _, yb in it])
        assert len(shards[-1]) == len(it) == len(shards[0])
    seen = [i for shard in shards for batch in shard for i in batch]
    assert set(seen) == set(range(21)) and len(seen) == -(-21 // k) * k  # padded, wrapped
    assert max(len(b) for shard in shards for b in shard) == -(-8 // k)


def _example():
    spec = importlib.util.spec_from_file_location("ddp_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not (dist.is_available() and dist.is_gloo_available()),
                    reason="torch.distributed with the gloo backend is not available")
def test_two_process_ddp_fit_matches_one_process(tmp_path):
    one = _example().main(["--dataset", "synthetic", "--tiny", "--precision", "float32"])
    assert one["world_size"] == 1 and one["train_series_per_epoch"] == 64
    env = dict(os.environ, OMP_NUM_THREADS="1")
    run = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         str(EXAMPLE), "--dataset", "synthetic", "--tiny", "--precision", "float32",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=180, env=env,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert all(r["world_size"] == 2 for r in ranks)
    # each process trained on its half of the data, and DDP kept the copies identical
    assert [r["train_series_per_epoch"] for r in ranks] == [32, 32]
    assert ranks[0]["weights_sha1"] == ranks[1]["weights_sha1"]
    assert ranks[0]["accuracy"] == ranks[1]["accuracy"]
    # a different run (other batches per step), same accuracy within noise
    assert ranks[0]["weights_sha1"] != one["weights_sha1"]
    assert one["accuracy"] >= 0.8, one
    assert abs(ranks[0]["accuracy"] - one["accuracy"]) <= 0.1, (one, ranks)


def test_cpu_fit_does_not_pin_memory_when_cuda_exists(monkeypatch):
    """Pinning is for fits on a CUDA device; a CPU fit on a CUDA machine must not pin."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)

    def refuse(self, *args, **kwargs):
        raise AssertionError("pin_memory called for a CPU fit")

    monkeypatch.setattr(torch.Tensor, "pin_memory", refuse)
    ds = Dataset(np.zeros((5, 1), dtype=np.float32), np.arange(5))
    assert sum(len(yb) for _, yb in TensorBatchIterator(ds, batch_size=2)) == 5
    with pytest.raises(AssertionError, match="pin_memory called"):
        list(TensorBatchIterator(Dataset(ds.X, ds.y), batch_size=2, pin_memory=True))
