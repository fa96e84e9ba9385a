"""Saving and loading without pickle: identical outputs, clear errors on bad files."""

import io
import json
import pickle
import zipfile

import joblib
import numpy as np
import pytest
import torch
from conftest import TINY_NET as TINY
from conftest import make_panel
from skorch.callbacks import EpochScoring

import sktspt
from sktspt import SPTClassifier, SPTPretrainer, load
from sktspt.persistence import FORMAT_VERSION


@pytest.fixture(scope="module")
def data():
    return make_panel(n=24, t=30)


@pytest.fixture(scope="module")
def fitted(data):
    X, y = data
    return SPTClassifier(pretrain_epochs=2, max_epochs=2, **TINY).fit(X, y)


def assert_same_outputs(a, b, X):
    np.testing.assert_array_equal(a.transform(X), b.transform(X))
    if hasattr(a, "predict_proba"):
        np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
        np.testing.assert_array_equal(a.predict(X), b.predict(X))


def fitted_attributes(est):
    return {k for k in vars(est) if k.endswith("_") and not k.startswith("__")}


@pytest.mark.parametrize(
    "labels",
    [
        np.array([3, 7]),
        np.array(["cat", "dog"]),
        np.array(["cat", "dog"], dtype=object),
        np.array([False, True]),
        np.array([-2.0, 2.0]),
    ],
    ids=["int", "str", "object", "bool", "float"],
)
def test_classifier_roundtrip_keeps_outputs_and_label_dtype(data, tmp_path, labels):
    X, y = data
    clf = SPTClassifier(pretrain_epochs=1, max_epochs=2, **TINY).fit(X, labels[y])
    clf.save(tmp_path / "model.sktspt")
    loaded = load(tmp_path / "model.sktspt")
    assert type(loaded) is SPTClassifier
    assert loaded.classes_.dtype == clf.classes_.dtype
    np.testing.assert_array_equal(loaded.classes_, clf.classes_)
    assert_same_outputs(clf, loaded, X)
    assert loaded.predict(X[:3]).dtype == clf.predict(X[:3]).dtype


@pytest.mark.parametrize(
    "params",
    [
        dict(normalize="global"),
        dict(normalize="instance", architecture__positional="learned", tokenizer__patch_size=4),
        dict(normalize=None, architecture__positional="rotary"),
        dict(pretrain_objective="masked+sigreg", masking="channel"),
        dict(pretrain_objective="lejepa", architecture="crate"),
    ],
    ids=["global", "instance-learned", "none-rotary", "sigreg", "lejepa-crate"],
)
def test_pretrainer_roundtrip_keeps_everything(data, tmp_path, params):
    X, _ = data
    pre = SPTPretrainer(pretrain_epochs=2, **TINY, **params).fit(X)
    pre.save(tmp_path / "pre.sktspt")
    loaded = sktspt.load(tmp_path / "pre.sktspt")
    assert type(loaded) is SPTPretrainer
    assert loaded._settings() == pre._settings()
    assert fitted_attributes(loaded) == fitted_attributes(pre)
    assert loaded.encoder_kwargs_ == pre.encoder_kwargs_
    assert type(loaded.net_) is type(pre.net_)
    assert loaded.history_[:, "train_loss"] == pre.history_[:, "train_loss"]
    assert_same_outputs(pre, loaded, X)
    if params.get("pretrain_objective") != "lejepa":
        np.testing.assert_array_equal(loaded.reconstruct(X), pre.reconstruct(X))


def test_all_fitted_state_is_restored(fitted, data, tmp_path):
    X, _ = data
    fitted.save(tmp_path / "m")
    loaded = load(tmp_path / "m")
    assert fitted_attributes(loaded) == fitted_attributes(fitted)
    for name in ("n_channels_", "n_timepoints_", "equal_length_", "patch_size_", "max_tokens_"):
        assert getattr(loaded, name) == getattr(fitted, name)
    np.testing.assert_array_equal(loaded.normalizer_.mean_, fitted.normalizer_.mean_)
    np.testing.assert_array_equal(loaded.normalizer_.std_, fitted.normalizer_.std_)
    assert loaded.pretrain_history_[:, "train_loss"] == fitted.pretrain_history_[:, "train_loss"]
    assert loaded.get_feature_names_out().tolist() == fitted.get_feature_names_out().tolist()


def test_unequal_length_and_2d_inputs_roundtrip(tmp_path):
    rng = np.random.default_rng(1)
    series = [rng.normal(size=(2, int(t))) for t in rng.integers(12, 30, size=16)]
    y = np.arange(16) % 2
    clf = SPTClassifier(pretrain_epochs=1, max_epochs=1, **TINY).fit(series, y)
    clf.save(tmp_path / "ragged")
    assert_same_outputs(clf, load(tmp_path / "ragged"), series)

    X2 = rng.normal(size=(16, 20))
    clf2 = SPTClassifier(pretrain_epochs=1, max_epochs=1, **TINY).fit(X2, y)
    clf2.save(tmp_path / "flat")
    loaded = load(tmp_path / "flat")
    assert loaded.n_features_in_ == 20
    assert_same_outputs(clf2, loaded, X2)


def test_file_holds_only_json_and_safetensors(fitted, tmp_path):
    fitted.save(tmp_path / "m.sktspt")
    with zipfile.ZipFile(tmp_path / "m.sktspt") as zf:
        assert sorted(zf.namelist()) == ["metadata.json", "weights.safetensors"]
        meta = json.loads(zf.read("metadata.json"))
        weights = zf.read("weights.safetensors")
    assert meta["format_version"] == FORMAT_VERSION
    assert meta["sktspt_version"] == sktspt.__version__
    assert meta["estimator"] == "SPTClassifier"
    assert meta["fitted"]["classes"]["dtype"] == fitted.classes_.dtype.str
    assert b"pickle" not in weights and not weights.startswith(b"\x80")


def test_loading_does_not_touch_the_global_rng(fitted, tmp_path):
    fitted.save(tmp_path / "m")
    state = torch.get_rng_state()
    load(tmp_path / "m")
    assert torch.equal(state, torch.get_rng_state())


def test_gpu_saved_model_loads_on_cpu(fitted, data, tmp_path, monkeypatch):
    """A model saved with device='cuda' loads on a machine without CUDA."""
    X, _ = data
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    gpu_model = pickle.loads(pickle.dumps(fitted))
    gpu_model.set_params(device="cuda")
    gpu_model.save(tmp_path / "gpu")
    with pytest.warns(UserWarning, match="not available here"):
        fallback = load(tmp_path / "gpu")
    assert fallback.device == "cpu"
    explicit = load(tmp_path / "gpu", device="cpu")
    assert explicit.device == "cpu"
    assert_same_outputs(fitted, fallback, X)
    assert_same_outputs(fitted, explicit, X)


def test_pickle_and_joblib_still_work(fitted, data, tmp_path):
    X, _ = data
    assert_same_outputs(fitted, pickle.loads(pickle.dumps(fitted)), X)
    joblib.dump(fitted, tmp_path / "m.joblib")
    assert_same_outputs(fitted, joblib.load(tmp_path / "m.joblib"), X)


def test_resolved_mixup_is_saved_with_the_model(tmp_path):
    """``mixup="auto"`` is resolved on the training data, which a loaded model lacks."""
    steps = np.linspace(0, 1, 30)
    X = np.sin(2 * np.pi * (1 + np.arange(24) % 2)[:, None, None] * steps).astype(np.float32)
    X = X + np.linspace(0, 1, 24, dtype=np.float32)[:, None, None]
    clf = SPTClassifier(pretrain_epochs=0, max_epochs=1, **TINY).fit(X, np.arange(24) % 2)
    assert clf.mixup == "auto" and clf.mixup_ > 0
    clf.save(tmp_path / "m")
    loaded = load(tmp_path / "m")
    assert loaded.mixup == "auto" and loaded.mixup_ == clf.mixup_
    assert loaded.net_.mixup_alpha == clf.mixup_  # a warm start mixes as the fit did
    assert loaded.mixup__kind == "auto" and loaded.mixup_kind_ == clf.mixup_kind_ == "blend"
    assert loaded.net_.mixup_kind == "blend"


def test_resolved_mixup_kind_is_saved_with_the_model(tmp_path):
    """Rough series resolve ``mixup_kind="auto"`` to the window; a loaded model keeps it."""
    X = np.random.default_rng(0).normal(size=(24, 1, 30)).astype(np.float32)
    clf = SPTClassifier(pretrain_epochs=0, max_epochs=1, **TINY).fit(X, np.arange(24) % 2)
    assert clf.mixup_kind_ == "cutmix"
    clf.save(tmp_path / "m")
    loaded = load(tmp_path / "m")
    assert loaded.mixup__kind == "auto" and loaded.mixup_kind_ == "cutmix"
    assert loaded.net_.mixup_kind == "cutmix"


def test_loaded_classifier_can_warm_start(fitted, data, tmp_path):
    X, y = data
    fitted.save(tmp_path / "m")
    loaded = load(tmp_path / "m").set_params(warm_start=True)
    loaded.fit(X, y)
    assert len(loaded.history_) == len(fitted.history_) + fitted.max_epochs
    assert np.isfinite(loaded.predict_proba(X)).all()


@pytest.mark.parametrize(
    "name, value",
    [
        ("callbacks", [EpochScoring("accuracy")]),
        ("random_state", np.random.RandomState(0)),
        ("tokenizer__patch_size", (4,)),
    ],
)
def test_non_json_parameters_are_rejected(fitted, tmp_path, name, value):
    est = pickle.loads(pickle.dumps(fitted)).set_params(**{name: value})
    with pytest.raises(ValueError, match=f"Cannot save parameter {name}="):
        est.save(tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_pretrainer_parameter_is_rejected_with_advice(data, tmp_path):
    from sklearn.frozen import FrozenEstimator

    X, y = data
    pre = SPTPretrainer(pretrain_epochs=1, **TINY).fit(X)
    clf = SPTClassifier(pretrainer=FrozenEstimator(pre), max_epochs=1, **TINY).fit(X, y)
    with pytest.raises(ValueError, match="already contain the pretrained encoder"):
        clf.save(tmp_path / "m")
    clf.set_params(pretrainer=None).save(tmp_path / "m")
    assert_same_outputs(clf, load(tmp_path / "m"), X)


def test_unfitted_and_foreign_estimators_are_refused(tmp_path):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        SPTClassifier().save(tmp_path / "m")

    class Mine(SPTClassifier):
        pass

    with pytest.raises(TypeError, match="pickle or joblib"):
        sktspt.persistence.save(Mine(), tmp_path / "m")


# --- bad files ------------------------------------------------------------------------------
def rewrite(src, dst, meta=None, weights=None, drop=()):
    """Copy a saved model, replacing or dropping members."""
    with zipfile.ZipFile(src) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    if meta is not None:
        members["metadata.json"] = meta(json.loads(members["metadata.json"]))
    if weights is not None:
        members["weights.safetensors"] = weights(members["weights.safetensors"])
    with zipfile.ZipFile(dst, "w") as zf:
        for name, blob in members.items():
            if name not in drop:
                zf.writestr(name, blob if isinstance(blob, bytes) else json.dumps(blob))


def with_meta(change):
    def edit(meta):
        change(meta)
        return meta

    return edit


def test_incompatible_format_version_is_refused(fitted, tmp_path):
    fitted.save(tmp_path / "m")
    rewrite(tmp_path / "m", tmp_path / "future",
            meta=with_meta(lambda m: m.update(format_version=FORMAT_VERSION + 1)))
    with pytest.raises(ValueError, match="file format version 2"):
        load(tmp_path / "future")


def flip_byte(blob: bytes) -> bytes:
    b = bytearray(blob)
    b[len(b) // 2] ^= 0xFF
    return bytes(b)


def shrink_a_weight(blob: bytes) -> bytes:
    from safetensors.torch import load as load_st
    from safetensors.torch import save as save_st

    state = load_st(blob)
    # sorted: safetensors' key order is not fixed; last dim > 1, so slicing changes the shape
    key = next(k for k in sorted(state) if k.endswith("weight") and state[k].shape[-1] > 1)
    state[key] = state[key][..., :1].contiguous()
    return save_st(state)


def drop_a_weight(blob: bytes) -> bytes:
    from safetensors.torch import load as load_st
    from safetensors.torch import save as save_st

    state = load_st(blob)
    state.pop(min(state))  # a fixed key: safetensors does not fix the order
    return save_st(state)


BAD_FILES = {
    "empty": lambda src, dst: dst.write_bytes(b""),
    "not a zip": lambda src, dst: dst.write_bytes(b"\x80\x04\x95 this is a pickle"),
    "truncated": lambda src, dst: dst.write_bytes(src.read_bytes()[: len(src.read_bytes()) // 2]),
    "bit flip": lambda src, dst: dst.write_bytes(flip_byte(src.read_bytes())),
    "no weights": lambda src, dst: rewrite(src, dst, drop=("weights.safetensors",)),
    "no metadata": lambda src, dst: rewrite(src, dst, drop=("metadata.json",)),
    "bad json": lambda src, dst: rewrite(src, dst, meta=lambda m: b"{nope"),
    "other json": lambda src, dst: rewrite(src, dst, meta=lambda m: [1, 2]),
    "garbage weights": lambda src, dst: rewrite(src, dst, weights=lambda w: b"\x00" * 64),
    "shape mismatch": lambda src, dst: rewrite(src, dst, weights=shrink_a_weight),
    "missing weight": lambda src, dst: rewrite(src, dst, weights=drop_a_weight),
    "unknown class": lambda src, dst: rewrite(
        src, dst, meta=with_meta(lambda m: m.update(estimator="os.system"))),
    "unknown param": lambda src, dst: rewrite(
        src, dst, meta=with_meta(lambda m: m["params"].update(evil=1))),
    "invalid param": lambda src, dst: rewrite(
        src, dst, meta=with_meta(lambda m: m["params"].update(masking="evil"))),
    "missing state": lambda src, dst: rewrite(
        src, dst, meta=with_meta(lambda m: m["fitted"].pop("normalizer"))),
    "bad class dtype": lambda src, dst: rewrite(
        src, dst, meta=with_meta(lambda m: m["fitted"]["classes"].update(dtype="|V8"))),
    "negative mixup_": lambda src, dst: rewrite(
        src, dst, meta=with_meta(lambda m: m["fitted"].update(mixup_=-0.5))),
    "auto mixup unresolved": lambda src, dst: rewrite(
        src, dst, meta=with_meta(lambda m: m["fitted"].pop("mixup_"))),
    "auto mixup_kind unresolved": lambda src, dst: rewrite(
        src, dst, meta=with_meta(lambda m: m["fitted"].pop("mixup_kind_"))),
    "unknown mixup_kind_": lambda src, dst: rewrite(
        src, dst, meta=with_meta(lambda m: m["fitted"].update(mixup_kind_="swirl"))),
    "wrong shape state": lambda src, dst: rewrite(
        src, dst, meta=with_meta(lambda m: m["fitted"].update(n_channels_=5))),
}


@pytest.mark.parametrize("kind", list(BAD_FILES))
def test_corrupted_files_give_a_clear_value_error(fitted, tmp_path, kind):
    fitted.save(tmp_path / "good")
    BAD_FILES[kind](tmp_path / "good", tmp_path / "bad")
    clear = (
        "not a readable sktspt model file|invalid metadata|corrupted weights|"
        "do not fit the architecture"
    )
    with pytest.raises(ValueError, match=clear):
        load(tmp_path / "bad")


def test_save_replaces_an_existing_file(fitted, data, tmp_path):
    X, y = data
    (tmp_path / "m").write_bytes(b"old")
    fitted.save(tmp_path / "m")
    assert_same_outputs(fitted, load(tmp_path / "m"), X)
    assert [p.name for p in tmp_path.iterdir()] == ["m"]  # no temporary left behind


def test_save_accepts_a_path_only(fitted):
    with pytest.raises(TypeError):
        fitted.save(io.BytesIO())


def test_the_saved_estimator_table_names_the_classes_that_loading_builds():
    from sktspt.persistence.format import ESTIMATORS
    from sktspt.persistence.loading import _CLASSES as classes

    assert set(classes) == set(ESTIMATORS)
    assert all(ESTIMATORS[name] == cls.__module__ for name, cls in classes.items())

