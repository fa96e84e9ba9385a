"""Fine-tuning options: layer_decay (layer-wise learning-rate decay) and reinit_layers."""

import numpy as np
import pytest
import torch

from sktspt import SPTClassifier, SPTPretrainer, load
from sktspt.training import layer_decay_groups

TINY = dict(d_model=8, architecture__n_heads=2, architecture__dim_feedforward=8,
            architecture__dropout=0.0, random_state=0, batch_size=8)
X = np.random.RandomState(0).normal(size=(16, 2, 24))
Y = np.arange(16) % 2


def _lr_of(net) -> dict[str, float]:
    """Each parameter's name -> the peak learning rate of its optimizer group."""
    group = {id(p): g["initial_lr"] for g in net.optimizer_.param_groups for p in g["params"]}
    return {name: group[id(p)] for name, p in net.module_.named_parameters()}


@pytest.mark.parametrize("n_estimators", [1, 2])
def test_each_layer_trains_at_its_decayed_rate(n_estimators):
    clf = SPTClassifier(depth=3, lr=0.1, layer_decay=0.5, pretrain_epochs=1, max_epochs=1,
                        n_estimators=n_estimators, **TINY).fit(X, Y)
    for name, lr in _lr_of(clf.net_).items():
        if ".embed." in name:
            expected = 0.1 * 0.5 ** 4
        elif ".layers." in name:
            layer = int(name.split(".layers.")[1].split(".")[0])
            expected = 0.1 * 0.5 ** (3 - layer)
        else:  # final norm and head
            assert "encoder.norm." in name or "head." in name, name
            expected = 0.1
        assert lr == pytest.approx(expected), name


def test_layer_decay_follows_the_pretrainers_depth_not_the_depth_parameter():
    from sklearn.frozen import FrozenEstimator

    pre = SPTPretrainer(depth=4, pretrain_epochs=1, **TINY).fit(X)
    with pytest.warns(UserWarning, match="ignored"):  # depth=2 is overridden by the pretrainer
        clf = SPTClassifier(depth=2, lr=0.1, layer_decay=0.5, max_epochs=1,
                            pretrainer=FrozenEstimator(pre), **TINY).fit(X, Y)
    rates = _lr_of(clf.net_)
    for layer in range(4):  # every layer of the 4-layer network, each at its own rate
        names = [n for n in rates if f".layers.{layer}." in n]
        assert names and all(rates[n] == pytest.approx(0.1 * 0.5 ** (4 - layer))
                             for n in names), layer


def test_no_decay_is_one_plain_group():
    clf = SPTClassifier(depth=2, pretrain_epochs=0, max_epochs=1, **TINY).fit(X, Y)
    assert len(clf.net_.optimizer_.param_groups) == 1
    assert layer_decay_groups(1e-3, 1.0, 4) == []


def test_a_strong_decay_keeps_the_lower_layers_where_they_started():
    def fit(max_epochs, decay):
        clf = SPTClassifier(depth=2, lr=0.01, layer_decay=decay, pretrain_epochs=0,
                            max_epochs=max_epochs, **TINY).fit(X, Y)
        return {k: v.clone() for k, v in clf.net_.module_.state_dict().items()}

    start = fit(0, 1.0)
    for decay, moved in ((1.0, True), (1e-3, False)):
        end = fit(5, decay)
        change = max((end[k] - start[k]).abs().max().item() for k in start if ".embed." in k)
        head = max((end[k] - start[k]).abs().max().item() for k in start if k.startswith("head"))
        assert head > 1e-2  # the head trains at lr either way
        assert (change > 1e-3) is moved, (decay, change)


def test_layer_decay_must_be_in_the_unit_interval():
    for bad in (0.0, 1.5, -0.1, "half", True):
        with pytest.raises(ValueError, match="layer_decay must be a number in"):
            SPTClassifier(layer_decay=bad, **TINY).fit(X, Y)


def test_a_decayed_model_round_trips(tmp_path):
    clf = SPTClassifier(depth=2, layer_decay=0.7, pretrain_epochs=1, max_epochs=1,
                        **TINY).fit(X, Y)
    clf.save(tmp_path / "model")
    back = load(tmp_path / "model")
    assert back.layer_decay == 0.7
    np.testing.assert_array_equal(back.predict_proba(X), clf.predict_proba(X))
    # A warm start keeps training with the decayed groups.
    back.set_params(warm_start=True, max_epochs=1).fit(X, Y)
    assert len(back.net_.optimizer_.param_groups) == 4
    assert torch.isfinite(torch.as_tensor(back.predict_proba(X))).all()


def _layer_weights(encoder, layer: int) -> list[torch.Tensor]:
    return [p.detach().clone() for p in encoder.layers[layer].parameters()]


def _same(a, b) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("reinit", [0, 1, 2])
def test_reinit_layers_keeps_the_lower_pretrained_layers_only(reinit):
    pre = SPTPretrainer(depth=3, pretrain_epochs=2, **TINY).fit(X)
    clf = SPTClassifier(depth=3, pretrainer=pre, max_epochs=0, reinit_layers=reinit,
                        **TINY).fit(X, Y)
    scratch = SPTClassifier(depth=3, pretrain_epochs=0, max_epochs=0, **TINY).fit(X, Y)
    for layer in range(3):
        pretrained = _same(_layer_weights(clf.encoder_, layer), _layer_weights(pre.encoder_, layer))
        fresh = _same(_layer_weights(clf.encoder_, layer), _layer_weights(scratch.encoder_, layer))
        # the top `reinit` layers hold the untrained initial weights, the rest pretrained ones
        assert (pretrained, fresh) == ((False, True) if layer >= 3 - reinit else (True, False))
    assert _same(clf.encoder_.embed.parameters(), pre.encoder_.embed.parameters())


def test_reinit_layers_reaches_every_ensemble_member():
    clf = SPTClassifier(depth=2, pretrain_epochs=2, max_epochs=0, n_estimators=2, reinit_layers=1,
                        **TINY).fit(X, Y)
    kept = SPTClassifier(depth=2, pretrain_epochs=2, max_epochs=0, n_estimators=2, **TINY).fit(X, Y)
    for fitted, reference in zip(clf.encoder_, kept.encoder_):
        assert _same(_layer_weights(fitted, 0), _layer_weights(reference, 0))
        assert not _same(_layer_weights(fitted, 1), _layer_weights(reference, 1))


def test_reinit_layers_must_fit_within_depth():
    with pytest.raises(ValueError, match="reinit_layers=3 exceeds depth=2"):
        SPTClassifier(depth=2, reinit_layers=3, **TINY).fit(X, Y)
    deep = SPTPretrainer(depth=4, pretrain_epochs=1, **TINY).fit(X)  # the pretrainer's depth counts
    clf = SPTClassifier(pretrainer=deep, reinit_layers=4, max_epochs=0, **TINY).fit(X, Y)
    assert len(clf.encoder_.layers) == 4
    with pytest.raises(ValueError, match="reinit_layers=5 exceeds depth=4"):
        SPTClassifier(pretrainer=deep, reinit_layers=5, **TINY).fit(X, Y)
    with pytest.raises(ValueError, match="reinit_layers must be a non-negative integer"):
        SPTClassifier(reinit_layers=-1, **TINY).fit(X, Y)


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

