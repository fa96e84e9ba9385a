"""Predictions of a series do not depend on which other series are predicted with it.

Every forward pass at prediction has a shape fixed by the series itself, so on one
machine the results are bitwise equal, whatever else is in ``X``; before, a series
predicted alone differed from the same series predicted among others (up to 3e-4 relative
on near-zero embeddings), which failed sklearn's ``check_methods_subset_invariance``.
"""

import numpy as np
from numpy.testing import assert_array_equal

from sktspt import SPTClassifier, SPTPretrainer

TINY = dict(depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=16,
            architecture__dropout=0.0, random_state=0)


def test_transform_of_subset_equals_transform_of_whole():
    X = 3 * np.random.RandomState(0).uniform(size=(20, 3))  # sklearn's subset check data
    pre = SPTPretrainer(pretrain_epochs=2, **TINY).fit(X)
    whole = pre.transform(X)
    one_by_one = np.concatenate([pre.transform(x[None]) for x in X])
    assert_array_equal(one_by_one, whole)
    order = np.random.RandomState(1).permutation(len(X))
    assert_array_equal(pre.transform(X[order]), whole[order])


def test_predict_proba_of_subset_equals_whole_with_unequal_lengths():
    rng = np.random.RandomState(0)
    lengths = rng.randint(12, 30, size=24)
    X = [rng.normal(size=(2, n)) for n in lengths]
    y = np.arange(24) % 2
    clf = SPTClassifier(pretrain_epochs=1, max_epochs=2, architecture__positional="rotary",
                        **TINY).fit(X, y)
    # Shorter and longer series than any in training, predicted together and alone.
    X_new = X[:5] + [rng.normal(size=(2, 5)), rng.normal(size=(2, 70))]
    whole = clf.predict_proba(X_new)
    for i, x in enumerate(X_new):
        assert_array_equal(clf.predict_proba([x]), whole[i : i + 1])
    assert_array_equal(clf.predict_proba(X_new[::-1]), whole[::-1])
    assert_array_equal(clf.transform(X_new[2:4]), clf.transform(X_new)[2:4])
