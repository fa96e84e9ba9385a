"""``y == -1`` marks a series without a label, as in scikit-learn's semi-supervised estimators.

One rule, whatever a subset of the data holds: in a numeric ``y`` (made 1-D first, so a
column ``y`` reads the same), -1 is never a class. ``fit`` moves those series to
``X_unlabeled``; ``score`` and :func:`labeled_scorer` leave them out, so that
``cross_val_score``, ``GridSearchCV`` and ``cross_val_predict`` score the labelled rows
only. Where -1 is a class, pass the labels as strings (``y.astype(str)``).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.utils.validation import _check_sample_weight, column_or_1d

from .data import check_panel

__all__ = ["UNLABELED", "labeled_rows", "labeled_scorer", "split_unlabeled"]

#: The label that marks a series without a label in a numeric ``y`` (scikit-learn's
#: ``SelfTrainingClassifier``, ``LabelSpreading``).
UNLABELED = -1


def _take(X, rows: np.ndarray):
    """The series ``rows`` of ``X``: arrays and lists keep their kind (a 2D array stays
    2D, a list of unequal lengths stays a list); other panels become float32 ``(n, c, t)``."""
    if isinstance(X, np.ndarray):
        return X[rows]
    if isinstance(X, list | tuple):
        return [X[i] for i in rows]
    arr, info = check_panel(X)
    return arr[rows, 0, :] if info.ndim == 2 else arr[rows]


def _n_series(X) -> int:
    if isinstance(X, np.ndarray | list | tuple):
        return len(X)
    return len(check_panel(X)[0])


def _marks(y) -> np.ndarray | None:
    """``y`` as a 1-D numeric array (a column ``y`` made 1-D, with scikit-learn's
    warning) if it has a -1, else None (no -1, or labels that are not numbers)."""
    if y is None or isinstance(y, str):
        return None
    values = np.asarray(y)
    if values.dtype.kind not in "iuf" or values.ndim not in (1, 2):
        return None
    if values.ndim == 2:
        if values.shape[1] != 1:
            return None  # check_labels names the shape
        values = column_or_1d(values, warn=True)
    return values if (values == UNLABELED).any() else None


def labeled_rows(X, y, sample_weight=None):
    """``X, y, sample_weight`` of the series whose label is not -1, and the mask of the
    -1 rows (None, and the arguments unchanged, where ``y`` has no -1).

    A 1-D ``sample_weight`` must have one weight per series of ``X``, the -1 rows
    included (a ValueError from scikit-learn's check says so).
    """
    values = _marks(y)
    if values is None or values.size != _n_series(X):
        return X, y, sample_weight, None  # check_labels reports a length mismatch
    unlabeled = values == UNLABELED
    labeled = np.flatnonzero(~unlabeled)
    if sample_weight is not None:
        sample_weight = _check_sample_weight(sample_weight, np.empty((values.size, 1)))[labeled]
    return _take(X, labeled), values[labeled], sample_weight, unlabeled


def split_unlabeled(X, y, X_unlabeled, sample_weight):
    """``X, y, X_unlabeled, sample_weight`` with the series whose numeric label is -1 moved
    from ``X`` to ``X_unlabeled``; unchanged where ``y`` is not numeric or has no -1.

    Raises ``ValueError`` where ``X_unlabeled`` is given as well, or fewer than two classes
    are left; warns, naming the classes, where rows are moved.
    """
    X_labeled, y_labeled, weights, unlabeled = labeled_rows(X, y, sample_weight)
    if unlabeled is None:
        return X, y, X_unlabeled, sample_weight
    classes = np.unique(y_labeled)
    if len(classes) < 2:
        raise ValueError(
            f"y marks {int(unlabeled.sum())} series with -1, which is never a class: it marks "
            "a series without a label (scikit-learn's semi-supervised convention), and the "
            f"other series hold {len(classes)} class(es) {classes.tolist()}; a classifier "
            "needs at least 2. If -1 is a class, pass the labels as strings (y.astype(str))."
        )
    if X_unlabeled is not None:
        raise ValueError(
            "y == -1 marks unlabelled series, and X_unlabeled was passed as well: pass the "
            "unlabelled series one way, either in X with y == -1 or in X_unlabeled."
        )
    warnings.warn(
        f"{int(unlabeled.sum())} series with y == -1 are taken as unlabelled (scikit-learn's "
        f"semi-supervised convention; the same as passing them in X_unlabeled): the classes "
        f"are {classes.tolist()}. If -1 is a class, pass the labels as strings "
        "(y.astype(str)). Silence this with warnings.filterwarnings('ignore', "
        "message='.*with y == -1 are taken as unlabelled').",
        UserWarning,
        stacklevel=3,
    )
    return X_labeled, y_labeled, _take(X, np.flatnonzero(unlabeled)), weights


class labeled_scorer:  # noqa: N801 - used like scikit-learn's make_scorer
    """A scorer that scores only the series whose label is not -1.

    ``cross_val_score(clf, X, y, scoring=labeled_scorer("balanced_accuracy"))`` (and
    ``GridSearchCV(..., scoring=...)``) with a named or callable scorer; ``scoring=None``
    is the estimator's ``score``, which already leaves the -1 rows out.
    """

    def __init__(self, scoring=None):
        self.scoring = scoring

    def __call__(self, estimator, X, y, sample_weight=None):
        from sklearn.metrics import check_scoring

        X, y, sample_weight, _ = labeled_rows(X, y, sample_weight)
        scorer = check_scoring(estimator, scoring=self.scoring)
        kwargs = {} if sample_weight is None else {"sample_weight": sample_weight}
        return scorer(estimator, X, y, **kwargs)
