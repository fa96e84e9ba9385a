"""Unequal lengths and missing values, end to end.

Both are coded as NaN. Padding and gaps must never reach attention, pooling, the
reconstruction loss or the masking ratio, so extra padding changes nothing.
"""

import numpy as np
import pandas as pd
import pytest
import torch
from skorch.dataset import Dataset

from sktspt import SPTClassifier, SPTPretrainer
from sktspt.data import MAX_AUTO_TOKENS, check_panel
from sktspt.loaders import TensorBatchIterator
from sktspt.masking import MASKINGS, make_mask
from sktspt.nn.encoder import TransformerEncoder
from sktspt.nn.tokenizers import STEM_REACH
from sktspt.objectives import masked_reconstruction_loss
from sktspt.training import MaskedPretrainNet

TINY = dict(depth=1, d_model=16, architecture__n_heads=2, architecture__dim_feedforward=32,
            architecture__dropout=0.0, random_state=0)


def ragged(n=30, c=2, seed=0, lengths=(20, 60)):
    """A list of ``(c, length_i)`` series, two classes by frequency."""
    g = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = []
    for i in range(n):
        t = np.linspace(0, 1, int(g.integers(*lengths)))
        base = np.sin(2 * np.pi * (2 + 3 * y[i]) * t + g.uniform(0, 6))
        X.append(base[None, :].repeat(c, 0) + 0.1 * g.normal(size=(c, len(t))))
    return X, y


def pad(s, extra):
    return np.pad(s, ((0, 0), (0, extra)), constant_values=np.nan)


# --- (a) more padding changes nothing ----------------------------------------------------
@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "rotary", "alibi"])
@pytest.mark.parametrize("normalize", ["global", "instance"])
def test_padding_does_not_change_prediction_or_embedding(positional, normalize):
    X, y = ragged()
    clf = SPTClassifier(
        pretrain_epochs=1, max_epochs=2, tokenizer__patch_size=4,
            architecture__positional=positional,
        normalize=normalize, **TINY,
    ).fit(X, y)
    assert not clf.equal_length_
    s = X[0]  # 1 short series, padded on its own and beside the longest one
    longest = max(X, key=lambda a: a.shape[1])
    alone = clf.predict_proba([s])
    np.testing.assert_allclose(clf.predict_proba([pad(s, 7)]), alone, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(clf.predict_proba([s, longest])[:1], alone, rtol=1e-5, atol=1e-6)
    emb = clf.transform([s])
    np.testing.assert_allclose(clf.transform([longest, s])[1:], emb, rtol=1e-5, atol=1e-6)


def test_padding_does_not_change_pretrainer_embedding():
    X, _ = ragged()
    pre = SPTPretrainer(pretrain_epochs=1, tokenizer__patch_size=4, **TINY).fit(X)
    s = X[0]
    np.testing.assert_allclose(
        pre.transform([pad(s, 9)]), pre.transform([s]), rtol=1e-5, atol=1e-6
    )


def test_reconstruct_keeps_the_input_length_when_padding_is_dropped():
    X, _ = ragged()
    pre = SPTPretrainer(pretrain_epochs=1, tokenizer__patch_size=4, **TINY).fit(X)
    s = X[0]
    out = pre.reconstruct([pad(s, 9)])
    assert out.shape == (1, 2, s.shape[1] + 9)
    covered = -(-s.shape[1] // 4) * 4  # whole patches hold a reconstruction
    assert np.isnan(out[..., covered:]).all()
    np.testing.assert_allclose(out[..., : s.shape[1]], pre.reconstruct([s]), atol=1e-6)


def test_padding_beyond_learned_positions_is_dropped_not_rejected():
    """Only observed length counts against learned positions; a longer series still fails."""
    X, y = ragged()
    clf = SPTClassifier(
        pretrain_epochs=0, max_epochs=1, tokenizer__patch_size=4,
            architecture__positional="learned", **TINY
    ).fit(X, y)
    s = X[0]
    np.testing.assert_allclose(
        clf.predict_proba([pad(s, 10 * clf.n_timepoints_)]), clf.predict_proba([s]), atol=1e-6
    )
    with pytest.raises(ValueError, match="learned"):
        clf.predict_proba([np.ones((2, 10 * clf.n_timepoints_))])


def test_attention_and_pooling_ignore_padding_tokens():
    """Garbage behind the padding mask reaches neither attention weights nor kept tokens."""
    torch.manual_seed(0)
    enc = TransformerEncoder(
        n_channels=2, patch_size=4, max_tokens=8, d_model=16, depth=2, n_heads=2,
        dim_feedforward=16, dropout=0.0,
    ).eval()
    x = torch.randn(3, 2, 32)
    observed = torch.ones_like(x, dtype=torch.bool)
    observed[0, :, 12:] = False  # series 0: 3 tokens, then padding
    observed[1, :, 20:] = False
    garbage = torch.where(observed, x, torch.randn_like(x) * 100)
    with torch.no_grad():
        h, keep = enc(x, observed, observed)
        h2, _ = enc(garbage, observed, observed)
        maps = enc.attention_maps(x, observed, observed)
    assert keep[0].tolist() == [True] * 3 + [False] * 5
    torch.testing.assert_close(h[keep], h2[keep])
    for weights in maps:
        key_weight = weights.sum(dim=2)  # (n, heads, k): weight each key receives
        assert torch.all(key_weight.permute(0, 2, 1)[~keep] == 0)


# --- (a2) training batches cut after their longest series --------------------------------
def test_auto_patch_size_follows_the_median_length_of_unequal_series():
    """Sized by its longest series, a panel of mostly short ones would get 7-token series."""
    X = [np.zeros((1, 128))] * 9 + [np.zeros((1, 640))]
    clf = SPTClassifier(pretrain_epochs=0, max_epochs=1, **TINY).fit(X, np.arange(10) % 2)
    assert clf.patch_size_ == 4 and clf.max_tokens_ == 160  # 32 tokens at 128 steps
    clf.fit(np.zeros((10, 1, 640)), np.arange(10) % 2)
    assert clf.patch_size_ == 20  # an equal-length panel: 32 tokens at its length


def test_auto_patch_size_caps_the_tokens_of_the_longest_series():
    X = [np.zeros((1, 40))] * 9 + [np.zeros((1, 40 * MAX_AUTO_TOKENS))]
    clf = SPTClassifier(pretrain_epochs=0, max_epochs=1, **TINY).fit(X, np.arange(10) % 2)
    assert clf.patch_size_ == 40 and clf.max_tokens_ == MAX_AUTO_TOKENS


def test_gaps_do_not_shorten_a_series_for_the_median():
    """A series' length runs to its last observed value, whatever is missing before it."""
    X = np.zeros((9, 1, 256))
    X[:5, :, 100:249] = np.nan  # gaps, not ends: 101 observed values of 250 steps
    X[:, :, 250:] = np.nan
    clf = SPTClassifier(pretrain_epochs=0, max_epochs=1, **TINY).fit(X, np.arange(9) % 2)
    assert clf.patch_size_ == 8  # ceil(250 / 32)


def _nan_padded(lengths, t, c=2, seed=0):
    g = np.random.default_rng(seed)
    X = np.full((len(lengths), c, t), np.nan, dtype=np.float32)
    for i, n in enumerate(lengths):
        X[i, :, :n] = g.normal(size=(c, n))
    return torch.from_numpy(X)


def test_batches_are_cut_after_their_longest_series_plus_the_margin():
    X = _nan_padded([30, 50, 10, 240], t=256)
    data = Dataset(X, torch.zeros(4))
    cut = [xb.shape[2] for xb, _ in TensorBatchIterator(
        data, batch_size=2, trim_multiple=8, trim_margin=STEM_REACH)]
    assert cut == [8 * int(np.ceil((56 + STEM_REACH) / 8)), 256]  # 240 + margin > 256: not cut
    whole = [xb.shape[2] for xb, _ in TensorBatchIterator(data, batch_size=2)]
    assert whole == [256, 256]


@pytest.mark.parametrize("tokenizer", ["conv", "patch", "rocket"])
def test_cutting_a_batch_changes_no_observed_token(tokenizer):
    """The margin covers the stem's reach past a series' end, so its tokens are the same."""
    torch.manual_seed(0)
    enc = TransformerEncoder(
        n_channels=2, patch_size=4, max_tokens=64, d_model=16, depth=2, n_heads=2,
        dim_feedforward=16, dropout=0.0, tokenizer=tokenizer,
    ).eval()
    X = _nan_padded([37, 21], t=256)
    (short, _), = TensorBatchIterator(Dataset(X, torch.zeros(2)), batch_size=2,
                                      trim_multiple=4, trim_margin=STEM_REACH)
    assert short.shape[2] < 256

    def encode(x):
        observed = ~torch.isnan(x)
        with torch.no_grad():
            h, keep = enc(torch.nan_to_num(x), observed, observed)
        return h, keep

    (h_full, keep_full), (h_cut, keep_cut) = encode(X), encode(short)
    k = keep_cut.shape[1]
    assert torch.equal(keep_full[:, :k], keep_cut) and not keep_full[:, k:].any()
    torch.testing.assert_close(h_cut[keep_cut], h_full[:, :k][keep_cut])


def test_fit_on_unequal_lengths_trains_on_cut_batches():
    """Every batch a fit sees is a whole number of patches, and most are shorter than X."""
    from skorch.callbacks import Callback

    class Widths(Callback):
        def __init__(self):
            self.seen = []

        def on_batch_begin(self, net, batch=None, **kwargs):
            self.seen.append(batch[0].shape[2])

    X, y = ragged(n=40, lengths=(20, 60))
    X[0] = np.zeros((2, 300))
    widths = Widths()
    clf = SPTClassifier(pretrain_epochs=0, max_epochs=2, batch_size=4, callbacks=[widths],
                        **TINY).fit(X, y)
    assert all(w % clf.patch_size_ == 0 and w <= 300 for w in widths.seen)
    assert np.mean(np.array(widths.seen) < 300) > 0.5


# --- (b) real unequal-length data in sktime's nested format -------------------------------
def test_japanese_vowels_from_nested_pandas():
    """12 channels, lengths 7..29, nested_univ as loaded: fits, predicts, beats chance."""
    from sktime.datasets import load_japanese_vowels

    X, y = load_japanese_vowels(split="train", return_X_y=True)
    X_test, y_test = load_japanese_vowels(split="test", return_X_y=True)
    assert isinstance(X, pd.DataFrame)
    clf = SPTClassifier(
        pretrain_epochs=2, max_epochs=10, lr=3e-3, batch_size=32, **TINY
    ).fit(X, y)
    assert clf.n_channels_ == 12 and not clf.equal_length_
    accuracy = (clf.predict(X_test) == y_test).mean()
    assert accuracy > 0.5, accuracy  # 9 classes: chance is about 0.11


def test_plaid_subset_from_nested_pandas():
    """Univariate, lengths 100..1344: a 10-per-class subset fits and beats chance."""
    from sktime.datasets import load_plaid

    def subset(split):
        X, y = load_plaid(split=split, return_X_y=True)
        idx = np.concatenate([np.flatnonzero(y == c)[:10] for c in np.unique(y)])
        return X.iloc[idx].reset_index(drop=True), y[idx]

    X, y = subset("train")
    X_test, y_test = subset("test")
    clf = SPTClassifier(
        pretrain_epochs=2, max_epochs=30, lr=3e-3, batch_size=16, **TINY
    ).fit(X, y)
    assert not clf.equal_length_
    accuracy = (clf.predict(X_test) == y_test).mean()
    assert accuracy > 2 / len(np.unique(y)), accuracy  # twice chance


def test_df_list_is_read_as_time_by_channel():
    """sktime's df-list holds (time x channel) frames; they must not be transposed."""
    frames = [pd.DataFrame(np.arange(10.0).reshape(5, 2)), pd.DataFrame(np.zeros((3, 2)))]
    arr, info = check_panel(frames)
    assert arr.shape == (2, 2, 5)
    np.testing.assert_array_equal(arr[0, 1], [1, 3, 5, 7, 9])
    assert np.isnan(arr[1, :, 3:]).all() and not info.equal_length


# --- (c) gaps inside series --------------------------------------------------------------
@pytest.mark.parametrize("masking", MASKINGS)
def test_gaps_inside_series_fit_and_predict_finite(masking):
    X, y = ragged(seed=1)
    g = np.random.default_rng(2)
    X = [x.copy() for x in X]
    for x in X:
        x[g.random(x.shape) < 0.1] = np.nan  # scattered gaps
        x[0, 4:14] = np.nan  # a gap longer than a patch in one channel
        x[:, 15:17] = np.nan  # a gap in all channels at once
    X[0][1] = np.nan  # a channel missing entirely from one series
    clf = SPTClassifier(
        pretrain_epochs=2, max_epochs=2, tokenizer__patch_size=4, masking=masking, **TINY
    ).fit(X, y)
    assert np.isfinite(clf.pretrain_history_[:, "train_loss"]).all()
    assert np.isfinite(clf.predict_proba(X)).all()
    assert np.isfinite(clf.transform(X)).all()


def test_gaps_in_equal_length_numpy_give_finite_output():
    X, y = ragged(lengths=(40, 41))
    X = np.stack(X)
    X[:, 0, 10:20] = np.nan
    clf = SPTClassifier(pretrain_epochs=1, max_epochs=2, **TINY).fit(X, y)
    assert clf.equal_length_
    assert np.isfinite(clf.predict_proba(X)).all()


# --- (d) the loss and the masks never count missing values ---------------------------------
def test_reconstruction_loss_ignores_missing_positions():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(4, 3, 20, generator=g)
    X[X > 1.0] = float("nan")
    X[0, :, 15:] = float("nan")  # padding
    hidden = torch.rand(X.shape, generator=g) < 0.5
    recon = torch.randn(X.shape, generator=g)
    missing = torch.isnan(X)
    with_garbage = torch.where(missing, torch.full_like(recon, 1e6), recon)
    with_zeros = torch.where(missing, torch.zeros_like(recon), recon)
    loss = masked_reconstruction_loss(with_garbage, X, hidden)
    assert torch.isfinite(loss)
    torch.testing.assert_close(loss, masked_reconstruction_loss(with_zeros, X, hidden))
    # and it is the mean over hidden *observed* values only
    counted = hidden & ~missing
    expected = (recon - torch.nan_to_num(X))[counted].square().mean()
    torch.testing.assert_close(masked_reconstruction_loss(recon, X, hidden), expected)


@pytest.mark.parametrize("masking", MASKINGS)
def test_masks_hide_only_observed_values_at_the_set_ratio(masking):
    """Heavy padding neither receives mask nor dilutes the hidden share of real values."""
    n, c, t = 600, 3, 120
    X = torch.randn(n, c, t)
    lengths = torch.randint(10, t + 1, (n,))
    X[torch.arange(t)[None, None, :] >= lengths[:, None, None].expand(n, c, t)] = float("nan")
    X[::2, 1] = float("nan")  # a channel missing from half the series
    net = MaskedPretrainNet(
        torch.nn.Identity, torch.nn.MSELoss, masking=masking, mask_ratio=0.3, mean_span=3.0
    )
    hidden = net.draw_mask(X, torch.Generator().manual_seed(0))
    observed = ~torch.isnan(X)
    assert not (hidden & ~observed).any()
    share = hidden.sum().item() / observed.sum().item()
    assert 0.2 < share < 0.4, share
    # every series keeps at least one observed value visible
    assert ((observed & ~hidden).flatten(1).any(dim=1)).float().mean() > 0.99


def test_channel_mask_never_hides_every_observed_channel():
    n, c, t = 2000, 3, 10
    observed = torch.ones(n, c, t, dtype=torch.bool)
    observed[:, 0] = False  # channel 0 missing everywhere
    g = torch.Generator().manual_seed(0)
    hidden = make_mask("channel", (n, c, t), 0.9, 3.0, g, observed=observed)
    assert not hidden[:, 0].any()
    assert (observed & ~hidden).flatten(1).any(dim=1).all()
    assert hidden[:, 1:].any()
