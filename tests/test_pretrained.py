"""Pretrained encoders: built by ``benchmarks/pretrain_archive.py`` on an archive folder's
training splits, loaded by ``sktspt.pretrained.pretrained``, one argument away from the
estimators, and judged in the benchmark on datasets they never saw (``spt-archive``)."""

import json

import numpy as np
import pytest
from conftest import load_benchmark
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator

from sktspt import SPTClassifier, SPTPretrainer, SPTRegressor
from sktspt.pretrained import card, pretrained, sha256

TINY = ["d_model=16", "depth=1", "architecture__n_heads=2", "architecture__dim_feedforward=16"]


def _archive(root, names=("Aa", "Bb", "Cc", "Dd")):
    rng = np.random.default_rng(0)
    for k, name in enumerate(names):
        (root / name).mkdir(parents=True)
        for split in ("TRAIN", "TEST"):
            lines = [f"{i % 2}\t" + "\t".join(f"{v:.3f}" for v in rng.normal(size=12 + 6 * k)
                                               + (i % 2)) for i in range(8)]
            (root / name / f"{name}_{split}.tsv").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture(scope="module")
def encoders(tmp_path_factory):
    """Half-archive encoders A and B of a four-problem folder (a few steps each)."""
    root = tmp_path_factory.mktemp("arch")
    data, out = _archive(root / "data"), root / "enc"
    build = load_benchmark("pretrain_archive")
    for half in ("A", "B"):
        assert build.main(["--data-dir", str(data), "--half", half, "--output",
                           str(out / f"half-{half}.sktspt"), "--steps", "8", "--params",
                           *TINY]) == 0
    return data, out


def test_the_build_writes_the_encoder_its_card_and_log(encoders):
    _, out = encoders
    info = json.loads((out / "half-A.json").read_text())
    assert info["data"]["datasets"] == ["Aa", "Cc"] and info["data"]["half"] == "A"
    assert info["data"]["splits"] == "training only" and info["data"]["series"] == 16
    assert info["sha256"] == sha256(out / "half-A.sktspt")
    assert info["settings"]["normalize"] == "instance" and "UCR" in info["licence of the data"]
    assert "--half A" in info["command"] and info["parameters"] > 0
    assert "SHA-256" in (out / "half-A.md").read_text()
    assert (out / "half-A.log").read_text().startswith("epoch\ttrain_loss")


def test_a_pretrained_encoder_embeds_without_fitting_and_seeds_the_estimators(encoders):
    _, out = encoders
    encoder = pretrained(path=out / "half-A.sktspt")
    assert isinstance(encoder, FrozenEstimator) and isinstance(encoder.estimator, SPTPretrainer)
    X = np.random.default_rng(1).normal(size=(6, 1, 20))
    Z = encoder.transform(X)  # nothing fitted here
    assert Z.shape == (6, 16) and np.isfinite(Z).all()
    y = np.arange(6) % 2
    clf = SPTClassifier(pretrainer=encoder, max_epochs=1, random_state=0).fit(X, y)
    assert clf.encoder_kwargs_["d_model"] == 16 and clf.predict(X).shape == (6,)
    assert clone(clf).get_params()["pretrainer"] is not None  # survives clone, still fitted
    reg = SPTRegressor(pretrainer=encoder, max_epochs=1, random_state=0).fit(X, y * 1.5)
    assert reg.predict(X).shape == (6,)
    with pytest.raises(ValueError, match="X has 2 channels, but the pretrainer was fitted on 1"):
        SPTClassifier(pretrainer=encoder, max_epochs=1).fit(np.zeros((4, 2, 20)), y[:4])


def test_unknown_or_tampered_encoders_are_refused(encoders, tmp_path, monkeypatch):
    import shutil

    import sktspt.pretrained as hub

    with pytest.raises(ValueError, match="no pretrained encoder named 'nothing'"):
        pretrained("nothing")
    _, out = encoders
    for suffix in (".sktspt", ".json"):
        shutil.copy(out / f"half-A{suffix}", tmp_path / f"mine{suffix}")
    monkeypatch.setattr(hub, "FOLDER", tmp_path)
    assert hub.available() == ["mine"] and card("mine")["name"] == "half-A"
    assert isinstance(pretrained("mine").estimator, SPTPretrainer)
    data = bytearray((tmp_path / "mine.sktspt").read_bytes())
    data[-10] ^= 1
    (tmp_path / "mine.sktspt").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="does not match its model card"):
        pretrained("mine")


def test_spt_archive_fine_tunes_from_the_half_that_never_saw_the_dataset(encoders,
                                                                          monkeypatch):
    from sktspt.benchmark import MODELS
    from sktspt.benchmark.models import ENCODERS_ENV, half_encoder
    from sktspt.benchmark.run import Job, run_job

    data, out = encoders
    assert half_encoder("Aa", out).endswith("half-B.sktspt")
    assert half_encoder("Bb", out).endswith("half-A.sktspt")
    with pytest.raises(ValueError, match="saw Zz"):
        half_encoder("Zz", data)  # a folder without encoders
    monkeypatch.setenv(ENCODERS_ENV, str(out))
    from sktspt.benchmark.cli import _encoder_setting  # the page says which encoders

    assert _encoder_setting(["spt-archive", "minirocket"]) == {"$SKTSPT_ENCODERS": str(out)}
    assert _encoder_setting(["spt-span", "minirocket"]) == {}
    row = run_job(Job("Cc", "spt-archive", 0, None, data_dir=str(data)), MODELS["spt-archive"],
                  "auto", 1, {}, n_parallel=1, threads=1)
    assert row["error"] == "" and 0 <= row["accuracy"] <= 1
    assert row["n_params"] < 20000  # the tiny encoder's network, not a default one
    row = run_job(Job("Cc", "scratch-archive", 0, None, data_dir=str(data)),
                  MODELS["scratch-archive"], "auto", 1, {"schedule__steps": 3}, n_parallel=1,
                  threads=1)
    assert row["error"] == "" and row["pretrain_epochs"] == 0  # same input handling, no start
    row = run_job(Job("Cc", "archive-probe", 0, None, data_dir=str(data)),
                  MODELS["archive-probe"], "auto", 1, {}, n_parallel=1, threads=1)
    assert row["error"] == "" and 0 <= row["accuracy"] <= 1  # embeddings and a ridge only


def test_a_shipped_encoder_is_one_argument_away_by_its_name(encoders, tmp_path, monkeypatch):
    import shutil

    import sktspt.pretrained as hub
    from sktspt import load

    _, out = encoders
    for suffix in (".sktspt", ".json"):
        shutil.copy(out / f"half-A{suffix}", tmp_path / f"mine{suffix}")
    monkeypatch.setattr(hub, "FOLDER", tmp_path)
    X, y = np.random.default_rng(2).normal(size=(6, 1, 30)), np.arange(6) % 2
    clf = SPTClassifier(pretrainer="mine", max_epochs=1, random_state=0).fit(X, y)
    assert clf.encoder_kwargs_["d_model"] == 16 and clone(clf).pretrainer == "mine"
    np.testing.assert_array_equal(  # the same start as the loaded encoder object
        clf.predict_proba(X), SPTClassifier(pretrainer=pretrained("mine"), max_epochs=1,
                                            random_state=0).fit(X, y).predict_proba(X))
    clf.save(tmp_path / "clf.sktspt")  # a name is a plain value: the file needs no pickle
    np.testing.assert_array_equal(load(tmp_path / "clf.sktspt").predict_proba(X),
                                  clf.predict_proba(X))
    assert SPTRegressor(pretrainer="mine", max_epochs=1).fit(X, y * 1.0).predict(X).shape == (6,)
    from sktspt.pretrained import FINETUNE_STEPS  # a shipped start's budget, unless given

    assert SPTClassifier(pretrainer="mine")._auto_budget("finetune") == FINETUNE_STEPS
    assert SPTClassifier(pretrainer="mine", schedule__steps=7)._auto_budget("finetune") == 7
    with pytest.raises(ValueError, match="no pretrained encoder named 'nothing'.*available: mine"):
        SPTClassifier(pretrainer="nothing").fit(X, y)
    with pytest.raises(ValueError, match=r"named .pre.pkl.*FrozenEstimator\(sktspt.load"):
        SPTClassifier(pretrainer="pre.pkl").fit(X, y)  # a path is not a name: say how



def test_the_shipped_archive_encoder_is_checked_and_one_argument_away():
    from sktime.datasets import load_gunpoint

    from sktspt.pretrained import available

    assert "archive" in available()
    info = card("archive")
    assert info["data"]["series"] == 47700 and len(info["data"]["datasets"]) == 93
    assert info["settings"]["tokenizer__length"] == 256
    assert info["data"]["splits"] == "training only"
    encoder = pretrained("archive")  # its SHA-256 checked against the card
    X, y = load_gunpoint(split="train", return_X_y=True, return_type="numpy3D")
    Z = encoder.transform(X[:10, :, :77])  # any length, no fitting
    assert Z.shape == (10, info["architecture"]["d_model"]) and np.isfinite(Z).all()
    clf = SPTClassifier(pretrainer="archive", schedule__steps=4, random_state=0).fit(X[:20], y[:20])
    assert clf.max_tokens_ == 32 and clf.predict(X[20:30]).shape == (10,)
    with pytest.raises(ValueError, match="2 channels.*shipped encoder 'archive'.*univariate"):
        SPTClassifier(pretrainer="archive").fit(np.zeros((4, 2, 30)), [0, 1, 0, 1])
