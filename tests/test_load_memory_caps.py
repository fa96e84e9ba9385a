"""Model files that would make ``load`` exhaust memory are refused before it allocates.

A huge or too narrow ``classes_`` dtype, a history zip bomb or one nested too deep, a
padded safetensors header or one longer than the weights, a huge series length, a learned
position table that does not match the stated tokens, and an extra archive member are
each refused with Python's and numpy's allocations under 200 MB; metadata fuzzed field by
field is refused or loads a model that predicts, in a process of its own under 200 MB.
"""

import json
import os
import tracemalloc
import zipfile

import numpy as np
import pytest
from conftest import FAST_FIT as FAST
from conftest import TRY_FILE, craft, data_fixture, run_script

from sktspt import SPTClassifier, load

data = data_fixture(n=24, t=24)


@pytest.fixture(scope="module")
def model_file(data, tmp_path_factory):
    X, y = data
    path = tmp_path_factory.mktemp("model") / "m.sktspt"
    SPTClassifier(**{**FAST, "device__threads": 1}).fit(X, y).save(path)
    return path


def refused(path, match, limit_mb=200):
    """``load(path)`` raises a ValueError matching ``match``, with Python's and numpy's
    allocations peaking below ``limit_mb`` MB."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=match):
            load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < limit_mb * 2**20, f"load allocated {peak / 2**20:.0f} MB before refusing"


def test_a_huge_classes_dtype_is_refused_before_it_is_allocated(model_file, tmp_path):
    def wide(meta):
        meta["fitted"]["classes"]["dtype"] = "<U500000000"

    path = craft(model_file, tmp_path / "wide.sktspt", meta=wide)
    assert os.path.getsize(path) < 64 * 2**10
    refused(path, r"classes_ of 2 labels of dtype <U500000000 take 4000000000 bytes")


def test_a_classes_dtype_narrower_than_its_labels_is_refused(model_file, tmp_path):
    def narrow(meta):
        meta["fitted"]["classes"] = {"values": ["long label", "other label"], "dtype": "<U2"}

    refused(craft(model_file, tmp_path / "narrow.sktspt", meta=narrow), "too narrow")


def test_a_history_zip_bomb_is_refused_before_it_is_parsed(model_file, tmp_path):
    def bomb(meta):
        text = json.dumps(meta)
        key = '"history": ['
        at = text.index(key) + len(key)
        return (text[:at] + "{}," * 21_000_000 + text[at:]).encode()

    path = craft(model_file, tmp_path / "bomb.sktspt", meta=bomb)
    assert os.path.getsize(path) < 1024 * 2**10  # a small file ...
    with zipfile.ZipFile(path) as zf:  # ... that inflates to 63 MB of JSON
        assert zf.getinfo("metadata.json").file_size > 60 * 2**20
    refused(path, r"may hold \d+ JSON values .* more than the 2097152 allowed")


def test_a_history_nested_too_deep_is_refused(model_file, tmp_path):
    def deep(meta):
        meta["fitted"]["history"][0]["batches"][0]["train_loss"] = [[[[1.0]]]]

    refused(craft(model_file, tmp_path / "deep.sktspt", meta=deep), "nested more than 4 deep")


def test_a_huge_metadata_list_in_the_weights_header_is_refused(model_file, tmp_path):
    def padded(blob):
        n = int.from_bytes(blob[:8], "little")
        header = json.loads(blob[8 : 8 + n])
        header["__metadata__"] = {"x": "y"}
        text = json.dumps(header).replace('{"x": "y"}', "[" + "{}," * (5 * 2**20) + "{}]")
        raw = text.encode()
        raw += b" " * (-len(raw) % 8)
        return len(raw).to_bytes(8, "little") + raw + blob[8 + n :]

    path = craft(model_file, tmp_path / "header.sktspt", weights=padded)
    assert os.path.getsize(path) < 256 * 2**10
    refused(path, r"safetensors header may hold \d+ JSON values")


def test_a_header_longer_than_the_weights_is_refused(model_file, tmp_path):
    def lying(blob):
        return (2**20).to_bytes(8, "little") + blob[8:]

    refused(craft(model_file, tmp_path / "lying.sktspt", weights=lying),
            "does not fit in the .* bytes of the weights")


@pytest.mark.parametrize("equal_length", [False, True])
def test_a_huge_series_length_is_refused_at_load(model_file, data, tmp_path, equal_length):
    def long(meta):
        fitted = meta["fitted"]
        patch = fitted["patch_size_"]
        fitted.update(n_timepoints_=10**6 * patch, max_tokens_=10**6,
                      equal_length_=equal_length)
        fitted["encoder_kwargs"]["max_tokens"] = 10**6

    refused(craft(model_file, tmp_path / "long.sktspt", meta=long),
            r"max_tokens_=1000000 is more than the 4096 tokens")


def test_a_learned_position_table_must_match_the_stated_tokens(data, tmp_path):
    X, y = data
    src = tmp_path / "learned.sktspt"
    SPTClassifier(architecture__positional="learned",
                  **{**FAST, "device__threads": 1}).fit(X, y).save(src)

    def longer(meta):
        fitted = meta["fitted"]
        fitted["n_timepoints_"] += 4 * fitted["patch_size_"]
        fitted["max_tokens_"] += 4
        fitted["encoder_kwargs"]["max_tokens"] += 4

    refused(craft(src, tmp_path / "longer.sktspt", meta=longer),
            "the weights do not fit the architecture")


def test_an_extra_archive_member_is_refused(model_file, tmp_path):
    path = craft(model_file, tmp_path / "extra.sktspt", extra=[("evil.pkl", b"\x80\x04.")])
    refused(path, r"holds members \['evil.pkl'\] besides")


# --- fuzzing the metadata -----------------------------------------------------------------
FUZZ = TRY_FILE + r"""
import io, json, os, resource, sys, zipfile
import numpy as np

src, X_path, out_path, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
X = np.load(X_path)
with zipfile.ZipFile(src) as zf:
    members = {n: zf.read(n) for n in zf.namelist()}
meta = json.loads(members["metadata.json"])


def variants(value):
    # Sizes times 10**6, types swapped, lists nested.
    if isinstance(value, bool):
        return [not value, int(value), str(value)]
    if isinstance(value, int):
        return [value * 10**6, -value, str(value), float(value) + 0.5, [value]]
    if isinstance(value, float):
        return [value * 1e6, -value, str(value), [value]]
    if isinstance(value, str):
        return [10**6, value * 1000, [value], None]
    if value is None:
        return [0, "None", {}]
    if isinstance(value, list):
        return [[value], {"0": value}, value * 1000 if len(value) < 100 else value[:1], []]
    return [[value], {"nested": value}, list(value), {}]


def paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            if k not in ("history", "pretrain_history") or len(prefix) > 1:
                yield from paths(v, prefix + (k,))
            else:
                yield prefix + (k,)
                yield from paths(v[0], prefix + (k, 0))
    elif isinstance(node, list) and node and len(prefix) > 1:
        yield from paths(node[0], prefix + (0,))


def edited(path, value):
    copy = json.loads(json.dumps(meta))
    node = copy
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return copy


cases = []
for p in paths(meta):
    if not p:
        continue
    node = meta
    for key in p:
        node = node[key]
    cases += [(p, v) for v in variants(node)]
stride = max(1, len(cases) // limit)
cases = cases[::stride]
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
outcome = {"refused": 0, "loaded": 0, "failures": [], "cases": len(cases)}
target = os.path.join(os.path.dirname(out_path), "fuzzed.sktspt")


def predicts(est):
    labels = est.predict(X) if hasattr(est, "predict") else est.transform(X)
    assert len(labels) == len(X)


for path, value in cases:
    try_file(target, edited(path, value), members["weights.safetensors"],
             f"{path}={value!r:.60}", predicts, outcome)
outcome["peak_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
with open(out_path, "w") as f:
    json.dump(outcome, f)
"""


def test_fuzzed_metadata_is_refused_or_loads_a_working_model(model_file, data, tmp_path):
    X, _ = data
    np.save(tmp_path / "X.npy", X[:5])
    # A process of its own, so that its peak memory is the fuzzing's alone.
    outcome = run_script(tmp_path, FUZZ, model_file, tmp_path / "X.npy", "150")
    assert outcome["failures"] == []
    assert outcome["refused"] > 20 and outcome["loaded"] > 20, outcome
    assert outcome["peak_mb"] < 200, outcome
