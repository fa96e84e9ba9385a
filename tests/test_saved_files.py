"""Files saved by earlier sktspt versions load and predict as they did.

``tests/data/*-0.1.0.sktspt`` were written by sktspt 0.1.0 (commit 8244789) with
``tests/data/saved-0.1.0-outputs.npz`` holding the data and what those models returned.
``tests/data/*-0.2.0.sktspt`` and ``saved-0.2.0-outputs.npz`` were written by sktspt
0.2.0 at commit e9e8c0b, before parameters, fitted input state and net building were
restructured: a two-member ensemble classifier with the convolutional tokenizer, and a
``"masked+sigreg"`` pretrainer with learned positions, fitted on 24 series (2 channels,
30 steps, a NaN gap). Ensembles were removed in 0.5, so the classifier is refused with a
message naming the versions that load it.
"""

from pathlib import Path

import numpy as np
import pytest

import sktspt

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def saved():
    return np.load(DATA / "saved-0.1.0-outputs.npz")


def test_classifier_saved_by_0_1_0_predicts_as_it_did(saved):
    clf = sktspt.load(DATA / "classifier-0.1.0.sktspt")
    assert clf.tokenizer == "patch"  # the only tokenizer then
    np.testing.assert_allclose(clf.predict_proba(saved["X"]), saved["proba"], atol=1e-6)


def test_pretrainer_saved_by_0_1_0_embeds_as_it_did(saved):
    pre = sktspt.load(DATA / "pretrainer-0.1.0.sktspt")
    np.testing.assert_allclose(pre.transform(saved["X"]), saved["emb"], atol=1e-6)


@pytest.fixture(scope="module")
def saved_0_2_0():
    return np.load(DATA / "saved-0.2.0-outputs.npz")


def test_classifier_saved_by_0_2_0_with_an_ensemble_is_refused_naming_the_versions_that_load_it():
    """The file holds an ensemble (``n_estimators=2``), which 0.5 removed."""
    with pytest.raises(ValueError, match=r"fitted with n_estimators=2, which sktspt 0\.5 removed.*"
                                         r"load it with sktspt 0\.4 or earlier"):
        sktspt.load(DATA / "classifier-0.2.0.sktspt")


def test_pretrainer_saved_by_0_2_0_embeds_as_it_did(saved_0_2_0):
    pre = sktspt.load(DATA / "pretrainer-0.2.0.sktspt")
    assert pre.architecture__positional == "learned" and pre.max_tokens_ == 30
    np.testing.assert_allclose(pre.transform(saved_0_2_0["X"]), saved_0_2_0["emb"], atol=1e-6)
