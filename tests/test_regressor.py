"""SPTRegressor: targets in their own units, several outputs, bad targets, save and load."""

import inspect
import json
import pickle
import zipfile

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from sktspt import ResumableCheckpoint, SPTClassifier, SPTRegressor, load
from sktspt.training import AugmentedNetRegressor

TINY = dict(depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=16,
            architecture__dropout=0.0, random_state=0,
            pretrain_epochs=1, max_epochs=3, lr=3e-3)


def make_regression_panel(n=32, c=2, t=24, seed=0):
    """Series whose targets are linear in a window mean of each channel."""
    g = np.random.default_rng(seed)
    X = g.normal(size=(n, c, t)).astype(np.float32)
    a, b = X[:, 0, :6].mean(axis=1), X[:, 1, 6:12].mean(axis=1)
    return X, np.c_[100.0 + 20.0 * a - 10.0 * b, -5.0 + 3.0 * b].astype(np.float64)


@pytest.fixture(scope="module")
def data():
    return make_regression_panel()


@pytest.fixture(scope="module")
def fitted(data):
    X, Y = data
    return SPTRegressor(**TINY).fit(X, Y[:, 0])


def test_written_out_init_is_the_classifiers_less_classes_plus_loss():
    """The classifier's parameters and defaults, less the class-specific ones, with ``loss``
    after ``batch_size``; all keyword-only; clone works."""
    params = list(inspect.signature(SPTRegressor.__init__).parameters.values())[1:]
    clf = list(inspect.signature(SPTClassifier.__init__).parameters.values())[1:]
    names = [p.name for p in clf if p.name not in ("class_weight", "early_exit")]
    names.insert(names.index("batch_size") + 1, "loss")
    assert [p.name for p in params] == names
    assert {p.kind for p in params[:-1]} == {inspect.Parameter.KEYWORD_ONLY}
    assert "class_weight" not in SPTRegressor().get_params()
    doc = inspect.getdoc(SPTRegressor)
    assert "<parameters>" not in doc and all(f"\n{p.name} : " in doc for p in params[:-1])
    est = SPTRegressor(loss="huber", mixup=0.2)
    assert clone(est).get_params() == est.get_params()


def test_bad_parameters_name_themselves(data):
    X, Y = data
    with pytest.raises(ValueError, match="loss must be"):
        SPTRegressor(**TINY, loss="absolute").fit(X, Y[:, 0])
    with pytest.raises(TypeError, match="unexpected keyword argument 'class_weight'"):
        SPTRegressor(**TINY, class_weight="balanced").fit(X, Y[:, 0])


def test_one_output_is_predicted_as_a_vector_with_r2_score(fitted, data):
    X, Y = data
    pred = fitted.predict(X)
    assert pred.shape == (len(X),) and pred.dtype == np.float64
    assert fitted.n_outputs_ == 1 and isinstance(fitted.net_, AugmentedNetRegressor)
    np.testing.assert_allclose(fitted.target_mean_, [Y[:, 0].mean()])
    np.testing.assert_allclose(fitted.target_scale_, [Y[:, 0].std()])
    residual = ((Y[:, 0] - pred) ** 2).sum() / ((Y[:, 0] - Y[:, 0].mean()) ** 2).sum()
    assert fitted.score(X, Y[:, 0]) == pytest.approx(1 - residual)


def test_regressor_learns_the_target(data):
    """A longer fit explains most of the training targets' variance."""
    X, Y = data
    reg = SPTRegressor(**{**TINY, "max_epochs": 40}).fit(X, Y[:, 0])
    assert reg.score(X, Y[:, 0]) > 0.8


def test_predictions_are_in_the_targets_units(data):
    """Standardised inside fit: scaling and shifting y scales and shifts the predictions."""
    X, Y = data
    y = Y[:, 0]
    base = SPTRegressor(**TINY).fit(X, y).predict(X)
    scaled = SPTRegressor(**TINY).fit(X, 1000.0 * y + 5.0).predict(X)
    np.testing.assert_allclose(scaled, 1000.0 * base + 5.0, rtol=1e-4)
    assert abs(base.mean() - y.mean()) < 3 * y.std()  # near the targets, not near 0


def test_several_outputs_are_learned_together(data):
    X, Y = data
    reg = SPTRegressor(**TINY).fit(X, Y)
    pred = reg.predict(X)
    assert pred.shape == Y.shape and reg.n_outputs_ == 2
    assert reg.net_.module_.head[1].out_features == 2  # one network, not one per output
    np.testing.assert_allclose(reg.target_mean_, Y.mean(axis=0))
    assert np.isfinite(reg.score(X, Y))


@pytest.mark.parametrize("options", [
    dict(loss="huber"), dict(mixup=0.4, mixup__kind="blend"),
    dict(validation_fraction=0.25),
])
def test_fit_options_train_and_stay_reproducible(data, options):
    X, Y = data
    a = SPTRegressor(**TINY, **options).fit(X, Y).predict(X)
    b = SPTRegressor(**TINY, **options).fit(X, Y).predict(X)
    assert a.shape == Y.shape and np.isfinite(a).all()
    np.testing.assert_array_equal(a, b)


def test_loss_option_changes_the_fit(data):
    X, Y = data
    mse = SPTRegressor(**TINY).fit(X, Y[:, 0])
    huber = SPTRegressor(**TINY, loss="huber").fit(X, Y[:, 0])
    assert type(huber.net_.criterion_).__name__ == "HuberLoss"
    assert not np.array_equal(mse.predict(X), huber.predict(X))


def test_sample_weights_of_ones_change_nothing_and_zero_weights_matter(data):
    X, Y = data
    y = Y[:, 0]
    plain = SPTRegressor(**TINY).fit(X, y).predict(X)
    ones = SPTRegressor(**TINY).fit(X, y, sample_weight=np.full(len(y), 3.0)).predict(X)
    np.testing.assert_allclose(ones, plain, rtol=1e-5)
    half = (np.arange(len(y)) < len(y) // 2).astype(float)
    weighted = SPTRegressor(**TINY).fit(X, y, sample_weight=half).predict(X)
    assert not np.allclose(weighted, plain, rtol=1e-5)


def test_mixup_mixes_targets_linearly():
    y = np.array([[0.0, 10.0], [2.0, 20.0], [4.0, 40.0]], dtype=np.float32)
    import torch

    lam = torch.tensor([1.0, 0.5, 0.75])
    partner = torch.tensor([1, 0, 0])
    weight = torch.tensor([1.0, 3.0, 1.0])
    mixed, w = AugmentedNetRegressor._mixed_targets(torch.from_numpy(y), weight, partner, lam, 2)
    torch.testing.assert_close(mixed, torch.tensor([[0.0, 10.0], [1.0, 15.0], [3.0, 32.5]]))
    torch.testing.assert_close(w, torch.tensor([1.0, 2.0, 1.0]))


def test_warm_start_continues_on_the_first_fits_scale(data):
    X, Y = data
    reg = SPTRegressor(**TINY, warm_start=True).fit(X, Y)
    mean, first = reg.target_mean_.copy(), reg.predict(X)
    reg.fit(X, Y + 1000.0)  # more epochs on the same standardisation
    np.testing.assert_array_equal(reg.target_mean_, mean)
    assert len(reg.history_) == 2 * TINY["max_epochs"]
    assert not np.array_equal(reg.predict(X), first)
    with pytest.raises(ValueError, match="y has 1 output"):
        reg.fit(X, Y[:, 0])


def test_pretrainer_and_unlabeled_series_feed_pretraining(data):
    """A fitted pretrainer's encoder starts fine-tuning; extra series change pretraining."""
    from sklearn.frozen import FrozenEstimator

    from sktspt import SPTPretrainer

    X, Y = data
    pre = SPTPretrainer(**{k: v for k, v in TINY.items() if k != "max_epochs"}).fit(X)
    reg = SPTRegressor(**{**TINY, "max_epochs": 0}, pretrainer=FrozenEstimator(pre)).fit(X, Y)
    np.testing.assert_array_equal(reg.transform(X), pre.transform(X))
    plain = SPTRegressor(**TINY).fit(X, Y)
    extra = SPTRegressor(**TINY).fit(X, Y, X_unlabeled=X[:, :, ::-1].copy())
    assert len(extra.pretrain_history_) == len(plain.pretrain_history_)
    assert not np.array_equal(extra.predict(X), plain.predict(X))


def test_a_finished_checkpointed_fit_is_reloaded(data, tmp_path):
    X, Y = data
    first = SPTRegressor(**TINY, callbacks=[ResumableCheckpoint(tmp_path / "run")]).fit(X, Y)
    again = SPTRegressor(**TINY, callbacks=[ResumableCheckpoint(tmp_path / "run")]).fit(X, Y)
    np.testing.assert_array_equal(again.predict(X), first.predict(X))
    with pytest.raises(ValueError, match="different fit"):  # other targets, other fit
        SPTRegressor(**TINY, callbacks=[ResumableCheckpoint(tmp_path / "run")]).fit(X, Y[::-1])


# --- bad input (issue 61.4) --------------------------------------------------------------
@pytest.mark.parametrize("bad, kind, message", [
    (None, ValueError, "requires y to be passed"),
    (np.array(["a", "b"] * 16), ValueError, "numeric targets y"),
    (np.array([1.0 + 1j] * 32), ValueError, "real-valued targets"),
    (np.r_[np.nan, np.arange(31.0)], ValueError, "Input y contains NaN"),
    (np.r_[np.inf, np.arange(31.0)], ValueError, "Input y contains infinity"),
    (np.full(32, 7.0), ValueError, r"y is constant \(7.0 for every series\)"),
    (np.c_[np.arange(32.0), np.ones(32)], ValueError, r"y\[:, \[1\]\] is constant"),
    (np.arange(31.0), ValueError, "X has 32, y has 31"),
    (np.zeros((32, 2, 2)), ValueError, "y must be of shape"),
])
def test_bad_targets_have_a_clear_message(data, bad, kind, message):
    X, _ = data
    with pytest.raises(kind, match=message):
        SPTRegressor(**TINY).fit(X, bad)


def test_one_series_is_refused():
    with pytest.raises(ValueError, match="at least 2 training series, got 1 sample"):
        SPTRegressor(**TINY).fit(np.zeros((1, 1, 24)), [1.0])


def test_predict_before_fit_is_not_fitted(data):
    X, _ = data
    for method in ("predict", "transform"):
        with pytest.raises(NotFittedError):
            getattr(SPTRegressor(**TINY), method)(X)
    with pytest.raises(NotFittedError):
        SPTRegressor(**TINY).score(X, np.arange(len(X), dtype=float))


def test_predict_checks_the_series(fitted, data):
    X, _ = data
    with pytest.raises(ValueError, match="channel"):
        fitted.predict(X[:, :1])


# --- persistence ---------------------------------------------------------------------------
@pytest.mark.parametrize("columns, options", [(0, {}), (slice(None), {"loss": "huber"})])
def test_save_and_load_give_the_same_predictions(data, tmp_path, columns, options):
    X, Y = data
    reg = SPTRegressor(**TINY, **options).fit(X, Y[:, columns])
    path = tmp_path / "reg.sktspt"
    reg.save(path)
    loaded = load(path)
    assert type(loaded) is SPTRegressor and loaded.get_params() == reg.get_params()
    np.testing.assert_array_equal(loaded.predict(X), reg.predict(X))
    np.testing.assert_array_equal(loaded.target_mean_, reg.target_mean_)
    np.testing.assert_array_equal(loaded.target_scale_, reg.target_scale_)
    assert loaded.n_outputs_ == reg.n_outputs_ and loaded.mixup_ == reg.mixup_
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(reg)).predict(X), reg.predict(X))


def test_a_file_without_targets_or_with_bad_ones_is_refused(fitted, tmp_path):
    path = tmp_path / "reg.sktspt"
    fitted.save(path)
    with zipfile.ZipFile(path) as zf:
        meta = json.loads(zf.read("metadata.json"))
        weights = zf.read("weights.safetensors")
    for change, message in [
        (lambda f: f.pop("targets"), "must hold targets"),
        (lambda f: f["targets"].update(scale=[0.0]), "scales must be positive"),
        (lambda f: f["targets"].update(mean=["a"]), "finite numbers"),
    ]:
        broken = json.loads(json.dumps(meta))
        change(broken["fitted"])
        bad = tmp_path / "bad.sktspt"
        with zipfile.ZipFile(bad, "w") as zf:
            zf.writestr("metadata.json", json.dumps(broken))
            zf.writestr("weights.safetensors", weights)
        with pytest.raises(ValueError, match=message):
            load(bad)


def test_a_classifier_file_relabelled_as_a_regressor_is_refused(data, tmp_path):
    X, Y = data
    clf = SPTClassifier(**TINY).fit(X, Y[:, 0] > 100)
    path = tmp_path / "clf.sktspt"
    clf.save(path)
    with zipfile.ZipFile(path) as zf:
        meta = json.loads(zf.read("metadata.json"))
        weights = zf.read("weights.safetensors")
    meta["estimator"] = "SPTRegressor"
    meta["params"].pop("class_weight")
    for name in ("criterion__label_smoothing", "early_exit__loss_weight", "early_exit",
                 "early_exit__min_layer"):
        meta["params"].pop(name)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("metadata.json", json.dumps(meta))
        zf.writestr("weights.safetensors", weights)
    with pytest.raises(ValueError, match="invalid metadata"):
        load(path)
