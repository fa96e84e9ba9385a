"""Routed settings (``<group>__<name>``): stored, returned, set, cloned, pickled and searched
as skorch's ``module__`` settings are; the old flat names and the rejected options still
work for one release, with a ``FutureWarning``."""

import inspect
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from sktspt import SPTClassifier, SPTPretrainer, SPTRegressor
from sktspt._routed import DEPRECATED_OPTIONS, RENAMED, ROUTED


def _explicit(cls) -> list[str]:
    return [n for n, p in inspect.signature(cls).parameters.items()
            if p.kind is not p.VAR_KEYWORD]


def test_the_surface_is_at_most_24_parameters():
    """At most scikit-learn's largest signature (24), ``**kwargs`` counted."""
    assert len(_explicit(SPTClassifier)) == 23
    assert len(_explicit(SPTRegressor)) == 22
    assert len(_explicit(SPTPretrainer)) <= 22
    for cls in (SPTClassifier, SPTRegressor, SPTPretrainer):
        assert set(cls._routed) <= set(ROUTED)
        assert not set(cls._routed) & set(_explicit(cls))


def test_a_routed_setting_is_stored_and_returned_only_when_given():
    clf = SPTClassifier(attention="lighthouse", attention__levels=2)
    assert clf.attention__levels == 2
    params = clf.get_params(deep=False)
    assert params["attention__levels"] == 2 and "attention__pool" not in params
    assert clf._settings()["attention__pool"] == ROUTED["attention__pool"].default
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
    with pytest.raises(TypeError, match="got both mask_ratio and masking__ratio"):
        SPTClassifier(mask_ratio=0.5, masking__ratio=0.6).fit(X, y)


def test_routed_settings_are_not_public_attributes_but_read_as_them():
    """scikit-learn's convention: the public attributes after ``__init__`` are exactly the
    explicit parameters; a routed setting still reads as an attribute."""
    est = SPTClassifier(attention__levels=4)
    public = {k for k in vars(est) if not k.startswith("_")}
    assert public == set(SPTClassifier._get_param_names())
    assert est.attention__levels == 4 and est.attention__pool == ROUTED["attention__pool"].default


def test_an_invalid_routed_value_names_the_setting():
    X = np.zeros((8, 1, 16))
    with pytest.raises(ValueError, match="masking__ratio must be a number in"):
        SPTPretrainer(masking__ratio=1.5).fit(X)


@pytest.mark.parametrize("old", ["mask_ratio", "n_threads", "lighthouse_levels", "auto_steps",
                                 "patience", "checkpoint_dir"])
def test_an_old_flat_name_warns_and_becomes_its_routed_setting(old):
    new = RENAMED[old]
    value = ROUTED[new].default
    with pytest.warns(FutureWarning, match=new):
        clf = SPTClassifier(**{old: value})
    assert clf.get_params()[new] == value and old not in clf.get_params()
    with pytest.warns(FutureWarning):
        assert getattr(clf, old) == value
    both = SPTClassifier(**{old: value, new: value})
    with pytest.raises(TypeError, match="both"):
        both._check_params()


@pytest.mark.parametrize("name", sorted(DEPRECATED_OPTIONS))
def test_a_rejected_option_is_deprecated_but_still_accepted(name):
    cls = SPTClassifier
    value = DEPRECATED_OPTIONS[name].default
    with pytest.warns(FutureWarning, match="deprecated and will be removed in 0.5"):
        clf = cls(**{name: value})
    assert clf.get_params()[name] == value
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert name not in inspect.signature(cls).parameters
        clone(SPTClassifier())  # no warning without deprecated options


def test_a_pickle_with_flat_names_reads_them_as_routed_settings():
    """A pickle from before 0.4.0 holds the flat names as attributes: they become settings
    (read by fit), not stray public attributes."""
    state = dict(SPTClassifier().__dict__)
    del state["_routed_values"]
    state.update(patience=3, checkpoint_dir="ckpt", mask_ratio=0.7, layer_decay=0.5,
                 reinit_layers="deprecated")
    clf = SPTClassifier.__new__(SPTClassifier)
    clf.__setstate__(state)
    settings = clf._settings()
    assert settings["schedule__patience"] == 3 and settings["callbacks__checkpoint_dir"] == "ckpt"
    assert settings["layer_decay"] == 0.5 and settings["reinit_layers"] == 0
    params = clf.get_params()
    assert {"schedule__patience", "callbacks__checkpoint_dir", "layer_decay"} <= set(params)
    assert not {"patience", "checkpoint_dir", "mask_ratio", "masking__ratio"} & set(params)
    assert not {"patience", "checkpoint_dir", "layer_decay"} & set(vars(clf))


def test_the_pretrainers_max_epochs_is_still_pretrain_epochs():
    with pytest.warns(FutureWarning, match="pretrain_epochs"):
        pre = SPTPretrainer(max_epochs=3)
    assert pre.pretrain_epochs == 3 and "max_epochs" not in pre.get_params()


def test_docstrings_document_every_routed_setting_once():
    for cls in (SPTClassifier, SPTRegressor, SPTPretrainer):
        for name in cls._routed:
            assert cls.__doc__.count(f"{name} : ") == 1, (cls.__name__, name)
