"""Parameters are declared once (``sktspt._params``): estimators, adapters and docs agree."""

import inspect

import numpy as np
import pytest
from sklearn.base import clone

from sktspt import SPTClassifier, SPTPretrainer
from sktspt._params import PARAMS, params_of

pytest.importorskip("sktime")
from sktspt.sktime_adapters import SPTClassifierSktime, SPTTransformerSktime  # noqa: E402


def _signature(cls) -> dict:
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return {p.name: p.default for p in params}


@pytest.mark.parametrize(
    "adapter, core, left_out",
    [(SPTClassifierSktime, SPTClassifier, {"warm_start"}),
     (SPTTransformerSktime, SPTPretrainer, set())],
)
def test_sktime_adapters_take_the_parameters_of_their_estimator(adapter, core, left_out):
    theirs, ours = _signature(adapter), _signature(core)
    assert list(theirs) == [name for name in ours if name not in left_out]
    assert all(theirs[k] is ours[k] or theirs[k] == ours[k] for k in theirs)
    assert adapter().get_params() == {k: v for k, v in core().get_params().items()
                                      if k not in left_out}


def test_every_parameter_is_declared_and_documented_once():
    names = [p.name for p in PARAMS]
    assert len(names) == len(set(names))
    for cls in (SPTClassifier, SPTPretrainer, SPTClassifierSktime, SPTTransformerSktime):
        doc = inspect.getdoc(cls)
        assert "<parameters>" not in doc
        for name in _signature(cls):
            assert f"\n{name} : " in doc, (cls.__name__, name)
    assert {p.name for p in params_of("pretrainer")} < {p.name for p in params_of("classifier")}


def test_parameters_after_the_first_four_are_keyword_only():
    kinds = [p.kind for p in inspect.signature(SPTClassifier.__init__).parameters.values()][1:]
    assert set(kinds[:4]) == {inspect.Parameter.POSITIONAL_OR_KEYWORD}
    assert set(kinds[4:]) == {inspect.Parameter.KEYWORD_ONLY}
    assert SPTClassifier(2, 32).get_params()["d_model"] == 32
    with pytest.raises(TypeError):
        SPTClassifier(2, 32, 4, 64, 0.0)


def test_init_stores_arguments_verbatim_and_clones():
    mean_span, channels = np.float32(2.0), [1, 0]
    est = SPTPretrainer(mean_span=mean_span, mask_channels=channels, depth="anything")
    assert est.mean_span is mean_span and est.mask_channels is channels and est.depth == "anything"
    assert clone(SPTClassifier(depth=2, n_estimators=3)).get_params()["n_estimators"] == 3


@pytest.mark.parametrize("name, value, kind, message", [
    ("depth", True, ValueError, "depth must be a positive integer"),
    ("n_estimators", 0, ValueError, "n_estimators must be a positive integer"),
    ("class_weight", [1, 2], TypeError, "class_weight must be None, 'balanced' or a dict"),
    ("augment", 1, TypeError, 'augment must be True, False, "stretch", "shift", "roll" or "auto"'),
    ("augment", "warp", ValueError,
     'augment must be True, False, "stretch", "shift", "roll" or "auto"'),
    ("mask_channels", [0, 0], ValueError, "repeated channels"),
    ("early_exit", 2.0, ValueError, "early_exit must be None or a cosine threshold"),
    ("n_heads", 3, ValueError, "d_model=64 must be divisible by n_heads=3"),
])
def test_constraints_name_the_parameter(name, value, kind, message):
    with pytest.raises(kind, match=message):
        SPTClassifier(**{name: value})._check_params()
