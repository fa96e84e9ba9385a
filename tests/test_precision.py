"""``precision``: bfloat16 autocast on CPU, float16 loss scaling, saving across precisions."""

import numpy as np
import pytest
import torch
from conftest import make_panel

from sktspt import SPTClassifier, SPTPretrainer, load
from sktspt.nn.heads import ClassificationModel, ReconstructionModel
from sktspt.precision import autocast_dtype, matmul_precision
from sktspt.training import AugmentedNetClassifier, MaskedSigRegNet

TINY = dict(depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=32,
            architecture__dropout=0.0, batch_size=8,
            validation_fraction=0.0)
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture(scope="module")
def task():
    X, y = make_panel(n=64, c=1, t=48, seed=1, n_classes=3)
    Xt, yt = make_panel(n=60, c=1, t=48, seed=2, n_classes=3)
    return X, y, Xt, yt


@pytest.fixture(scope="module")
def bf16_model(task):
    X, y, _, _ = task
    return SPTClassifier(pretrain_epochs=3, max_epochs=30, lr=3e-3, device__precision="bfloat16",
                         random_state=0, **TINY).fit(X, y)


def test_bfloat16_accuracy_within_seed_noise_of_float32(task):
    X, y, Xt, yt = task
    acc = {p: [SPTClassifier(pretrain_epochs=3, max_epochs=30, lr=3e-3, device__precision=p,
                             random_state=s, **TINY).fit(X, y).score(Xt, yt) for s in range(3)]
           for p in ("float32", "bfloat16")}
    f32, bf16 = np.array(acc["float32"]), np.array(acc["bfloat16"])
    assert f32.mean() > 0.8, acc  # the task is learnt (chance is 1/3), so the check means something
    noise = max(np.ptp(f32), np.ptp(bf16), 0.05)
    assert abs(bf16.mean() - f32.mean()) <= noise, acc


def test_bfloat16_really_autocasts(task, bf16_model):
    """Same weights, two precisions: close, but not bit-identical, probabilities."""
    _, _, Xt, _ = task
    p_bf16 = bf16_model.predict_proba(Xt)
    p_f32 = bf16_model.set_params(device__precision="float32").predict_proba(Xt)
    bf16_model.set_params(device__precision="bfloat16")
    assert bf16_model.net_.precision == "bfloat16"
    assert 0 < np.abs(p_bf16 - p_f32).max() < 0.05
    assert p_bf16.dtype == np.float64 and np.allclose(p_bf16.sum(1), 1)
    assert all(p.dtype == torch.float32 for p in bf16_model.net_.module_.parameters())


def test_losses_are_float32_under_bfloat16():
    X = torch.as_tensor(make_panel(n=16, c=2, t=32)[0])
    net = MaskedSigRegNet(
        module=ReconstructionModel,
        module__n_channels=2, module__patch_size=4, module__d_model=16, module__n_heads=2,
        module__depth=1, module__dim_feedforward=16, module__max_tokens=8,
        criterion=torch.nn.MSELoss, precision="bfloat16", train_split=None, max_epochs=1,
        masking="span", mask_ratio=0.3, mean_span=3.0,
    ).initialize()
    gen = torch.Generator().manual_seed(0)
    loss, y_pred = net.random_step((X, torch.zeros(0)), gen, True)
    assert loss.dtype == torch.float32 and y_pred.dtype == torch.float32
    with net.autocast():
        assert net.module_.embed(X).dtype == torch.bfloat16


def test_save_and_load_across_precisions(tmp_path, task, bf16_model):
    _, _, Xt, _ = task
    path = tmp_path / "bf16.sktspt"
    bf16_model.save(path)
    loaded = load(path)
    assert loaded.device__precision == "bfloat16" and loaded.net_.precision == "bfloat16"
    np.testing.assert_array_equal(loaded.predict_proba(Xt), bf16_model.predict_proba(Xt))
    f32 = loaded.set_params(device__precision="float32").predict_proba(Xt)
    np.testing.assert_allclose(
        f32, bf16_model.set_params(device__precision="float32").predict_proba(Xt), atol=1e-6)
    bf16_model.set_params(device__precision="bfloat16")
    # float32 -> bfloat16, and a float16 model (as trained on a GPU) on a CPU: float32
    pre = SPTPretrainer(pretrain_epochs=1, device__precision="float32", random_state=0,
                        **TINY).fit(Xt)
    pre.save(tmp_path / "f32.sktspt")
    back = load(tmp_path / "f32.sktspt")
    assert back.device__precision == "float32"
    np.testing.assert_allclose(back.set_params(device__precision="bfloat16").transform(Xt),
                               pre.transform(Xt), atol=0.1)
    np.testing.assert_array_equal(back.set_params(device__precision="float16").transform(Xt),
                                  pre.transform(Xt))
    bf16_model.set_params(device__precision="float16").save(tmp_path / "f16.sktspt")
    bf16_model.set_params(device__precision="bfloat16")
    f16 = load(tmp_path / "f16.sktspt", device="cpu")
    assert f16.device__precision == "float16" and f16.net_.precision == "float32"
    np.testing.assert_allclose(f16.predict_proba(Xt), f32, atol=1e-6)


def test_warm_start_trains_in_the_current_precision(tmp_path, task):
    X, y, Xt, yt = task
    clf = SPTClassifier(pretrain_epochs=1, max_epochs=2, device__precision="float32",
                        warm_start=True,
                        random_state=0, **TINY).fit(X, y)
    assert clf.net_.precision == "float32"
    clf.set_params(device__precision="bfloat16").fit(X, y)
    assert clf.net_.precision == "bfloat16" and len(clf.history_) == 4
    clf.set_params(device__precision="float16").save(tmp_path / "f16.sktspt")
    loaded = load(tmp_path / "f16.sktspt")  # predicts on CPU (float32) but cannot train
    loaded.predict(Xt)
    with pytest.raises(ValueError, match="float16.*CUDA"):
        loaded.fit(X, y)


@pytest.mark.parametrize("bad", ["half", "bf16", None, torch.bfloat16, 16])
def test_bad_precision_raises(task, bad):
    X, y, _, _ = task
    with pytest.raises(ValueError, match="device__precision must be one of"):
        SPTClassifier(device__precision=bad, pretrain_epochs=0, max_epochs=1, **TINY).fit(X, y)


def test_float16_on_cpu_raises_in_fit(task):
    X, y, _, _ = task
    for est in (SPTClassifier(device__precision="float16", max_epochs=1, pretrain_epochs=1, **TINY),
                SPTPretrainer(device__precision="float16", pretrain_epochs=1, **TINY)):
        with pytest.raises(ValueError, match="float16.*CUDA"):
            est.fit(X, y)


def test_resolution_rules():
    assert autocast_dtype("auto", "cpu") == "float32"
    assert autocast_dtype("bfloat16", "cpu") == "bfloat16"
    assert autocast_dtype("float16", "cpu", training=False) == "float32"
    assert autocast_dtype("float16", "meta") == "float32"
    before = torch.backends.cuda.matmul.allow_tf32
    with matmul_precision("bfloat16", "cuda"):
        assert torch.backends.cuda.matmul.allow_tf32
    with matmul_precision("float32", "cuda"):
        assert torch.backends.cuda.matmul.allow_tf32 == before
    assert torch.backends.cuda.matmul.allow_tf32 == before


def test_float16_loss_scaling_path():
    """The GradScaler step (unscale, clip, step, update) trains; CPU autocast runs float16."""
    X, y = make_panel(n=32, c=1, t=32)
    common = dict(
        module=ClassificationModel,
        module__n_classes=2, module__n_channels=1, module__patch_size=4, module__d_model=16,
        module__n_heads=2, module__depth=1, module__dim_feedforward=16, module__max_tokens=8,
        criterion=torch.nn.CrossEntropyLoss, train_split=None, max_epochs=4, batch_size=8,
        lr=3e-3, optimizer=torch.optim.AdamW, optimizer__fused=True, verbose=0,  # as fit uses
    )
    torch.manual_seed(0)
    net = AugmentedNetClassifier(precision="float16", **common).fit(X, y)
    assert net.grad_scaler_.get_scale() > 1  # loss scaling was in use
    losses = net.history[:, "train_loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]
    torch.manual_seed(0)
    ref = AugmentedNetClassifier(precision="float32", **common).fit(X, y)
    assert not hasattr(ref, "grad_scaler_") or ref.grad_scaler_ is None
    np.testing.assert_allclose(losses, ref.history[:, "train_loss"], rtol=0.05)


@cuda
@pytest.mark.parametrize("precision", ["auto", "bfloat16", "float16"])
def test_cuda_precisions_train_and_restore_tf32(task, precision):
    X, y, Xt, yt = task
    before = torch.backends.cuda.matmul.allow_tf32
    clf = SPTClassifier(pretrain_epochs=3, max_epochs=15, device__precision=precision,
                        device="cuda",
                        random_state=0, **TINY).fit(X, y)
    assert torch.backends.cuda.matmul.allow_tf32 == before
    ref = SPTClassifier(pretrain_epochs=3, max_epochs=15, device__precision="float32",
                        device="cuda",
                        random_state=0, **TINY).fit(X, y)
    assert abs(clf.score(Xt, yt) - ref.score(Xt, yt)) <= 0.15


def _float16_net():
    return MaskedSigRegNet(
        module=ReconstructionModel,
        module__n_channels=2, module__patch_size=4, module__d_model=16, module__n_heads=2,
        module__depth=1, module__dim_feedforward=16, module__max_tokens=8,
        criterion=torch.nn.MSELoss, precision="float16", train_split=None, max_epochs=1,
        masking="span", mask_ratio=0.3, mean_span=3.0, batch_size=8,
    ).initialize()


def test_float16_scales_the_loss_and_skips_steps_whose_gradients_overflow():
    # Loss scaling runs on skorch's public hooks: the scaled loss in train_step_single, the
    # unscaling (and the skip of an overflowed step) in on_grad_computed.
    X = torch.as_tensor(make_panel(n=16, c=2, t=32)[0])
    net = _float16_net()
    net.partial_fit(X, None)
    scaler = net.grad_scaler_
    assert np.isfinite(net.history[-1, "train_loss"]) and scaler.get_scale() > 0
    before = {k: v.clone() for k, v in net.module_.state_dict().items()}
    scaler.update(2.0**120)  # a scale so large that every gradient overflows
    net.partial_fit(X, None)  # two steps, both skipped, each halving the scale
    assert all(torch.equal(before[k], v) for k, v in net.module_.state_dict().items())
    assert scaler.get_scale() == 2.0**118 and "grad_scaler_" not in net.__getstate__()
