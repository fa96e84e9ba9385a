"""Messages that say what went wrong and what to do instead.

A fitted pretrainer that overrides an explicitly given architecture warns, and one not
wrapped in ``FrozenEstimator`` in cross-validation says to wrap it; an unavailable device,
a long-format frame, numpy scalars in a message, a callback that cannot be saved, and
sktime's zip given to ``sktspt.load`` each get a message that names them plainly.
"""

import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import NARROW_NET_NO_DROPOUT as TINY
from conftest import data_fixture, make_shifted_noise
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import cross_val_score
from skorch.callbacks import EarlyStopping

import sktspt
from sktspt import SPTClassifier, SPTPretrainer

data = data_fixture(make_shifted_noise)


# --- a fitted pretrainer --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pretrainer(data):
    return SPTPretrainer(pretrain_epochs=1, **TINY).fit(data[0])


def test_pretrainer_overriding_explicit_architecture_warns(data, pretrainer):
    X, y = data
    params = dict(pretrain_epochs=0, max_epochs=1, random_state=0)
    with pytest.warns(UserWarning, match=r"SPTClassifier\(depth=4, d_model=32\) is ignored.*"
                      r"depth=1, d_model=8"):
        clf = SPTClassifier(d_model=32, depth=4, pretrainer=pretrainer, **params).fit(X, y)
    assert clf.encoder_kwargs_["d_model"] == 8
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # defaults, or the pretrainer's own values: no warning
        SPTClassifier(pretrainer=FrozenEstimator(pretrainer), **params).fit(X, y)
        SPTClassifier(d_model=8, depth=1, pretrainer=pretrainer, **params).fit(X, y)


def test_unwrapped_pretrainer_in_cross_validation_says_to_wrap_it(data, pretrainer):
    X, y = data
    clf = SPTClassifier(pretrainer=pretrainer, max_epochs=1, **TINY)
    with pytest.raises(NotFittedError, match=r"wrap it in sklearn\.frozen\.FrozenEstimator"):
        cross_val_score(clf, X, y, cv=2, error_score="raise")


# --- devices, input, messages --------------------------------------------------------------------
@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
@pytest.mark.parametrize("device", ["cuda", "cuda:0", "gpu"])
def test_unavailable_or_unknown_device_is_a_clear_value_error(data, device):
    X, y = data
    with pytest.raises(ValueError, match=rf"device='{device}' is not"):
        SPTClassifier(device=device, **TINY).fit(X, y)


def test_long_format_frame_is_refused_as_ambiguous(data):
    _, y = data
    long = pd.DataFrame({"id": np.repeat(np.arange(24), 10), "t": np.tile(np.arange(10), 24),
                         "value": np.random.RandomState(0).normal(size=240)})
    with pytest.raises(ValueError, match=r"long format.*set_index"):
        SPTClassifier(**TINY).fit(long, np.repeat(y, 10))
    unnamed = long.set_axis([0, 1, 2], axis=1)
    with pytest.raises(ValueError, match=r"look like the instance and time index"):
        SPTPretrainer(**TINY).fit(unnamed)
    # Indexed by instance and time, the same frame is a panel of 24 series of length 10.
    pre = SPTPretrainer(pretrain_epochs=1, **TINY).fit(long.set_index(["id", "t"]))
    assert (pre.n_channels_, pre.n_timepoints_) == (1, 10)
    # A wide table (one series per row) is still read as before.
    wide = pd.DataFrame(np.random.RandomState(1).normal(size=(24, 10)))
    assert SPTPretrainer(pretrain_epochs=1, **TINY).fit(wide).n_timepoints_ == 10


@pytest.mark.parametrize(
    ("params", "shown"),
    [(dict(masking__ratio=np.float64(1.0)), "got 1.0."), (dict(lr=np.float32(-1.0)), "got -1.0."),
     (dict(depth=np.int64(0)), "got 0."), (dict(tokenizer__patch_size=np.int64(0)), "got 0.")],
)
def test_messages_show_numpy_scalars_as_plain_numbers(data, params, shown):
    X, y = data
    with pytest.raises((ValueError, TypeError)) as info:
        SPTClassifier(**{**TINY, **params}).fit(X, y)
    assert shown in str(info.value) and "np." not in str(info.value)


def test_save_message_uses_the_right_article(data, tmp_path):
    X, y = data
    clf = SPTClassifier(pretrain_epochs=0, max_epochs=1, callbacks=[EarlyStopping()],
                        validation_fraction=0.2, **TINY)
    with pytest.raises(ValueError, match="an EarlyStopping is not a JSON"):
        clf.fit(X, y).save(tmp_path / "m.sktspt")


def test_loading_an_sktime_zip_points_to_the_right_loader(tmp_path):
    from sktime.datasets import load_unit_test

    from sktspt import SPTClassifierSktime

    X, y = load_unit_test(split="train", return_X_y=True)
    clf = SPTClassifierSktime(pretrain_epochs=0, max_epochs=1, **TINY).fit(X, y)
    clf.save(tmp_path / "model")
    assert zipfile.is_zipfile(tmp_path / "model.zip")
    with pytest.raises(ValueError, match=r"sktime's pickle zip.*sktime\.base\.load.*"
                       r"estimator_\.save"):
        sktspt.load(tmp_path / "model.zip")
    clf.estimator_.save(tmp_path / "core.sktspt")  # the safe route it names works
    loaded = sktspt.load(tmp_path / "core.sktspt")
    np.testing.assert_array_equal(loaded.predict(X), clf.predict(X))
