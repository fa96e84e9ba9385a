"""Few labels: the labelled subset of a training split, and the semi-supervised peer.

``--label-fraction F`` keeps the labels of a seeded, stratified subset of each training
split (:func:`labelled_subset`) and hides the others. What each model sees of the rest
(see ``docs/benchmark.md``, "Few labels"):

- a model whose ``fit`` takes ``X_unlabeled`` gets the unlabelled series there (SPT
  pretrains on the whole training split; the from-scratch control, which does not
  pretrain, ignores them);
- :class:`SelfTrainingMiniRocket` (``minirocket-selftrain``) fits MiniRocket on every
  training series and self-trains a logistic regression on the unlabelled ones;
- :class:`PretrainedProbe` (``spt-probe``) self-pretrains an ``SPTPretrainer`` on every
  training series and fits a ridge classifier on the labelled series' embeddings: are the
  embeddings good on their own, beside MiniRocket's features under the same ridge?
- any other model (MiniRocket with ridge) fits on the labelled series only.

The test split is never part of either subset.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["PretrainedProbe", "SelfTrainingMiniRocket", "check_label_fraction", "labelled_subset",
           "take"]


def check_label_fraction(fraction) -> float:
    """``fraction`` as a float in (0, 1]; TypeError for a non-number, ValueError outside."""
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real):
        raise TypeError(f"a label fraction must be a number in (0, 1], got {fraction!r}.")
    value = float(fraction)
    if not 0.0 < value <= 1.0:  # also rejects NaN
        raise ValueError(f"a label fraction must be in (0, 1], got {fraction!r}.")
    return value


def labelled_subset(y, fraction, seed: int) -> np.ndarray:
    """Indices (sorted) of the training series that keep their labels at ``fraction``.

    Stratified: each class keeps ``round(fraction * its count)`` of its series, **at
    least one**, so every class is represented (at tiny fractions the labelled share is
    therefore above ``fraction``: 5 % of a class of 10 series is one series). Which
    series is drawn from one random permutation per class seeded by ``seed`` (the run's
    seed), so every model of a run sees the same subset for a seed and fraction, and the
    subsets of one seed are nested (the 5 % subset is part of the 10 % one). At fraction
    1.0 every series is labelled.

    Parameters
    ----------
    y : array-like of shape (n,)
        The training labels.
    fraction : float in (0, 1]
        The share of each class that keeps its labels.
    seed : int
        The run's seed.

    Raises
    ------
    TypeError, ValueError
        For a fraction that is not a number in (0, 1].

    Examples
    --------
    >>> from sktspt.benchmark.labels import labelled_subset
    >>> labelled_subset(["a"] * 8 + ["b"] * 2, 0.25, seed=0).size  # 2 of a, 1 of b
    3
    """
    fraction = check_label_fraction(fraction)
    y = np.asarray(y)
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"y must be a non-empty 1-d array of labels, got shape {y.shape}.")
    classes = np.unique(y)
    rng = np.random.default_rng(seed)
    keep = []
    for c in classes:  # sorted classes: the draw does not depend on the label order
        members = np.flatnonzero(y == c)
        k = max(1, int(round(fraction * members.size)))
        keep.append(members[rng.permutation(members.size)[:k]])
    return np.sort(np.concatenate(keep))


def take(X, idx: np.ndarray):
    """Rows ``idx`` of a panel: a numpy array or an sktime nested frame (unequal lengths)."""
    return X.iloc[idx] if hasattr(X, "iloc") else np.asarray(X)[idx]


def _stack(X, U):
    """Two panels of the same kind, one after the other."""
    if hasattr(X, "iloc"):
        import pandas as pd

        return pd.concat([X, U], ignore_index=True)
    return np.concatenate([np.asarray(X), np.asarray(U)])


class SelfTrainingMiniRocket:
    """The semi-supervised peer: MiniRocket features, self-training on unlabelled series.

    ``fit(X, y, X_unlabeled)`` fits MiniRocket (gaps interpolated, unequal lengths
    zero-padded to ``pad_length``: :class:`~sktspt.benchmark.minirocket.MiniRocketFeatures`)
    on the labelled and unlabelled series together, standardises the
    features and trains scikit-learn's :class:`~sklearn.semi_supervised.SelfTrainingClassifier`
    around a :class:`~sklearn.linear_model.LogisticRegression` on them: the unlabelled
    series whose predicted class probability passes ``threshold`` get that label and the
    model is refitted, up to ``max_iter`` rounds. A probabilistic classifier is what
    self-training needs (a ridge classifier has no probabilities). Without unlabelled
    series it is plain logistic regression on MiniRocket features.

    Parameters
    ----------
    seed : int
        MiniRocket's ``random_state``.
    pad_length : int or None
        Pad every series to this length (the dataset's longest) when lengths differ.
    threshold : float, default=0.75
        Probability a pseudo-label needs (scikit-learn's default).
    max_iter : int, default=10
        Self-training rounds (scikit-learn's default).
    """

    def __init__(self, seed: int = 0, pad_length: int | None = None, threshold: float = 0.75,
                 max_iter: int = 10):
        self.seed, self.pad_length = seed, pad_length
        self.threshold, self.max_iter = threshold, max_iter

    def fit(self, X, y, X_unlabeled=None):
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import LabelEncoder, StandardScaler
        from sklearn.semi_supervised import SelfTrainingClassifier

        self.encoder_ = LabelEncoder().fit(np.asarray(y))
        codes = self.encoder_.transform(np.asarray(y))
        n_unlabeled = 0 if X_unlabeled is None else len(X_unlabeled)
        series = X if not n_unlabeled else _stack(X, X_unlabeled)
        from .minirocket import MiniRocketFeatures

        self.features_ = MiniRocketFeatures(self.seed, self.pad_length)
        F = self.features_.fit_transform(series)
        targets = np.concatenate([codes, np.full(n_unlabeled, -1)])  # -1: unlabelled
        base = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
        self.model_ = SelfTrainingClassifier(base, threshold=self.threshold,
                                             max_iter=self.max_iter).fit(F, targets)
        self.classifier_ = self.model_.estimator_[-1]  # for the benchmark's n_params
        self.n_pseudo_labelled_ = int(np.sum(self.model_.labeled_iter_[len(codes):] > 0))
        return self

    def predict(self, X) -> np.ndarray:
        F = self.features_.transform(X)
        return self.encoder_.inverse_transform(self.model_.predict(F))


class PretrainedProbe:
    """A linear probe: an ``SPTPretrainer``'s embeddings, standardised, then a ridge classifier.

    ``fit(X, y, X_unlabeled)`` fits a clone of ``pretrainer`` on the labelled and unlabelled
    series together (labels unused), then scikit-learn's ``RidgeClassifierCV`` (alphas
    ``logspace(-3, 3, 10)``, the ridge of the ``minirocket`` model) on the standardised
    embeddings of the labelled series. The encoder is never fine-tuned, so a few labels
    fit only the linear map: the embeddings themselves are what is scored.

    Parameters
    ----------
    pretrainer : SPTPretrainer
        Unfitted, cloned and fitted at fit; or fitted in ``FrozenEstimator`` (a pretrained
        encoder), used as it is.
    """

    def __init__(self, pretrainer):
        self.pretrainer = pretrainer

    def fit(self, X, y, X_unlabeled=None):
        from sklearn.base import clone
        from sklearn.linear_model import RidgeClassifierCV
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        series = X if X_unlabeled is None or not len(X_unlabeled) else _stack(X, X_unlabeled)
        self.pretrainer_ = clone(self.pretrainer).fit(series, None)  # frozen: kept as is
        self.model_ = make_pipeline(StandardScaler(),
                                    RidgeClassifierCV(alphas=np.logspace(-3, 3, 10)))
        self.model_.fit(self.pretrainer_.transform(X), np.asarray(y))
        self.classifier_ = self.model_[-1]  # for the benchmark's n_params
        return self

    def predict(self, X) -> np.ndarray:
        return self.model_.predict(self.pretrainer_.transform(X))
