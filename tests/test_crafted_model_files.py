"""Crafted model files are refused by ``load`` with a ValueError.

Metadata that cannot describe a fitted model (normaliser statistics, classes, network
sizes, devices, callbacks, augmentation and its evidence), a second ``metadata.json``, a
pretrainer relabelled as a classifier, oversized metadata, and weights longer than their
header describes; the architecture is checked before anything is allocated.
"""

import json
import zipfile

import pytest
from conftest import FAST_FIT, craft, data_fixture, fitted_fixture, model_file_fixture
from conftest import TINY_NET as TINY

import sktspt.persistence.format as persistence_format
import sktspt.persistence.loading as persistence_loading
from sktspt import SPTPretrainer, load

data = data_fixture(n=24, t=24)
fitted = fitted_fixture(FAST_FIT)


def set_in(*keys, value):
    def edit(meta):
        node = meta
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value

    return edit


saved = model_file_fixture()


@pytest.fixture(scope="module")
def saved_pretrainer(data, tmp_path_factory):
    X, _ = data
    path = tmp_path_factory.mktemp("saved") / "pre.sktspt"
    SPTPretrainer(pretrain_epochs=1, **TINY).fit(X).save(path)
    return path


CRAFTED = {
    "std 0": (set_in("fitted", "normalizer", "std", value=[0.0, 1.0]), "std must be positive"),
    "std negative": (set_in("fitted", "normalizer", "std", value=[-1.0, 1.0]),
                     "std must be positive"),
    "std NaN": (set_in("fitted", "normalizer", "std", value=[float("nan"), 1.0]),
                "std is not finite"),
    "std of too few channels": (set_in("fitted", "normalizer", "std", value=[1.0]),
                                "one per channel"),
    "duplicate classes": (set_in("fitted", "classes", "values", value=[0, 0]),
                          "distinct and sorted"),
    "unsorted classes": (set_in("fitted", "classes", "values", value=[1, 0]),
                         "distinct and sorted"),
    "huge feed-forward": (set_in("fitted", "encoder_kwargs", "dim_feedforward", value=2**40),
                          "dim_feedforward.*more than the 65536"),
    "huge learned positions": (
        lambda m: [set_in("params", "positional", value="learned")(m),
                   set_in("fitted", "n_timepoints_", value=2**31)(m),
                   set_in("fitted", "max_tokens_", value=2**31 // m["fitted"]["patch_size_"])(m),
                   set_in("fitted", "encoder_kwargs", "max_tokens",
                          value=2**31 // m["fitted"]["patch_size_"])(m),
                   set_in("fitted", "encoder_kwargs", "positional", value="learned")(m)],
        "more than the 4096 tokens"),
    "device meta": (set_in("params", "device", value="meta"), "meta"),
    "device xla": (set_in("params", "device", value="xla"), "not a readable|invalid metadata"),
    "deep nesting": (lambda m: b"[" * 200_000 + b"]" * 200_000, "not a readable"),
    "callbacks set": (set_in("params", "callbacks", value=["x"]), "callbacks must be None"),
    "unknown augment_": (set_in("fitted", "augment_", value="warp"), "augment_ must be"),
    "augment_ auto": (set_in("fitted", "augment_", value="auto"), "augment_ must be"),
    "malformed evidence": (set_in("fitted", "augment_evidence_", value={"alignment_gain": "x"}),
                           "augment_evidence_ is malformed"),
    "evidence not finite": (
        set_in("fitted", "augment_evidence_",
               value={"alignment_gain": 0.1, "holdout_accuracy": {"roll": float("nan")}}),
        "augment_evidence_ is malformed|invalid metadata|not a readable"),
}


@pytest.mark.parametrize("kind", list(CRAFTED))
def test_crafted_model_files_are_refused(saved, tmp_path, kind):
    edit, message = CRAFTED[kind]
    craft(saved, tmp_path / "bad", meta=edit)
    with pytest.raises(ValueError, match=message):
        load(tmp_path / "bad")


def test_duplicate_metadata_member_is_refused(saved, tmp_path):
    evil = json.loads(zipfile.ZipFile(saved).read("metadata.json"))
    evil["fitted"]["classes"]["values"] = ["a", "b"]
    with pytest.warns(UserWarning, match="Duplicate name"):
        craft(saved, tmp_path / "bad", extra=[("metadata.json", json.dumps(evil))])
    with pytest.raises(ValueError, match="occur more than once"):
        load(tmp_path / "bad")


def test_pretrainer_relabelled_as_classifier_is_refused(saved_pretrainer, tmp_path):
    craft(saved_pretrainer, tmp_path / "bad",
          meta=set_in("estimator", value="SPTClassifier"))
    with pytest.raises(ValueError, match="must hold classes"):
        load(tmp_path / "bad")


def test_oversized_metadata_is_refused_unread(saved, tmp_path):
    def pad(meta):
        text = json.dumps(meta)
        return (text + " " * (persistence_format.MAX_METADATA_BYTES + 1 - len(text))).encode()

    craft(saved, tmp_path / "bad", meta=pad)
    with pytest.raises(ValueError, match="more than the"):
        load(tmp_path / "bad")


def test_architecture_is_checked_before_anything_is_allocated(saved, tmp_path, monkeypatch):
    craft(saved, tmp_path / "bad",
          meta=set_in("fitted", "encoder_kwargs", "dim_feedforward", value=2**16))
    builds = []
    original = persistence_loading._build

    def spy(meta, device, probe=False):
        builds.append(probe)
        return original(meta, device, probe=probe)

    monkeypatch.setattr(persistence_loading, "_build", spy)
    with pytest.raises(ValueError, match="do not fit the architecture.*needs F32\\[65536"):
        load(tmp_path / "bad")
    assert builds == [True]  # only the meta-device probe, which allocates nothing


def test_weights_longer_than_their_header_describes_are_refused(saved, tmp_path):
    craft(saved, tmp_path / "bad", weights=lambda w: w + b"\0" * 4096)
    with pytest.raises(ValueError, match="corrupted weights.*header describes"):
        load(tmp_path / "bad")
