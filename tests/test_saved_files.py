"""Files saved by an earlier sktspt version load and predict as they did.

``tests/data/*-0.1.0.sktspt`` were written by sktspt 0.1.0 (commit 8244789) with
``tests/data/saved-0.1.0-outputs.npz`` holding the data and what those models returned.
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
