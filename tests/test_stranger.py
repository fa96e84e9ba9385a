"""Issue 74, "ready for a stranger": one version everywhere, loud input mistakes, the
sktime adapters' save paths, and ``y == -1`` as scikit-learn's mark of an unlabelled row."""

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import make_panel
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold, cross_val_score

import sktspt
from sktspt import SPTClassifier, SPTRegressor

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(depth=1, d_model=8, architecture__n_heads=2, architecture__dim_feedforward=8,
            architecture__dropout=0.0, batch_size=8,
            pretrain_epochs=1, max_epochs=1, random_state=0)


# --- one version, a license and a changelog ----------------------------------------------
def test_one_version_everywhere():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    first = re.search(r"^## (\d+\.\d+\.\d+)", changelog, re.MULTILINE).group(1)
    assert first == sktspt.__version__
    assert 'dynamic = ["version"]' in (ROOT / "pyproject.toml").read_text()
    assert "BSD 3-Clause" in (ROOT / "LICENSE").read_text()
    # Renames the code announces "in X" name a version this package has reached.
    for path in ROOT.joinpath("sktspt").rglob("*.py"):
        for major, minor in re.findall(r"renamed \w+ in (?:sktspt )?(\d+)\.(\d+)\.0",
                                       path.read_text()):
            assert (int(major), int(minor)) <= tuple(map(int, sktspt.__version__.split(".")[:2]))


def test_readme_names_the_cpu_wheel_index_and_the_plain_install():
    readme = (ROOT / "README.md").read_text()
    assert "--index-url https://download.pytorch.org/whl/cpu" in readme
    assert "pip install sktspt" in readme
    assert 'pytest -q -m "not slow"' in readme


# --- loud where users err ------------------------------------------------------------------
def test_a_transposed_array_warns():
    X, y = make_panel(n=12, c=2, t=40)
    with pytest.warns(UserWarning, match=r"40 channels of 2 time point.*transpose\(0, 2, 1\)"):
        SPTClassifier(**TINY).fit(X.transpose(0, 2, 1), y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the right layout fits without a word
        SPTClassifier(**TINY).fit(X, y)


@pytest.mark.parametrize("y", [np.array(["1", "2"] * 6), np.array(["1.5", "2"] * 6, dtype=object)])
def test_string_regression_targets_are_refused(y):
    X, _ = make_panel(n=12, t=16)
    with pytest.raises(ValueError, match=r"holds strings.*SPTClassifier.*astype\(float\)"):
        SPTRegressor(**TINY).fit(X, y)


@pytest.mark.parametrize("name, written", [("c.sktspt", "c.sktspt"), ("c.zip", "c.zip"),
                                           ("c", "c.zip")])
def test_sktime_adapter_saves_where_asked(tmp_path, monkeypatch, name, written):
    from sktime.base import load

    from sktspt import SPTClassifierSktime

    monkeypatch.chdir(tmp_path)
    X, y = make_panel(n=12, t=16)
    clf = SPTClassifierSktime(**TINY).fit(X, y)
    clf.save(name).close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [written]
    loaded = load(Path(written))
    assert np.array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    with pytest.raises(FileNotFoundError, match="no folder"):
        clf.save(tmp_path / "missing" / "c.zip")


# --- y == -1 marks unlabelled rows ----------------------------------------------------------
def _semi_supervised(n=24, t=16):
    X, y = make_panel(n=n, t=t)
    y = y.copy()
    y[::3] = -1  # a third unlabelled
    return X, y


def test_minus_one_is_the_same_as_x_unlabeled():
    X, y = _semi_supervised()
    labelled = y != -1
    with pytest.warns(UserWarning, match=r"8 series with y == -1 .* classes are \[0, 1\]"):
        marked = SPTClassifier(**TINY).fit(X, y)
    passed = SPTClassifier(**TINY).fit(X[labelled], y[labelled], X_unlabeled=X[~labelled])
    assert marked.classes_.tolist() == [0, 1]
    assert np.array_equal(marked.predict_proba(X), passed.predict_proba(X))
    # a list of series of unequal length, as lists
    series = [x[:, : 12 + i % 4] for i, x in enumerate(X)]
    with pytest.warns(UserWarning, match="taken as unlabelled"):
        marked = SPTClassifier(**TINY).fit(series, y)
    passed = SPTClassifier(**TINY).fit([s for s, keep in zip(series, labelled) if keep],
                                       y[labelled],
                                       X_unlabeled=[s for s, k in zip(series, labelled) if not k])
    assert np.array_equal(marked.predict_proba(series), passed.predict_proba(series))


def test_minus_one_with_one_other_label_is_refused_not_a_class():
    X, y = make_panel(n=12, t=16)
    y = np.where(y == 0, -1, 1)  # UCR's -1/1 labels: -1 is unlabelled, one class is left
    with pytest.raises(ValueError, match=r"never a class.*astype\(str\)"):
        SPTClassifier(**TINY).fit(X, y)
    clf = SPTClassifier(**TINY).fit(X, y.astype(str))
    assert clf.classes_.tolist() == ["-1", "1"]


def test_minus_one_and_x_unlabeled_together_are_refused():
    X, y = _semi_supervised()
    with pytest.raises(ValueError, match="one way"):
        SPTClassifier(**TINY).fit(X, y, X_unlabeled=X[:3])


def test_minus_one_in_clone_and_cross_val_score():
    X, y = _semi_supervised(n=36)
    clf = clone(SPTClassifier(**TINY))
    # Every fold trains on all unlabelled rows and scores labelled ones only.
    labelled, unlabelled = np.flatnonzero(y != -1), np.flatnonzero(y == -1)
    cv = [(np.r_[labelled[train], unlabelled], labelled[test])
          for train, test in StratifiedKFold(2).split(labelled, y[labelled])]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*with y == -1 are taken as unlabelled")
        scores = cross_val_score(clf, X, y, cv=cv, error_score="raise")
    assert scores.shape == (2,) and np.all((0 <= scores) & (scores <= 1))
