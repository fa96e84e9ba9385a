"""Parameters: written-out ``__init__``s, one constraint each, one vocabulary, helpful names.

The estimators write out their ``__init__``; their sktime adapters take theirs from the
estimator's signature, and a test keeps the two equal. Every parameter has a constraint
(``_parameter_constraints``, merged from ``SPTBase``), checked at the start of ``fit``.
"""

import inspect
import pickle

import numpy as np
import pytest
from conftest import make_panel
from sklearn.base import clone

from sktspt import SPTClassifier, SPTPretrainer, SPTRegressor
from sktspt._base import SPTBase
from sktspt._param_hints import suggest_parameter
from sktspt._params import BASE_CONSTRAINTS

pytest.importorskip("sktime")
from sktspt.sktime_adapters import (  # noqa: E402
    SPTClassifierSktime,
    SPTRegressorSktime,
    SPTTransformerSktime,
)

CORE = (SPTClassifier, SPTPretrainer, SPTRegressor)
ADAPTERS = (SPTClassifierSktime, SPTTransformerSktime, SPTRegressorSktime)
ALL = (*CORE, *ADAPTERS)
TINY = dict(depth=1, d_model=8, architecture__n_heads=2, architecture__dim_feedforward=8,
            architecture__dropout=0.0, batch_size=8,
            device__threads=1, random_state=0)


def _signature(cls) -> dict:
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return {p.name: p.default for p in params if p.kind is not p.VAR_KEYWORD}


# --- explicit __init__s and the adapters' signatures ---------------------------------------
@pytest.mark.parametrize("cls", CORE)
def test_init_is_plain_source(cls):
    source = inspect.getsource(cls.__init__)
    assert source.lstrip().startswith("def __init__(")
    assert "exec" not in source


@pytest.mark.parametrize("cls", ALL)
def test_the_class_signature_is_its_init(cls):
    # The class's own signature is its __init__'s (the unknown-keyword hook is invisible).
    assert [n for n in inspect.signature(cls).parameters if n != "kwargs"] == list(
        _signature(cls))


@pytest.mark.parametrize(
    "adapter, core, left_out",
    [(SPTClassifierSktime, SPTClassifier, {"warm_start"}),
     (SPTRegressorSktime, SPTRegressor, {"warm_start"}),
     (SPTTransformerSktime, SPTPretrainer, set())],
)
def test_sktime_adapters_take_the_parameters_of_their_estimator(adapter, core, left_out):
    """The core's explicit parameters, then its routed settings written out (sktime allows
    no ``**kwargs``), with the same defaults."""
    theirs, ours = _signature(adapter), _signature(core)
    explicit = [name for name in ours if name not in left_out]
    assert list(theirs) == explicit + list(core._routed)
    assert all(theirs[k] is ours[k] or theirs[k] == ours[k] for k in explicit)
    assert all(theirs[k] == core._routed[k] for k in core._routed)
    kinds = {p.name: p.kind for p in inspect.signature(adapter.__init__).parameters.values()}
    assert all(kinds[k] is inspect.Parameter.KEYWORD_ONLY for k in core._routed)
    assert adapter().get_params() == {
        **{k: v for k, v in core().get_params().items() if k not in left_out},
        **{k: core._routed[k] for k in core._routed}}


def test_parameters_are_keyword_only():
    for cls in CORE:
        kinds = [p.kind for p in inspect.signature(cls.__init__).parameters.values()][1:]
        assert set(kinds[:-1]) == {inspect.Parameter.KEYWORD_ONLY}
        assert kinds[-1] is inspect.Parameter.VAR_KEYWORD  # the routed settings
    for cls in ADAPTERS:  # sktime: no **kwargs; the routed settings written out
        kinds = [p.kind for p in inspect.signature(cls.__init__).parameters.values()][1:]
        assert set(kinds) == {inspect.Parameter.KEYWORD_ONLY}
    with pytest.raises(TypeError):
        SPTClassifier(2, 32)


def test_init_stores_arguments_verbatim_and_clones():
    mean_span, channels = np.float32(2.0), [1, 0]
    est = SPTPretrainer(masking__mean_span=mean_span, masking__channels=channels, depth="anything")
    assert est.masking__mean_span is mean_span and est.masking__channels is channels
    assert est.depth == "anything"
    assert clone(SPTClassifier(depth=2, mixup=0.3)).get_params()["mixup"] == 0.3
    back = pickle.loads(pickle.dumps(SPTClassifier(depth=2)))
    assert back.get_params() == SPTClassifier(depth=2).get_params()


# --- constraints --------------------------------------------------------------------------
def test_constraints_are_declared_once_and_merged():
    assert SPTBase._parameter_constraints is BASE_CONSTRAINTS
    for cls in CORE:
        merged = cls._parameter_constraints
        assert all(merged[name] is check for name, check in BASE_CONSTRAINTS.items())
        assert set(merged) == set(_signature(cls)) | set(cls._routed), cls.__name__
    assert "max_epochs" not in BASE_CONSTRAINTS  # it means something else in each


@pytest.mark.parametrize("name, value, kind, message", [
    ("depth", True, ValueError, "depth must be a positive integer"),
    ("class_weight", [1, 2], TypeError, "class_weight must be None, 'balanced' or a dict"),
    ("augment", 1, TypeError, 'augment must be False, "shift", "roll" or "auto"'),
    ("augment", "warp", ValueError, 'augment must be False, "shift", "roll" or "auto"'),
    ("masking__channels", [0, 0], ValueError, "repeated channels"),
    ("early_exit", 2.0, ValueError, "early_exit must be None or a cosine threshold"),
    ("architecture__n_heads", 3, ValueError,
     "d_model=64 must be divisible by architecture__n_heads=3"),
    ("warm_start", 1, TypeError, "warm_start must be True or False"),
    ("warm_start", "yes", TypeError, "warm_start must be True or False"),
    ("verbose", -1, ValueError, "verbose must be a non-negative integer"),
    ("verbose", 1.5, TypeError, "verbose must be a non-negative integer"),
    ("random_state", -1, ValueError, "random_state must be None, an integer"),
    ("random_state", 1.5, TypeError, "random_state must be None, an integer"),
    ("random_state", np.random.default_rng(0), TypeError, "numpy RandomState"),
    ("callbacks", "progress", TypeError, "callbacks must be None or a list of skorch"),
    ("callbacks", [1], TypeError, "callbacks must be None or a list of skorch"),
    ("pretrainer", 3, TypeError, "pretrainer must be None, the name of a shipped encoder"),
    ("attention", "sparse", ValueError, "attention must be one of"),
    ("attention__pool", 1, ValueError, "attention__pool must be an integer >= 2, got 1."),
    ("attention__recovery", True, ValueError, "attention__recovery must be a number in"),
])
def test_constraints_name_the_parameter(name, value, kind, message):
    with pytest.raises(kind, match=message):
        SPTClassifier(**{name: value})._check_params()


@pytest.mark.parametrize("value", [True, False, 0, 2, np.int64(1)])
def test_valid_values_of_the_newly_checked_parameters_pass(value):
    SPTClassifier(verbose=value)._check_params()
    SPTClassifier(random_state=int(value))._check_params()
    SPTClassifier(random_state=np.random.RandomState(0), warm_start=np.bool_(True))._check_params()


class _Wrong:
    """A value of the wrong type for every parameter."""

    def __repr__(self):
        return "<wrong>"


def _fit(est):
    X, y = make_panel(n=8, t=16)
    return est.fit(X) if isinstance(est, SPTPretrainer | SPTTransformerSktime) else est.fit(X, y)


@pytest.mark.parametrize("cls, name", [(cls, name) for cls in ALL
                                       for name in [*_signature(cls), *cls._routed]])
def test_every_parameter_is_validated_at_fit(cls, name):
    est = cls(**{**TINY, name: _Wrong()})
    with pytest.raises((ValueError, TypeError), match=name):
        _fit(est)


# --- an unknown keyword names the closest parameter -----------------------------------------
@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("given, meant", [
    ("n_jobs", "device__threads"), ("n_layers", "depth"), ("num_layers", "depth"),
    ("learning_rate", "lr"), ("seed", "random_state"), ("dpeth", "depth"),
    ("patch_len", "tokenizer__patch_size"), ("nhead", "architecture__n_heads"),
    ("attention__level", "attention__levels"),
])
def test_an_unknown_keyword_names_the_closest_parameter(cls, given, meant):
    """Refused by ``fit`` (scikit-learn's estimators raise nothing in ``__init__``)."""
    message = (f"{cls.__name__}.__init__() got an unexpected keyword argument '{given}'; "
               f"did you mean '{meant}'?")
    pattern = message.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")
    if cls in ADAPTERS:  # sktime's constructors have no **kwargs: Python refuses at once
        with pytest.raises(TypeError, match=pattern):
            cls(**{given: 2})
        return
    est = cls(**{given: 2})
    assert clone(est).get_params()[given] == 2  # kept, so a clone is refused alike
    with pytest.raises(TypeError, match=pattern):
        _fit(est)


def test_epochs_means_each_estimators_phase():
    with pytest.raises(TypeError, match="did you mean 'max_epochs'"):
        _fit(SPTClassifier(epochs=3))
    with pytest.raises(TypeError, match="did you mean 'pretrain_epochs'"):  # not deprecated
        _fit(SPTPretrainer(epochs=3))


def test_an_unknown_keyword_without_a_likely_meaning_gets_no_guess():
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'colour'\.$"):
        _fit(SPTClassifier(colour="blue"))
    assert suggest_parameter("colour", ["depth", "lr"]) is None
    assert suggest_parameter("max_epoch", ["max_epochs", "pretrain_epochs"]) == "max_epochs"


# --- the pretrainer's max_epochs, removed in 0.5 --------------------------------------------
def test_the_sktime_transformer_takes_pretrain_epochs_and_names_it_for_the_old_spelling():
    """sktime allows no ``**kwargs``, so the adapters take the current names only."""
    X, _ = make_panel(n=12, t=16)
    new = SPTTransformerSktime(pretrain_epochs=1, **TINY).fit(X)
    assert new.estimator_.pretrain_epochs_ == 1
    with pytest.raises(TypeError, match="removed in 0.5; use pretrain_epochs="):
        SPTTransformerSktime(max_epochs=1, **TINY)


def test_a_pickle_of_a_pretrainer_before_the_rename_is_refused_naming_the_version():
    state = SPTPretrainer(pretrain_epochs=1).__getstate__()
    # As sktspt 0.2.0 pickled it: the epochs under their old name.
    state["max_epochs"] = state.pop("pretrain_epochs")
    with pytest.raises(TypeError, match=r"made by sktspt 0\.4 or earlier \(it holds "
                                        r"max_epochs.*Unpickle it with sktspt 0\.4"):
        SPTPretrainer.__new__(SPTPretrainer).__setstate__(state)
