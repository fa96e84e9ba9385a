"""TWT layer fusion (sktspt.compress)."""

import copy
import itertools

import numpy as np
import pytest
import torch
from conftest import make_panel
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from sktspt import SPTClassifier, SPTPretrainer, load
from sktspt.compress import _masked_mse, fuse_layers, layer_distances, plan_groups

TINY = dict(d_model=16, architecture__n_heads=2, architecture__dim_feedforward=32,
            device__threads=1, random_state=0)


@pytest.fixture(scope="module")
def data():
    return make_panel(n=40, t=32)


@pytest.fixture(scope="module")
def deep(data):
    X, y = data
    return SPTClassifier(depth=4, pretrain_epochs=1, max_epochs=3, **TINY).fit(X, y)


def brute_force(distances, groups, tolerance):
    """All contiguous partitions: the fewest groups within tolerance (least sum of
    diameters); if none has at most ``groups``, exactly ``groups`` with the least largest
    diameter, then the least sum."""
    depth = len(distances) - 1
    feasible, capped = [], []
    for g in range(1, depth + 1):
        for cuts in itertools.combinations(range(1, depth), g - 1):
            bounds = [0, *cuts, depth]
            plan = [(bounds[i] + 1, bounds[i + 1]) for i in range(g)]
            diam = [distances[a : b + 1, a : b + 1].max() for a, b in plan]
            if g <= groups and max(diam) <= tolerance:
                feasible.append(((g, sum(diam)), plan))
            if g == groups:
                capped.append(((max(diam), sum(diam)), plan))
    return min(feasible or capped)[1]


@pytest.mark.parametrize("seed", range(6))
def test_plan_is_the_exact_optimum(seed):
    g = np.random.default_rng(seed)
    points = np.cumsum(g.normal(size=(8, 3)) * g.uniform(0.01, 1, size=(8, 1)), axis=0)
    distances = np.abs(points[:, None, 0] - points[None, :, 0]) / 10
    for max_depth, tolerance in ((None, 0.05), (3, 0.05), (2, 0.0), (7, 0.2), (1, 0.01)):
        plan = plan_groups(distances, max_depth, tolerance)
        expected = brute_force(distances, max_depth or 8, tolerance)
        diam = [distances[a : b + 1, a : b + 1].max() for a, b in plan]
        exp_diam = [distances[a : b + 1, a : b + 1].max() for a, b in expected]
        assert len(plan) == len(expected)
        assert max(diam) == pytest.approx(max(exp_diam))
        assert sum(diam) == pytest.approx(sum(exp_diam))
        assert plan[0][0] == 1 and plan[-1][1] == 7
        assert all(b + 1 == a for (_, b), (a, _) in itertools.pairwise(plan))


def test_plan_on_a_constructed_case():
    # h1 = h2 = h3, h4 apart, h5 = h6: three groups, and two under max_depth=2.
    level = np.array([0.0, 1.0, 1.0, 1.0, 2.0, 3.0, 3.0])
    distances = np.abs(level[:, None] - level[None, :]) / 10
    assert plan_groups(distances, None, 0.01) == [(1, 3), (4, 4), (5, 6)]
    assert plan_groups(distances, 2, 0.01) in ([(1, 4), (5, 6)], [(1, 3), (4, 6)])
    assert plan_groups(distances, None, 0.0) == [(1, 3), (4, 4), (5, 6)]
    assert plan_groups(distances, 6, None) == [(i, i) for i in range(1, 7)]


def test_layer_distances_pooled_and_per_token():
    h0 = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    h1 = torch.tensor([[[0.0, 1.0], [1.0, 0.0]]])  # same pooled state, tokens swapped
    keep = torch.ones(1, 2, dtype=torch.bool)
    d = layer_distances([h0, h1, h0], keep)
    assert d[0, 1] == pytest.approx(0.5 * (0.0 + 1.0))
    assert d[0, 2] == pytest.approx(0.0, abs=1e-6) and d[1, 0] == d[0, 1]


def test_no_redundancy_changes_nothing(deep, data):
    X, _ = data
    same = fuse_layers(deep, X, tolerance=0.0)
    assert same.depth == 4 and same.fused_groups_ == [(1, 1), (2, 2), (3, 3), (4, 4)]
    np.testing.assert_array_equal(same.predict_proba(X), deep.predict_proba(X))
    np.testing.assert_array_equal(same.transform(X), deep.transform(X))


def test_fused_depth_is_the_plan_and_surrogates_learn(deep, data):
    X, _ = data
    before = deep.predict_proba(X)
    fused = fuse_layers(deep, X, max_depth=2, tolerance=None, steps=150)
    plan = plan_groups(fused.layer_distances_, 2, None)
    assert fused.fused_groups_ == plan and len(plan) == 2
    assert fused.depth == fused.encoder_kwargs_["depth"] == len(fused.encoder_.layers) == 2
    assert deep.depth == len(deep.encoder_.layers) == 4  # the original is untouched
    np.testing.assert_array_equal(deep.predict_proba(X), before)
    # Each surrogate maps its group's input to its output better than its initialisation.
    Xt = torch.from_numpy(deep._input(X))
    x, obs = torch.nan_to_num(Xt), ~torch.isnan(Xt)
    deep.encoder_.eval()
    with torch.no_grad():
        states, keep = deep.encoder_.layer_states(x, obs, obs)
        for new, (a, b) in zip(fused.encoder_.layers, plan, strict=True):
            if b > a:
                first = deep.encoder_.layers[a - 1]
                init = _masked_mse(first(states[a - 1], keep), states[b], keep)
                trained = _masked_mse(new.eval()(states[a - 1], keep), states[b], keep)
                assert trained < 0.8 * init
    assert fused.predict(X).shape == (len(X),)
    assert clone(fused).get_params()["depth"] == 2


def test_fused_model_survives_save_load_and_warm_start(deep, data, tmp_path):
    X, y = data
    fused = fuse_layers(deep, X, max_depth=2, tolerance=None, steps=20, finetune_steps=20)
    fused.save(tmp_path / "fused.zip")
    back = load(tmp_path / "fused.zip")
    assert back.depth == back.encoder_kwargs_["depth"] == len(back.encoder_.layers) == 2
    np.testing.assert_array_equal(back.predict_proba(X), fused.predict_proba(X))
    back.set_params(warm_start=True, max_epochs=1).fit(X, y)
    assert len(back.encoder_.layers) == 2


def test_pretrainer_and_bad_arguments(data):
    X, y = data
    pre = SPTPretrainer(depth=3, pretrain_epochs=1, **TINY).fit(X)
    fused = fuse_layers(pre, X, max_depth=1, tolerance=None, steps=10)
    assert fused.depth == 1 and fused.transform(X).shape == (len(X), 16)
    for kwargs, name in (({"max_depth": 0}, "max_depth"), ({"tolerance": -0.1}, "tolerance"),
                         ({"tolerance": None}, "max_depth or tolerance"),
                         ({"steps": -1}, "steps"), ({"lr": 0}, "lr")):
        with pytest.raises(ValueError, match=name):
            fuse_layers(pre, X, **kwargs)
    with pytest.raises(NotFittedError):
        fuse_layers(SPTPretrainer(), X)
    with pytest.raises(TypeError, match="SPTClassifier or SPTPretrainer"):
        fuse_layers(object(), X)


def test_fused_classifier_fits_then_fuses(data):
    from sktspt.compress import FusedClassifier

    X, y = data
    base = SPTClassifier(depth=3, pretrain_epochs=1, max_epochs=2, **TINY)
    model = FusedClassifier(base, max_depth=2, tolerance=None, steps=10, finetune_steps=10)
    model.fit(X, y)
    assert model.depth_ == model.estimator_.depth == 2 and base.depth == 3
    assert not hasattr(base, "net_")  # a clone was fitted
    np.testing.assert_array_equal(model.classes_, np.unique(y))
    assert model.predict(X).shape == (len(X),)
    assert model.predict_proba(X).shape == (len(X), 2)
    assert clone(model).get_params()["max_depth"] == 2


def test_fusion_through_the_sktime_adapters(data):
    pytest.importorskip("sktime")
    from sktime.datatypes import convert_to

    from sktspt import SPTClassifierSktime, SPTTransformerSktime

    X, y = data
    X_frames = convert_to(X, to_type="nested_univ", as_scitype="Panel")  # not an inner type
    clf = SPTClassifierSktime(depth=3, pretrain_epochs=1, max_epochs=2, **TINY).fit(X, y)
    fused = fuse_layers(clf, X_frames, max_depth=2, tolerance=None, steps=10)
    assert type(fused) is SPTClassifierSktime and fused.is_fitted
    assert fused.depth == fused.estimator_.depth == len(fused.estimator_.encoder_.layers) == 2
    assert fused.fused_groups_ == fused.estimator_.fused_groups_
    assert clf.depth == 3 and len(clf.estimator_.encoder_.layers) == 3  # not modified
    direct = fuse_layers(clf.estimator_, X, max_depth=2, tolerance=None, steps=10)
    np.testing.assert_allclose(fused.predict_proba(X_frames), direct.predict_proba(X),
                               rtol=1e-5, atol=1e-6)
    assert clone(fused).get_params()["depth"] == 2
    from sktspt.compress import truncate_layers

    cut = truncate_layers(clf, 1)
    assert type(cut) is SPTClassifierSktime and cut.depth == cut.estimator_.depth == 1
    np.testing.assert_array_equal(cut.predict_proba(X_frames),
                                  truncate_layers(clf.estimator_, 1).predict_proba(X))

    trans = SPTTransformerSktime(depth=3, pretrain_epochs=1, **TINY).fit(X)
    small = fuse_layers(trans, X, max_depth=1, tolerance=None, steps=5)
    assert small.depth == 1 and small.transform(X).shape == (len(X), 16)


def test_truncation_keeps_the_first_layers(deep, data, tmp_path):
    from sktspt.compress import truncate_layers

    X, _ = data
    cut = truncate_layers(deep, 2)
    assert cut.depth == len(cut.encoder_.layers) == 2 and cut.fused_groups_ == [(1, 1), (2, 2)]
    assert deep.depth == len(deep.encoder_.layers) == 4  # not modified
    by_hand = copy.deepcopy(deep)
    by_hand.net_.module_.encoder.layers = by_hand.net_.module_.encoder.layers[:2]
    np.testing.assert_array_equal(cut.predict_proba(X), by_hand.predict_proba(X))
    assert not np.allclose(cut.predict_proba(X), deep.predict_proba(X))
    np.testing.assert_array_equal(truncate_layers(deep, 9).predict_proba(X),
                                  deep.predict_proba(X))
    cut.save(tmp_path / "cut.zip")
    np.testing.assert_array_equal(load(tmp_path / "cut.zip").predict_proba(X),
                                  cut.predict_proba(X))
    with pytest.raises(ValueError, match="depth"):
        truncate_layers(deep, 0)
    with pytest.raises(TypeError, match="truncate_layers takes a fitted SPTClassifier"):
        truncate_layers(object(), 1)
