"""The architecture a model file states, given weights that fit it, is checked at load.

Every network field of ``encoder_kwargs`` is validated, ``patch_size_`` is bounded before
prediction allocates, weights that compress like a zip bomb are refused, and architecture
fields fuzzed one by one are refused or predict, in a process capped in memory.
"""

import os

import numpy as np
import pytest
from conftest import (
    ONE_EPOCH_FIT,
    TRY_FILE,
    data_fixture,
    fitted_fixture,
    model_file_fixture,
    run_script,
)

from sktspt import load

data = data_fixture(n=12, t=16)
fitted = fitted_fixture(ONE_EPOCH_FIT)


def craft(src, dst, meta=None, weights=None):
    """Copy a saved model with its metadata edited by ``meta(dict)``; with ``weights``
    ("random" or "zeros") the weights are new ones of the edited metadata's architecture,
    so that only the stated sizes can refuse the file."""
    import json
    import zipfile

    import torch
    from safetensors.torch import save as save_tensors

    from sktspt.persistence.loading import _build

    with zipfile.ZipFile(src) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    edited = json.loads(members["metadata.json"])
    if meta is not None:
        meta(edited)
    if weights is not None:
        _, net = _build(edited, "cpu", probe=True)
        make = torch.randn if weights == "random" else torch.zeros
        members["weights.safetensors"] = save_tensors(
            {k: make(v.shape).to(v.dtype) for k, v in net.module_.state_dict().items()})
    members["metadata.json"] = json.dumps(edited)
    with zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, blob in members.items():
            zf.writestr(name, blob)
    return dst


model_file = model_file_fixture()


def test_a_stated_patch_size_is_bounded_before_prediction_allocates(model_file, tmp_path):
    def huge_patch(meta):
        fitted = meta["fitted"]
        fitted.update(patch_size_=10**7, n_timepoints_=10**7, max_tokens_=1,
                      equal_length_=False)
        fitted["encoder_kwargs"].update(patch_size=10**7, max_tokens=1)

    with pytest.raises(ValueError, match="patch_size_=10000000 is more than the 4096 steps"):
        # The weights are those of the stated architecture: only the size can refuse it.
        load(craft(model_file, tmp_path / "patch.sktspt", huge_patch, weights="random"))


@pytest.mark.parametrize("field, value, match", [
    ("n_heads", -2, "n_heads"), ("n_heads", 3, "not divisible by n_heads=3"),
    ("dropout", float("nan"), "dropout"), ("dropout", 1.5, "dropout"),
    ("depth", 0, "depth"), ("d_model", 2**20, "d_model.*more than"),
    ("tokenizer", "pickle", "tokenizer"), ("positional", None, "positional"),
])
def test_architecture_fields_of_a_file_are_validated_at_load(model_file, tmp_path, field,
                                                             value, match):
    def edit(meta):
        meta["fitted"]["encoder_kwargs"][field] = value

    with pytest.raises(ValueError, match=match):
        load(craft(model_file, tmp_path / "arch.sktspt", edit))


def test_weights_that_compress_like_a_zip_bomb_are_refused(model_file, tmp_path):
    def wide(meta):
        meta["fitted"]["encoder_kwargs"].update(d_model=512, dim_feedforward=8192)
        meta["params"].update(d_model=512, dim_feedforward=8192)

    # 17 million weights (68 MB) of zeros in a file of less than 100 KB.
    path = craft(model_file, tmp_path / "bomb.sktspt", wide, weights="zeros")
    assert os.path.getsize(path) < 2**17
    with pytest.raises(ValueError, match="implausible weights"):
        load(path)
    load(craft(model_file, tmp_path / "wide.sktspt", wide, weights="random"))  # real ones load


ARCH_FUZZ = TRY_FILE + r"""
import json, math, resource, sys, zipfile
cap = int(sys.argv[4]) * 2**20
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))  # a runaway allocation fails, not the host
import numpy as np
import torch
from safetensors.torch import save as save_tensors
from sktspt.persistence.loading import _build

src, X_path, out_path = sys.argv[1], sys.argv[2], sys.argv[3]
X = np.load(X_path)
with zipfile.ZipFile(src) as zf:
    members = {n: zf.read(n) for n in zf.namelist()}
meta = json.loads(members["metadata.json"])
VALUES = [0, -1, 3, 64, 10**4, 10**7, 2.5, "8", None]


def edited(field, value):
    m = json.loads(json.dumps(meta))
    f, kw = m["fitted"], m["fitted"]["encoder_kwargs"]
    f["equal_length_"] = False  # so that prediction pads short series to the stated sizes
    if field == "patch_size":
        f.update(patch_size_=value, n_timepoints_=value, max_tokens_=1)
        kw.update(patch_size=value, max_tokens=1)
    elif field == "max_tokens":
        f.update(patch_size_=1, n_timepoints_=value, max_tokens_=value)
        kw.update(patch_size=1, max_tokens=value)
    elif field == "n_channels":
        f["n_channels_"] = value
        kw["n_channels"] = value
    else:
        kw[field] = value
        m["params"][field] = value
    return m


def weights_for(m):
    # The weights the stated architecture has (random), when that is buildable and small;
    # otherwise the file's own.
    try:
        _, net = _build(m, "cpu", probe=True)
        state = net.module_.state_dict()
    except Exception:
        return members["weights.safetensors"]
    if sum(v.numel() for v in state.values()) > 2**22:
        return members["weights.safetensors"]
    return save_tensors({k: torch.randn(v.shape).to(v.dtype) for k, v in state.items()})


def predicts(est):
    Xf = X if est.n_channels_ == X.shape[1] else np.repeat(X[:, :1], est.n_channels_, 1)
    assert len(est.predict(Xf)) == len(X)


base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
outcome = {"refused": 0, "loaded": 0, "failures": []}
target = out_path + ".sktspt"
for field in ("patch_size", "max_tokens", "n_channels", "d_model", "depth",
              "dim_feedforward", "n_heads"):
    for value in VALUES:
        m = edited(field, value)
        try_file(target, m, weights_for(m), f"{field}={value!r}", predicts, outcome)
outcome["peak_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
with open(out_path, "w") as f:
    json.dump(outcome, f)
"""


def test_fuzzed_architecture_fields_are_refused_or_predict_within_a_memory_cap(
        model_file, data, tmp_path):
    X, _ = data
    np.save(tmp_path / "X.npy", X[:2, :, :8])  # short series: padded to the stated sizes
    outcome = run_script(tmp_path, ARCH_FUZZ, model_file, tmp_path / "X.npy", "4096")
    assert outcome["failures"] == [], outcome["failures"]
    assert outcome["refused"] > 20 and outcome["loaded"] > 5, outcome
    assert outcome["peak_mb"] < 1024, outcome
