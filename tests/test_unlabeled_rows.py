"""Issue 84: ``y == -1`` means "unlabelled" in every fold and subset, read after ``y`` is made
1-D, and the scores of cross-validation leave those rows out."""

import warnings

import numpy as np
import pytest
from conftest import make_panel
from sklearn.base import clone
from sklearn.metrics import accuracy_score, balanced_accuracy_score
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score

from sktspt import SPTClassifier

TINY = dict(depth=1, d_model=8, architecture__n_heads=2, architecture__dim_feedforward=8,
            architecture__dropout=0.0, batch_size=8, pretrain_epochs=1, max_epochs=1,
            random_state=0)
QUIET = ".*with y == -1 are taken as unlabelled"


def _data():
    X, _ = make_panel(n=24, c=1, t=16, n_classes=2)
    y = np.array([-1, 0, 1] * 8)
    return X, y


def _labelled_fold_scores(X, y, cv, metric=accuracy_score):
    """Each fold fitted by hand and scored on its labelled test rows only."""
    scores = []
    for train, test in cv.split(X, y):
        clf = clone(SPTClassifier(**TINY)).fit(X[train], y[train])
        keep = test[y[test] != -1]
        scores.append(metric(y[keep], clf.predict(X[keep])))
    return np.array(scores)


def test_cross_val_score_and_grid_search_score_labelled_rows_only():
    X, y = _data()
    cv = StratifiedKFold(3)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=QUIET)
        expected = _labelled_fold_scores(X, y, cv)
        scores = cross_val_score(SPTClassifier(**TINY), X, y, cv=cv, error_score="raise")
        search = GridSearchCV(SPTClassifier(**TINY), {"random_state": [0]}, cv=cv,
                              error_score="raise").fit(X, y)
    np.testing.assert_allclose(scores, expected)
    assert search.best_score_ == pytest.approx(expected.mean())


def test_a_named_scorer_leaves_unlabelled_rows_out_through_labeled_scorer():
    from sktspt.unlabeled import labeled_scorer

    X, y = _data()
    cv = StratifiedKFold(3)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=QUIET)
        expected = _labelled_fold_scores(X, y, cv, balanced_accuracy_score)
        scores = cross_val_score(SPTClassifier(**TINY), X, y, cv=cv, error_score="raise",
                                 scoring=labeled_scorer("balanced_accuracy"))
    np.testing.assert_allclose(scores, expected)


def test_score_leaves_unlabelled_rows_out():
    X, y = _data()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=QUIET)
        clf = SPTClassifier(**TINY).fit(X, y)
    keep = y != -1
    assert clf.score(X, y) == accuracy_score(y[keep], clf.predict(X[keep]))
    with pytest.raises(ValueError, match="no label to score"):
        clf.score(X[~keep], y[~keep])


def test_minus_one_is_unlabelled_whatever_classes_a_subset_holds():
    X, y = _data()
    subset = y != 1  # a fold without class 1: -1 and 0 are left
    with pytest.raises(ValueError, match=r"-1, which is never a class.*\[0\].*astype\(str\)"):
        SPTClassifier(**TINY).fit(X[subset], y[subset])
    # as strings, -1 is a class
    clf = SPTClassifier(**TINY).fit(X[subset], y[subset].astype(str))
    assert clf.classes_.tolist() == ["-1", "0"]


def test_a_column_y_reads_minus_one_as_a_1d_y_does():
    X, y = _data()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=QUIET)
        flat = SPTClassifier(**TINY).fit(X, y)
        with pytest.warns(Warning, match="column-vector y"):
            column = SPTClassifier(**TINY).fit(X, y.reshape(-1, 1))
    assert column.classes_.tolist() == flat.classes_.tolist() == [0, 1]
    assert np.array_equal(column.predict_proba(X), flat.predict_proba(X))


def test_a_wrong_length_sample_weight_is_reported_against_every_row():
    X, y = _data()
    with pytest.raises(ValueError, match=r"sample_weight.shape == \(20,\), expected \(24,\)"):
        SPTClassifier(**TINY).fit(X, y, sample_weight=np.ones(20))
