"""SPTClassifier / SPTPretrainer: behaviour, sklearn integration, input validation."""

import pickle

import joblib
import numpy as np
import pytest
from conftest import make_panel
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline

from sktspt import SPTClassifier, SPTPretrainer

TINY = dict(depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=32,
            architecture__dropout=0.0, batch_size=16)


def tiny_clf(**kw):
    return SPTClassifier(**{**TINY, "pretrain_epochs": 3, "max_epochs": 5, "random_state": 0, **kw})


def test_fit_predict_shapes_and_string_labels(panel):
    X, y = panel
    labels = np.array(["walk", "run"])[y]
    clf = tiny_clf().fit(X, labels)
    assert list(clf.classes_) == ["run", "walk"]
    pred = clf.predict(X)
    assert pred.dtype == labels.dtype and set(pred) <= {"run", "walk"}
    proba = clf.predict_proba(X)
    assert proba.shape == (40, 2) and np.allclose(proba.sum(1), 1)
    assert clf.transform(X).shape == (40, 16)
    assert clf.pretrain_history_ is not None and len(clf.pretrain_history_) == 3
    assert len(clf.history_) == 5


def test_scratch_control_skips_pretraining(panel):
    X, y = panel
    clf = tiny_clf(pretrain_epochs=0).fit(X, y)
    assert clf.pretrain_history_ is None


@pytest.mark.parametrize("n", [40, 200])  # under and over 160 series: epoch caps and steps
def test_the_default_fits_from_scratch_at_a_pretraining_fits_steps(n):
    """The default follows the archive's verdict: no self-pretraining, and fine-tuning
    takes both phases' steps, so it costs what ``pretrain_epochs="auto"`` costs; an
    explicit ``schedule__steps`` keeps its meaning (steps per phase)."""
    scratch, spt = SPTClassifier(), SPTClassifier(pretrain_epochs="auto")
    assert scratch.pretrain_epochs == 0
    per_epoch = -(-n // 16)  # each phase rounds its steps to whole epochs
    assert abs(scratch._planned_steps(n) - spt._planned_steps(n)) < 2 * per_epoch
    assert spt._auto_budget("pretrain") + spt._auto_budget("finetune") == 2000
    control = SPTClassifier(pretrain_epochs=0, schedule__steps=300)
    assert control._auto_budget("finetune") == 300
    X, y = make_panel(n=n, t=24)
    clf = SPTClassifier(**TINY, random_state=0, schedule__steps=4).fit(X, y)
    assert clf.pretrain_history_ is None and clf.pretrain_epochs_ == 0


def test_pretraining_changes_the_starting_point(panel):
    X, y = panel
    spt = tiny_clf(max_epochs=1).fit(X, y)
    scratch = tiny_clf(max_epochs=1, pretrain_epochs=0).fit(X, y)
    assert not np.allclose(spt.transform(X), scratch.transform(X))


def test_pretrainer_loss_falls_well_below_first_epoch():
    X, _ = make_panel(n=64, c=2, t=64)
    pre = SPTPretrainer(**TINY, pretrain_epochs=40, lr=3e-3, validation_fraction=0.0,
                        random_state=0)
    pre.fit(X)
    losses = pre.history_[:, "train_loss"]
    assert np.mean(losses[-5:]) < 0.5 * losses[0]
    emb = pre.transform(X)
    assert emb.shape == (64, 16) and emb.dtype == np.float32


def test_validation_split_comes_from_training_data(panel):
    X, y = panel
    clf = tiny_clf(validation_fraction=0.2).fit(X, y)
    assert "valid_loss" in clf.history_[-1]
    assert "valid_loss" in clf.pretrain_history_[-1]
    # best-epoch selection restores the best validation epoch
    best = int(np.argmin(clf.history_[:, "valid_loss"]))
    assert clf.history_[best, "valid_loss_best"]


def test_no_validation_split_when_disabled(panel):
    X, y = panel
    clf = tiny_clf(validation_fraction=0.0).fit(X, y)
    assert "valid_loss" not in clf.history_[-1]


def test_random_state_makes_fit_reproducible(panel):
    X, y = panel
    a = tiny_clf(random_state=3).fit(X, y).predict_proba(X)
    b = tiny_clf(random_state=3).fit(X, y).predict_proba(X)
    c = tiny_clf(random_state=4).fit(X, y).predict_proba(X)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_clone_pickle_joblib(panel, tmp_path):
    X, y = panel
    clf = tiny_clf().fit(X, y)
    assert clone(clf).get_params() == clf.get_params()
    assert not hasattr(clone(clf), "net_")
    p = clf.predict_proba(X)
    assert np.array_equal(pickle.loads(pickle.dumps(clf)).predict_proba(X), p)
    joblib.dump(clf, tmp_path / "m.joblib")
    assert np.array_equal(joblib.load(tmp_path / "m.joblib").predict_proba(X), p)


def test_sklearn_tags_say_3d_arrays_and_nan_are_accepted():
    for est in (SPTClassifier(), SPTPretrainer()):
        tags = est.__sklearn_tags__()
        assert tags.input_tags.three_d_array and tags.input_tags.allow_nan


def test_pipeline_and_cross_val_score(panel):
    X, y = panel
    scores = cross_val_score(tiny_clf(), X, y, cv=2)
    assert scores.shape == (2,) and np.all((0 <= scores) & (scores <= 1))
    pipe = make_pipeline(SPTPretrainer(**TINY, pretrain_epochs=2, random_state=0),
                         LogisticRegression(max_iter=200))
    assert pipe.fit(X, y).predict(X).shape == (40,)


def test_grid_search_over_depth_and_masking(panel):
    X, y = panel
    grid = GridSearchCV(
        tiny_clf(pretrain_epochs=1, max_epochs=1),
        {"depth": [1, 2], "masking": ["span", "block"]},
        cv=2,
    ).fit(X, y)
    assert len(grid.cv_results_["params"]) == 4
    assert grid.best_params_["depth"] in (1, 2)


def test_fitted_pretrainer_as_parameter_survives_clone(panel):
    X, y = panel
    pre = SPTPretrainer(**TINY, pretrain_epochs=2, random_state=0).fit(X)
    clf = tiny_clf(pretrainer=FrozenEstimator(pre), max_epochs=0)
    fitted = clone(clf).fit(X, y)
    # with zero fine-tuning epochs the encoder is exactly the pretrained one
    assert np.allclose(fitted.transform(X), pre.transform(X), atol=1e-6)
    # the pretrainer itself is not changed by fine-tuning
    before = pre.transform(X)
    clone(tiny_clf(pretrainer=FrozenEstimator(pre))).fit(X, y)
    assert np.array_equal(pre.transform(X), before)


def test_unlabeled_data_is_used_for_pretraining(panel):
    X, y = panel
    U, _ = make_panel(n=60, seed=1)
    clf = tiny_clf(validation_fraction=0.0).fit(X, y, X_unlabeled=U)
    # batches of 16: 40 labelled + 60 unlabelled series -> 7 batches per pretraining epoch
    assert len(clf.pretrain_history_[0, "batches"]) == 7


def test_univariate_2d_and_channel_masking_warns(panel):
    X, y = panel
    with pytest.warns(UserWarning, match="channel"):
        clf = tiny_clf(masking="channel").fit(X[:, 0, :], y)
    assert clf.n_features_in_ == 48 and clf.n_channels_ == 1


def test_beats_chance_on_gunpoint():
    from sktime.datasets import load_gunpoint

    Xtr, ytr = load_gunpoint(split="train", return_X_y=True, return_type="numpy3D")
    Xte, yte = load_gunpoint(split="test", return_X_y=True, return_type="numpy3D")
    clf = SPTClassifier(depth=1, d_model=32, architecture__n_heads=4,
                        architecture__dim_feedforward=64, pretrain_epochs=30,
                        max_epochs=60, random_state=0).fit(Xtr, ytr)
    assert clf.score(Xte, yte) > 0.7  # chance is 0.5


# --- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "X, match",
    [
        (np.zeros((3,)), "1D"),
        (np.zeros((2, 2, 2, 2)), "4D"),
        (np.zeros((0, 1, 10)), "0 sample|empty"),
        (np.zeros((4, 1, 0)), "empty|0 feature"),
        (np.array([[1.0, np.inf, 2.0]] * 4), "infinity"),
        (np.array([[np.nan] * 3, [1.0, 2.0, 3.0]] * 2), "no observed value"),
        (np.array([["a", "b"]] * 4, dtype=object), "string|float"),
    ],
)
def test_bad_X_raises_clear_error(X, match):
    with pytest.raises(ValueError, match=match):
        tiny_clf().fit(X, np.arange(len(X)) % 2)


def test_bad_y_raises_clear_error(panel):
    X, y = panel
    with pytest.raises(ValueError, match="at least 2 classes"):
        tiny_clf().fit(X, np.zeros(40))
    with pytest.raises(ValueError, match="inconsistent numbers"):
        tiny_clf().fit(X, y[:-1])
    with pytest.raises(ValueError, match="Unknown label type"):
        tiny_clf().fit(X, np.linspace(0, 1, 40))
    with pytest.raises(ValueError, match="requires y"):
        tiny_clf().fit(X, None)


def test_predict_shape_mismatch_raises(panel):
    X, y = panel
    clf = tiny_clf(max_epochs=1, pretrain_epochs=0).fit(X, y)
    with pytest.raises(ValueError, match="channels"):
        clf.predict(X[:, :1])
    with pytest.raises(ValueError, match="length 40"):
        clf.predict(X[:, :, :40])


def test_series_shorter_than_patch_raises(panel):
    X, y = panel
    with pytest.raises(ValueError, match="shorter than one patch"):
        tiny_clf(tokenizer__patch_size=64).fit(X, y)


@pytest.mark.parametrize(
    "param, value",
    [("masking", "bogus"), ("architecture__positional", "bogus"), ("masking__ratio", 1.5),
     ("depth", 0),
     ("d_model", 15), ("validation_fraction", 1.0)],
)
def test_bad_parameters_raise_at_fit(panel, param, value):
    X, y = panel
    clf = tiny_clf(**{param: value})  # __init__ accepts anything
    with pytest.raises(ValueError, match=param if param != "d_model" else "divisible"):
        clf.fit(X, y)


def test_defaults_hold_at_the_archive_extremes():
    """30 classes of 2 series, 6 channels, 3,000 steps: the defaults fit without a split.

    Only the step budget is cut (``auto_steps``); the tokenizer, the automatic patch size and
    the split-free selection are the defaults that have to cope.
    """
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(30), 2)
    X = rng.normal(size=(60, 6, 3000)).astype(np.float32) + 0.05 * y[:, None, None]
    clf = SPTClassifier(schedule__steps=4, device__threads=1, random_state=0).fit(X, y)
    assert clf.patch_size_ == 94  # about 32 tokens, whatever the length
    assert clf.tokenizer == "rocket" and clf.validation_fraction == 0
    proba = clf.predict_proba(X[:5])
    assert proba.shape == (5, 30) and np.allclose(proba.sum(axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(clf.classes_, np.arange(30))


def test_pretraining_settings_on_a_fit_that_does_not_pretrain_are_reported(panel):
    X, y = panel
    with pytest.warns(UserWarning, match=r"masking='random'.*is unused.*pretrain_epochs=0"):
        tiny_clf(pretrain_epochs=0, max_epochs=1, masking="random").fit(X, y)
    with pytest.warns(UserWarning, match=r"masking__ratio=0.5.*is unused"):
        SPTClassifier(**TINY, masking__ratio=0.5, schedule__steps=2, random_state=0).fit(X, y)
    import warnings

    with warnings.catch_warnings():  # pretraining reads them: nothing to report
        warnings.simplefilter("error")
        tiny_clf(pretrain_epochs=1, max_epochs=1, masking="random").fit(X, y)
