"""Every public entry point once, on tiny data and a tiny network: the fast subset's floor
(``python -m pytest -m "not slow"``). The thorough tests of each are in their own files."""

import numpy as np
import pandas as pd
import pytest
from conftest import make_panel
from sklearn.base import clone
from sklearn.model_selection import cross_val_score

import sktspt
from sktspt import (
    SPTClassifier,
    SPTClassifierSktime,
    SPTPretrainer,
    SPTRegressor,
    SPTRegressorSktime,
    SPTTransformerSktime,
)

NET = dict(depth=1, d_model=8, architecture__n_heads=2, architecture__dim_feedforward=8,
           architecture__dropout=0.0, batch_size=8,
           random_state=0)
TINY = dict(NET, pretrain_epochs=1, max_epochs=1)


@pytest.fixture(scope="module")
def data():
    return make_panel(n=12, c=2, t=16)


def test_classifier(data, tmp_path):
    X, y = data
    clf = SPTClassifier(**TINY).fit(X, y)
    assert clf.predict(X).shape == (12,) and clf.predict_proba(X).shape == (12, 2)
    assert 0 <= clf.score(X, y) <= 1
    clf.save(tmp_path / "c.sktspt")
    assert np.array_equal(sktspt.load(tmp_path / "c.sktspt").predict_proba(X),
                          clf.predict_proba(X))
    assert cross_val_score(clone(clf), X, y, cv=2).shape == (2,)


def test_regressor(data, tmp_path):
    X, _ = data
    target = X[:, 0].mean(axis=1)
    reg = SPTRegressor(**TINY).fit(X, target)
    assert reg.predict(X).shape == (12,)
    reg.save(tmp_path / "r.sktspt")
    assert np.array_equal(sktspt.load(tmp_path / "r.sktspt").predict(X), reg.predict(X))


def test_pretrainer(data, tmp_path):
    X, _ = data
    pre = SPTPretrainer(pretrain_epochs=1, **NET).fit(X)
    assert pre.transform(X).shape == (12, 8)
    pre.save(tmp_path / "p.sktspt")
    assert np.array_equal(sktspt.load(tmp_path / "p.sktspt").transform(X), pre.transform(X))
    clf = SPTClassifier(pretrainer=pre, max_epochs=1, **NET).fit(X, data[1])
    assert clf.predict(X).shape == (12,)


def test_sktime_adapters(data):
    X, y = data
    assert SPTClassifierSktime(**TINY).fit(X, y).predict(X).shape == (12,)
    assert SPTRegressorSktime(**TINY).fit(X, X[:, 0].mean(axis=1)).predict(X).shape == (12,)
    out = SPTTransformerSktime(pretrain_epochs=1, **NET).fit_transform(X)
    assert isinstance(out, pd.DataFrame) and out.shape == (12, 8)


def test_compress_and_inspection(data):
    from sktspt.compress import fuse_layers, truncate_layers
    from sktspt.inspection import attention_maps

    X, y = data
    clf = SPTClassifier(**dict(TINY, depth=2)).fit(X, y)
    assert truncate_layers(clf, 1).depth == 1
    assert fuse_layers(clf, X, max_depth=1, steps=1, finetune_steps=1).depth == 1
    assert len(attention_maps(clf, X[:2])) == 2


def test_benchmark_help(capsys):
    from sktspt.benchmark import main

    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0 and "--seed-list" in capsys.readouterr().out
