"""Routed settings (``<group>__<name>``): stored, returned, set, cloned, pickled and searched
as skorch's ``module__`` settings are; the old flat names and the rejected options, removed
in 0.5, raise ``TypeError`` saying so."""

import inspect
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from sktspt import SPTClassifier, SPTClassifierSktime, SPTPretrainer, SPTRegressor
from sktspt._param_docs import component_docs
from sktspt._param_hints import CHECKPOINT, REJECTED, REMOVED


def _explicit(cls) -> list[str]:
    return [n for n, p in inspect.signature(cls).parameters.items()
            if p.kind is not p.VAR_KEYWORD]


def test_the_surface_is_at_most_24_parameters():
    """At most 24, ``**kwargs`` counted: scikit-learn's largest signature (24); resumable
    checkpoints are a callback (``ResumableCheckpoint``), as skorch's ``Checkpoint``."""
    assert len(_explicit(SPTClassifier)) == 23
    assert len(_explicit(SPTRegressor)) == 22
    assert len(_explicit(SPTPretrainer)) <= 22
    for cls in (SPTClassifier, SPTRegressor, SPTPretrainer):
        assert not set(cls._routed) & set(_explicit(cls))


@pytest.mark.parametrize("cls", [SPTClassifier, SPTRegressor, SPTPretrainer])
def test_a_routed_setting_is_its_components_keyword_argument(cls):
    """skorch's routing: ``<group>__<name>`` is keyword argument ``name`` of the group's
    component, with that argument's default and documentation (no table of their own)."""
    assert cls._routed and set(cls._routes) == {n.partition("__")[0] for n in cls._routed}
    for name, default in cls._routed.items():
        group, _, own = name.partition("__")
        param = inspect.signature(cls._routes[group]).parameters[own]
        assert param.kind is param.KEYWORD_ONLY and param.default is default
        kind, text = component_docs(cls._routes[group])[own]
        assert f"{name} : {kind}, default=" in cls.__doc__ and text.split()[0] in cls.__doc__
    assert SPTClassifier._routed["optimizer__weight_decay"] == 0.01  # not torch's, by chance
    assert "schedule__pretrain_share" not in SPTPretrainer._routed


def test_a_routed_setting_is_stored_and_returned_only_when_given():
    clf = SPTClassifier(attention="lighthouse", attention__levels=2)
    assert clf.attention__levels == 2
    params = clf.get_params(deep=False)
    assert params["attention__levels"] == 2 and "attention__pool" not in params
    assert clf._settings()["attention__pool"] == SPTClassifier._routed["attention__pool"]
    assert "attention__levels" not in SPTClassifier().get_params()
    assert repr(clf) == "SPTClassifier(attention='lighthouse', attention__levels=2)"


def test_set_params_clone_and_pickle_keep_routed_settings():
    clf = SPTClassifier(masking__ratio=0.5)
    clf.set_params(attention__levels=5, depth=4)
    assert clf.attention__levels == 5 and clf.depth == 4
    twin = clone(clf)
    assert twin.get_params() == clf.get_params()
    again = pickle.loads(pickle.dumps(clf))
    assert again.get_params() == clf.get_params()


def test_grid_search_over_a_routed_setting():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(24, 1, 16))
    y = np.repeat([0, 1], 12)
    X[y == 1] += 1.0
    base = SPTClassifier(depth=1, d_model=8, architecture__n_heads=2, pretrain_epochs=1,
                         max_epochs=1, batch_size=8, random_state=0, device__threads=1)
    search = GridSearchCV(base, {"masking__ratio": [0.5, 0.7]}, cv=2).fit(X, y)
    assert search.best_params_["masking__ratio"] in (0.5, 0.7)
    assert search.best_estimator_.masking__ratio == search.best_params_["masking__ratio"]


def test_an_unknown_keyword_names_the_closest_setting():
    """Kept by ``__init__`` and ``set_params`` (which raise nothing, as scikit-learn asks)
    and refused by ``fit``, with the closest valid name."""
    X, y = np.zeros((4, 1, 8)), np.array([0, 1, 0, 1])
    with pytest.raises(TypeError, match="did you mean 'attention__levels'"):
        SPTClassifier(attention__level=3).fit(X, y)
    with pytest.raises(TypeError, match="did you mean 'device__threads'"):
        SPTClassifier(n_jobs=2).fit(X, y)
    with pytest.raises(TypeError, match="unexpected keyword argument 'criterion__label_smoothing'"):
        SPTRegressor(criterion__label_smoothing=0.1).fit(X, y.astype(float))
    typo = SPTClassifier().set_params(attention__lvls=3)
    with pytest.raises(TypeError, match="did you mean 'attention__levels'"):
        clone(typo).fit(X, y)


def test_routed_settings_are_not_public_attributes_but_read_as_them():
    """scikit-learn's convention: the public attributes after ``__init__`` are exactly the
    explicit parameters; a routed setting still reads as an attribute."""
    est = SPTClassifier(attention__levels=4)
    public = {k for k in vars(est) if not k.startswith("_")}
    assert public == set(SPTClassifier._get_param_names())
    assert est.attention__levels == 4
    assert est.attention__pool == SPTClassifier._routed["attention__pool"]


def test_an_invalid_routed_value_names_the_setting():
    X = np.zeros((8, 1, 16))
    with pytest.raises(ValueError, match="masking__ratio must be a number in"):
        SPTPretrainer(masking__ratio=1.5).fit(X)


@pytest.mark.parametrize("old", sorted(n for n, new in REMOVED.items()
                                      if new and new != CHECKPOINT))
def test_an_old_flat_name_raises_naming_its_routed_setting(old):
    new = REMOVED[old]
    message = rf"SPTClassifier\({old}=\.\.\.\) was removed in 0\.5; use {new}=\.\.\. instead"
    value = SPTClassifier._routed.get(new)
    with pytest.raises(TypeError, match=message):
        SPTClassifier(**{old: value})
    with pytest.raises(TypeError, match=message):
        SPTClassifier().set_params(**{old: value})


@pytest.mark.parametrize("name", sorted(REJECTED))
@pytest.mark.parametrize("cls", [SPTClassifier, SPTRegressor, SPTPretrainer, SPTClassifierSktime])
def test_a_rejected_option_raises_saying_it_was_removed(cls, name):
    with pytest.raises(TypeError, match=rf"{cls.__name__}'s {name} was removed in 0\.5: .*"
                                        r"docs/tuning-history\.md"):
        cls(**{name: REJECTED[name]})
    assert name not in inspect.signature(cls).parameters


def test_the_pretrainers_max_epochs_raises_naming_pretrain_epochs():
    with pytest.raises(TypeError, match=r"max_epochs=\.\.\.\) was removed in 0\.5; use "
                                        r"pretrain_epochs="):
        SPTPretrainer(max_epochs=3)
    assert "max_epochs" in SPTClassifier().get_params()  # the classifier's own parameter


@pytest.mark.parametrize("value", [True, "stretch"])
def test_stretching_augmentation_was_removed(value):
    with pytest.raises(ValueError, match=r"\(stretching\) was removed in 0\.5"):
        SPTClassifier(augment=value, depth=1, d_model=8, architecture__n_heads=2)._check_params()


@pytest.mark.parametrize("state", [
    dict(patience=3, checkpoint_dir="ckpt", mask_ratio=0.7, layer_decay=1.0),  # before 0.4
    {"_routed_values": {"callbacks__checkpoint_dir": "ckpt", "callbacks__pretrain": []}},  # 0.4
], ids=["flat names", "0.4 callbacks settings"])
def test_a_pickle_with_names_removed_in_05_is_refused_naming_the_version(state):
    state = {**SPTClassifier().__dict__, **state}
    with pytest.raises(TypeError, match=r"made by sktspt 0\.4 or earlier .* Unpickle it with "
                                        r"sktspt 0\.4, which reads it"):
        SPTClassifier.__new__(SPTClassifier).__setstate__(state)


@pytest.mark.parametrize("old, new", [
    ("callbacks__checkpoint_dir", r"callbacks=\[sktspt\.ResumableCheckpoint\(dirname\)\] "),
    ("checkpoint_dir", r"callbacks=\[sktspt\.ResumableCheckpoint\(dirname\)\] "),
    ("callbacks__pretrain", "pretrain__callbacks=")])
def test_the_callbacks_settings_of_04_name_their_replacement(old, new):
    """``callbacks__<name>__<param>`` is skorch's route to a callback's parameter; 0.4's two
    ``callbacks__`` settings that meant something else, and 0.5's ``checkpoint_dir``, are
    refused naming what replaced them."""
    with pytest.raises(TypeError, match=rf"\({old}=\.\.\.\) was removed in 0\.5; use {new}"):
        SPTClassifier(**{old: None})
    with pytest.raises(TypeError, match=rf"use {new}"):
        SPTRegressor().set_params(**{old: None})


def test_a_pickle_that_sets_a_rejected_option_is_refused():
    state = dict(SPTClassifier().__dict__, n_estimators=3)
    with pytest.raises(TypeError, match="holds n_estimators, which sktspt 0.5 removed"):
        SPTClassifier.__new__(SPTClassifier).__setstate__(state)


def test_docstrings_document_every_routed_setting_once():
    for cls in (SPTClassifier, SPTRegressor, SPTPretrainer):
        for name in cls._routed:
            assert cls.__doc__.count(f"{name} : ") == 1, (cls.__name__, name)
