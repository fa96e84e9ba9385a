"""Fine-tuning options: a warm start with sample weights."""

import numpy as np

from sktspt import SPTClassifier


def test_warm_start_with_sample_weights_continues_training():
    """A warm start with sample weights trains on (it raised KeyError 'initial_lr' when the
    switch to per-series losses rebuilt the optimizer) and keeps the optimizer's state."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(24, 1, 24)).astype(np.float32)
    y = np.arange(24) % 2
    clf = SPTClassifier(depth=1, d_model=16, architecture__n_heads=2,
                        architecture__dim_feedforward=16, pretrain_epochs=1,
                        max_epochs=2, random_state=0, warm_start=True).fit(X, y)
    optimizer = clf.net_.optimizer_
    clf.fit(X, y, sample_weight=np.linspace(0.5, 1.5, 24))
    assert len(clf.history_) == 4
    assert clf.net_.optimizer_ is optimizer
    assert clf.net_.criterion_.reduction == "none"
