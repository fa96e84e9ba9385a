"""Issue 84: what ``load`` refuses, ``fit`` refuses first with the same limit named, so every
fit that saves also loads; ``tokenizer__length`` is capped before anything is resampled."""

import tracemalloc

import numpy as np
import pytest
from conftest import make_panel

import sktspt
from sktspt import SPTClassifier

TINY = dict(depth=1, d_model=8, architecture__n_heads=2, architecture__dim_feedforward=8,
            architecture__dropout=0.0, batch_size=8, pretrain_epochs=0, max_epochs=1,
            random_state=0)


@pytest.mark.parametrize("settings, t", [(dict(tokenizer__length=200_000), 40),
                                         ({}, 140_000)])
def test_a_fit_of_very_long_series_saves_and_loads(tmp_path, settings, t):
    X, y = make_panel(n=4, c=1, t=t)
    # patch tokens and no roll screen keep 140,000 steps quick; the patch size is "auto"
    clf = SPTClassifier(**TINY, **settings, tokenizer="patch", augment=False).fit(X, y)
    assert clf.patch_size_ <= 4096
    clf.save(tmp_path / "m.sktspt")
    loaded = sktspt.load(tmp_path / "m.sktspt")
    assert np.array_equal(loaded.predict_proba(X), clf.predict_proba(X))


@pytest.mark.parametrize("settings, t, message", [
    (dict(tokenizer__patch_size=5000), 6000, r"patch_size_=5000 is more than the 4096 steps"),
    (dict(d_model=2**13 + 2), 40, r"d_model=8194 is more than the 8192 a model may have"),
    ({}, 2**20 + 8, r"1 x 1048584 is more than the 1048576 values"),
])
def test_a_fit_that_load_would_refuse_is_refused_naming_the_limit(settings, t, message):
    X, y = make_panel(n=2, c=1, t=t)
    with pytest.raises(ValueError, match=message):
        SPTClassifier(**{**TINY, **settings}).fit(X, y)


def test_tokenizer_length_is_capped_before_series_are_resampled():
    X, y = make_panel(n=6, c=1, t=40)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"n_channels x tokenizer__length = 1 x 10000000 "
                                             r"is more than the 1048576 values"):
            SPTClassifier(**TINY, tokenizer__length=10**7).fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20


def test_series_of_one_step_are_refused_where_they_would_be_resampled():
    X, y = make_panel(n=8, c=1, t=1)
    with pytest.raises(ValueError, match="one step: tokenizer__length=256"):
        SPTClassifier(pretrainer="archive", max_epochs=1, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="one step: tokenizer__length=16"):
        SPTClassifier(**TINY, tokenizer__length=16).fit(X, y)
