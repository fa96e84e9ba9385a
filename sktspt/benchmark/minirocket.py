"""MiniRocket, set up as the field runs it: the benchmark's non-neural peer.

sktime's ``MiniRocketClassifier`` (``RocketClassifier(rocket_transform="minirocket")``) and
aeon's ``MiniRocketClassifier``, whose default-split accuracies tsml-eval publishes, are
the same recipe: MiniRocket features (the univariate transform on one channel, the
multivariate one otherwise), ``StandardScaler(with_mean=False)``, then
``RidgeClassifierCV(alphas=np.logspace(-3, 3, 10))``. Without the scaler, the ridge's
leave-one-out picks the largest penalty on few labels and can predict a single class.

The classes here are composed by hand because an sktime transformer inside a
scikit-learn ``Pipeline`` fails under scikit-learn 1.9 (sktime's ``fit`` resets attributes
that scikit-learn has set). MiniRocket takes no missing values, so gaps are filled by
linear interpolation within each series and unequal lengths are zero-padded to
``pad_length`` (the dataset's longest series, a layout fact, as in the archive's
equal-length releases). Series shorter than MiniRocket's kernels (:data:`MIN_LENGTH`
steps) are zero-padded to that length, as aeon's MiniRocket does and sktime's error
asks (the published results on such problems, PenDigits' 8 steps, are of padded series).
"""

from __future__ import annotations

import numpy as np

__all__ = ["MiniRocketClassifier", "MiniRocketFeatures", "MiniRocketRidge", "ALPHAS",
           "MIN_LENGTH"]

#: The ridge penalties sktime's and aeon's MiniRocket classifiers search.
ALPHAS = np.logspace(-3, 3, 10)
#: MiniRocket's kernel length: the shortest series its transform takes.
MIN_LENGTH = 9


def fill_panel(X, pad_length: int | None = None) -> np.ndarray:
    """``X`` as a float32 ``(n, c, t)`` array without NaN: gaps inside a series linearly
    interpolated (its first and last observed values held outwards up to its end), the
    padding after a shorter series, and up to ``pad_length``, set to zero."""
    from ..data import check_panel

    arr, info = check_panel(X)
    length = max(arr.shape[2], pad_length or 0)
    out = np.zeros((arr.shape[0], arr.shape[1], length), dtype=np.float32)
    if not info.has_missing:
        out[:, :, : arr.shape[2]] = arr
        return out
    observed = ~np.isnan(arr)
    ends = arr.shape[2] - np.argmax(observed.any(axis=1)[:, ::-1], axis=1)
    steps = np.arange(arr.shape[2])
    for i, end in enumerate(ends):
        for c in range(arr.shape[1]):
            seen = observed[i, c, :end]
            if seen.all():
                out[i, c, :end] = arr[i, c, :end]
            elif seen.any():
                out[i, c, :end] = np.interp(steps[:end], steps[:end][seen], arr[i, c, :end][seen])
    return out


class MiniRocketFeatures:
    """MiniRocket's 9,996 features of each series, after :func:`fill_panel`.

    Parameters
    ----------
    random_state : int
        MiniRocket's seed.
    pad_length : int or None
        Zero-pad every series to this length (the dataset's longest) when lengths differ;
        series shorter than :data:`MIN_LENGTH` are zero-padded to it in any case.
    """

    def __init__(self, random_state: int = 0, pad_length: int | None = None):
        self.random_state = random_state
        self.pad_length = pad_length

    def fit_transform(self, X) -> np.ndarray:
        from sktime.transformations.panel.rocket import MiniRocket, MiniRocketMultivariate

        X = fill_panel(X, max(self.pad_length or 0, MIN_LENGTH))
        self.length_ = X.shape[2]
        kind = MiniRocket if X.shape[1] == 1 else MiniRocketMultivariate
        self.rocket_ = kind(random_state=self.random_state, n_jobs=1)
        return np.asarray(self.rocket_.fit_transform(X), dtype=np.float64)

    def transform(self, X) -> np.ndarray:
        X = fill_panel(X, self.length_)
        if X.shape[2] > self.length_:  # a longer test series: cut to the fitted length
            X = X[:, :, : self.length_]
        return np.asarray(self.rocket_.transform(X), dtype=np.float64)


class _MiniRocketLinear:
    """MiniRocket features, a scaler, then a cross-validated ridge (set by subclasses)."""

    def __init__(self, random_state: int = 0, pad_length: int | None = None):
        self.random_state = random_state
        self.pad_length = pad_length

    def _scaler(self):
        raise NotImplementedError

    def _ridge(self):
        raise NotImplementedError

    def fit(self, X, y):
        self.features_ = MiniRocketFeatures(self.random_state, self.pad_length)
        self.scaler_ = self._scaler()
        self.ridge_ = self._ridge()
        self.ridge_.fit(self.scaler_.fit_transform(self.features_.fit_transform(X)), y)
        # where the benchmark's n_params finds the coefficients
        self.steps = [("minirocket", self.features_), ("scaler", self.scaler_),
                      ("ridge", self.ridge_)]
        return self

    def predict(self, X):
        return self.ridge_.predict(self.scaler_.transform(self.features_.transform(X)))


class MiniRocketClassifier(_MiniRocketLinear):
    """sktime's and aeon's MiniRocket classifier: features, ``StandardScaler(with_mean=False)``,
    ``RidgeClassifierCV`` over :data:`ALPHAS`."""

    def _scaler(self):
        from sklearn.preprocessing import StandardScaler

        return StandardScaler(with_mean=False)

    def _ridge(self):
        from sklearn.linear_model import RidgeClassifierCV

        return RidgeClassifierCV(alphas=ALPHAS)


class MiniRocketRidge(_MiniRocketLinear):
    """sktime's ``RocketRegressor`` recipe with MiniRocket: features, ``StandardScaler()``,
    ``RidgeCV`` over :data:`ALPHAS`."""

    def _scaler(self):
        from sklearn.preprocessing import StandardScaler

        return StandardScaler()

    def _ridge(self):
        from sklearn.linear_model import RidgeCV

        return RidgeCV(alphas=ALPHAS)
