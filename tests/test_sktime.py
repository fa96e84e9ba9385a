"""The sktime adapters: sktime's conformance suite, faithful delegation, benchmarking."""

import inspect
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.metrics import accuracy_score
from sklearn.model_selection import KFold

from sktspt import (
    SPTClassifier,
    SPTClassifierSktime,
    SPTPretrainer,
    SPTRegressor,
    SPTRegressorSktime,
    SPTTransformerSktime,
)

ADAPTERS = [(SPTClassifierSktime, SPTClassifier), (SPTTransformerSktime, SPTPretrainer),
            (SPTRegressorSktime, SPTRegressor)]
TINY = dict(depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=16,
            architecture__dropout=0.0, random_state=0)


def nested_unequal_with_gaps(n=24, seed=0):
    """An sktime nested_univ panel: 2 channels, lengths 20..40, a NaN gap in channel 0."""
    g = np.random.default_rng(seed)
    y = np.array(["a", "b"])[np.arange(n) % 2]
    rows = []
    for i in range(n):
        length = int(g.integers(20, 41))
        t = np.linspace(0, 1, length)
        freq = 2.0 if y[i] == "a" else 5.0
        c0 = np.sin(2 * np.pi * freq * t) + 0.1 * g.normal(size=length)
        c0[5:9] = np.nan
        c1 = np.cos(2 * np.pi * freq * t) + 0.1 * g.normal(size=length)
        rows.append({"c0": pd.Series(c0), "c1": pd.Series(c1)})
    return pd.DataFrame(rows), y


@pytest.mark.parametrize("adapter", [a for a, _ in ADAPTERS], ids=lambda a: a.__name__)
def test_sktime_check_estimator(adapter):
    """Every check of sktime's conformance suite passes, on both test configurations."""
    from sktime.utils.estimator_checks import check_estimator

    results = check_estimator(adapter, raise_exceptions=False, verbose=False)
    failed = {name: str(res)[:300] for name, res in results.items() if res != "PASSED"}
    assert len(results) > 100
    assert not failed, failed


@pytest.mark.parametrize(("adapter", "core"), ADAPTERS, ids=lambda a: a.__name__)
def test_adapter_takes_the_core_parameters(adapter, core):
    """Same names and defaults as the core estimator, less what cannot apply in sktime
    (warm_start: sktime's fit resets), then the core's routed settings written out, as
    Python, scikit-learn and sktime each read them (sktime allows no ``**kwargs``)."""
    ours = inspect.signature(adapter).parameters
    theirs = {k: p.default for k, p in inspect.signature(core).parameters.items()
              if k != "warm_start" and p.kind is not p.VAR_KEYWORD}
    defaults = {**theirs, **core._routed}
    assert list(ours) == list(defaults)
    assert {k: p.default for k, p in ours.items()} == defaults
    assert adapter.get_param_defaults() == defaults  # sktime (skbase)
    assert adapter.get_param_names() == sorted(defaults)
    assert adapter().get_params(deep=False) == defaults  # what _fit hands the core
    assert repr(adapter()) == f"{adapter.__name__}()"


def test_a_new_estimator_parameter_is_the_adapters_without_an_edit():
    """The adapter's names, defaults and docs follow the estimator's; a typo in what it
    leaves out is an error, not a silently kept parameter."""
    from sktime.transformations.base import BaseTransformer

    from sktspt.sktime_adapters import _takes_the_parameters_of

    class Core(SPTPretrainer):
        def __init__(self, depth=3, *, knob=0.5, width=0.1, **kwargs):
            self.depth, self.knob, self.width = depth, knob, width

    Core._parameter_docs = {**SPTPretrainer._parameter_docs, "knob": ("float", "A knob."),
                            "width": ("float", "A width.")}

    @_takes_the_parameters_of(Core, less=("width",))
    class Adapter(BaseTransformer):
        """An adapter.

        <parameters>
        """

    routed = dict(Core._routed)  # the core's, written out
    assert Adapter().get_params() == {"depth": 3, "knob": 0.5, **routed}
    assert Adapter(2, knob=1.0).get_params() == {"depth": 2, "knob": 1.0, **routed}
    assert "knob : float, default=0.5" in Adapter.__doc__
    with pytest.raises(RuntimeError, match="no parameters"):
        _takes_the_parameters_of(Core, less=("widht",))


def test_adapter_init_binds_as_the_core_does():
    """Positional and keyword arguments as in the core; unknown names get the hint."""
    clf = SPTClassifierSktime(depth=2, d_model=32, lr=3e-3, attention__levels=4)
    assert (clf.depth, clf.d_model, clf.lr, clf.attention__levels) == (2, 32, 3e-3, 4)
    assert clf.set_params(depth=1).depth == 1 and clone(clf).depth == 1
    assert clf.set_params(attention__levels=5).get_params()["attention__levels"] == 5
    assert clone(clf).attention__levels == 5
    with pytest.raises(TypeError, match="did you mean 'device__threads'"):
        SPTClassifierSktime(n_jobs=2)
    with pytest.raises(TypeError, match="warm_start"):
        SPTClassifierSktime(warm_start=True)
    with pytest.raises(TypeError):
        SPTClassifierSktime(1)  # keyword-only, as in the core


@pytest.mark.parametrize(("adapter", "core"), ADAPTERS, ids=lambda a: a.__name__)
def test_adapter_with_default_parameters_predicts_as_the_core_bitwise(adapter, core):
    """The defaults but the seed, one thread and the fewest epochs: the same numbers."""
    g = np.random.default_rng(0)
    X = g.normal(size=(12, 2, 16))
    labels = np.array(["a", "b"])[np.arange(12) % 2]
    X[labels == "b", 0] += 1.0
    params = dict(pretrain_epochs=1, random_state=0, device__threads=1)
    if core is SPTClassifier:
        params["max_epochs"] = 1
        ours = adapter(**params).fit(X, labels).predict_proba(X)
        theirs = core(**params).fit(X, labels).predict_proba(X)
    elif core is SPTRegressor:
        params["max_epochs"] = 1
        y = X[:, 0, :4].mean(axis=1)
        ours = adapter(**params).fit(X, y).predict(X)
        theirs = core(**params).fit(X, y).predict(X)
    else:
        ours = adapter(**params).fit(X).transform(X).to_numpy()
        theirs = core(**params).fit(X).transform(X)
    np.testing.assert_array_equal(ours, theirs)


def test_core_import_does_not_load_sktime_base_classes():
    code = (
        "import sys, sktspt\n"
        "assert 'sktime.classification.base' not in sys.modules\n"
        "assert 'sktspt.sktime_adapters' not in sys.modules\n"
        "assert sktspt.SPTClassifierSktime.__name__ == 'SPTClassifierSktime'\n"
        "assert 'sktime.classification.base' in sys.modules\n"
        "try:\n"
        "    sktspt.NoSuchThing\n"
        "except AttributeError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('no AttributeError')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_classifier_delegates_faithfully_on_unequal_length_with_gaps():
    """From sktime's nested format the adapter gives what the core gives on the same data."""
    X, y = nested_unequal_with_gaps()
    params = dict(pretrain_epochs=1, max_epochs=3, **TINY)
    adapter = SPTClassifierSktime(**params).fit(X, y)
    proba = adapter.predict_proba(X)
    assert proba.shape == (len(y), 2)
    assert np.isfinite(proba).all()
    assert list(adapter.classes_) == ["a", "b"]
    core = SPTClassifier(**params).fit(X, y)
    np.testing.assert_allclose(proba, core.predict_proba(X), rtol=1e-5, atol=1e-6)
    assert (adapter.predict(X) == core.predict(X)).all()


@pytest.mark.parametrize("outputs", [1, 2])
def test_regressor_delegates_faithfully_on_unequal_length_with_gaps(outputs):
    """From sktime's nested format the adapter gives what the core gives, in y's format."""
    X, labels = nested_unequal_with_gaps()
    y = np.where(labels == "a", 10.0, 30.0) + np.arange(len(labels))
    y = y if outputs == 1 else pd.DataFrame({"u": y, "v": -2.0 * y})
    params = dict(pretrain_epochs=1, max_epochs=3, **TINY)
    pred = SPTRegressorSktime(**params).fit(X, y).predict(X)
    core = SPTRegressor(**params).fit(X, np.asarray(y)).predict(X)
    if outputs == 1:
        assert isinstance(pred, np.ndarray) and pred.shape == (len(y),)
    else:
        assert isinstance(pred, pd.DataFrame) and list(pred.columns) == ["u", "v"]
    np.testing.assert_allclose(np.asarray(pred), core, rtol=1e-5)


def test_transformer_gives_one_finite_row_per_series():
    X, _ = nested_unequal_with_gaps()
    t = SPTTransformerSktime(pretrain_epochs=2, **TINY)
    Z = t.fit_transform(X)
    assert isinstance(Z, pd.DataFrame)
    assert Z.shape == (len(X), 16)
    assert np.isfinite(Z.to_numpy()).all()
    core = SPTPretrainer(pretrain_epochs=2, **TINY).fit(X)
    np.testing.assert_allclose(Z.to_numpy(), core.transform(X), rtol=1e-5, atol=1e-6)


def test_classification_benchmark_runs_spt_beside_minirocket():
    """sktime's ClassificationBenchmark scores both, with no failed experiment."""
    from sktime.benchmarking.classification import ClassificationBenchmark
    from sktime.classification.kernel_based import RocketClassifier
    from sktime.datasets import load_unit_test

    bm = ClassificationBenchmark()
    bm.add_estimator(
        SPTClassifierSktime(pretrain_epochs=2, max_epochs=5, lr=3e-3, **TINY), "SPT"
    )
    bm.add_estimator(
        RocketClassifier(rocket_transform="minirocket", num_kernels=840, random_state=0),
        "MiniRocket",
    )
    bm.add_task(load_unit_test, KFold(n_splits=2, shuffle=True, random_state=0), [accuracy_score])
    results = bm.run()
    assert bm.failed_experiments == []
    assert sorted(results["model_id"]) == ["MiniRocket", "SPT"]
    accuracy = results["accuracy_score_mean"].to_numpy(dtype=float)
    assert np.isfinite(accuracy).all()
    assert ((accuracy >= 0) & (accuracy <= 1)).all()
