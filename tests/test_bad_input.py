"""Bad input, systematically: a clear ValueError/TypeError, or a fit that works and is finite.

Property-based tests draw shapes, dtypes, special values, ragged lists and label types;
every outcome must be either a ValueError/TypeError raised before torch or skorch is
reached (no deep traceback), or a fitted model whose outputs are finite. Named cases
pin the message of each kind of mistake. Numerics (non-finite loss, gradient clipping,
constant channels) and batched prediction are checked here too.
"""

import traceback
import warnings

import numpy as np
import pytest
import torch
from conftest import make_panel
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from skorch.callbacks import Callback, GradientNormClipping

from sktspt import SPTClassifier, SPTPretrainer

TINY = dict(
    depth=1, d_model=8, architecture__n_heads=2, architecture__dim_feedforward=8,
        architecture__dropout=0.0, batch_size=8,
    pretrain_epochs=1, max_epochs=1, random_state=0,
)
PRE_TINY = {k: v for k, v in TINY.items() if k != "max_epochs"}
FAST = settings(
    max_examples=30, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def assert_clean(exc: BaseException) -> None:
    """A ValueError/TypeError with a message, raised before torch or skorch ran."""
    assert isinstance(exc, ValueError | TypeError), repr(exc)
    assert str(exc).strip()
    frames = traceback.extract_tb(exc.__traceback__)
    deep = [f"{f.filename}:{f.lineno}" for f in frames
            if "/torch/" in f.filename or "/skorch/" in f.filename]
    assert not deep, f"{exc!r} raised from {deep[-1]}"


def clean_or_result(fn):
    """``fn()``, or None when it fails cleanly; any other failure propagates."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = fn()
    except (ValueError, TypeError) as exc:
        assert_clean(exc)
        event(f"clean {type(exc).__name__}")
        return None
    event("works")
    return result


def assert_finite_outputs(clf, X) -> None:
    proba = clf.predict_proba(X)
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)
    assert np.isin(clf.predict(X), clf.classes_).all()
    assert np.isfinite(clf.transform(X)).all()


@pytest.fixture(scope="module")
def fitted():
    X, y = make_panel(n=12, c=2, t=12)
    return SPTClassifier(**TINY).fit(X, y)


# --- property-based ---------------------------------------------------------------------------
FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)
MODERATE = st.floats(-10.0, 10.0, width=16)  # exact in every float width: inputs that fit
DTYPES = st.sampled_from(
    [np.float64, np.float32, np.float16, np.int64, np.int8, np.uint8, np.bool_,
     np.complex128, "U4", object]
)


def elements_for(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return st.one_of(st.floats(width=8 * dtype.itemsize), MODERATE)
    if dtype.kind == "U":
        text = st.text(st.characters(exclude_characters="\x00"), max_size=4)
        return st.one_of(text, st.floats(-9, 9).map(lambda v: f"{v:.1f}"))
    if dtype.kind == "O":
        return st.one_of(st.none(), st.integers(-5, 5), FLOATS, st.text(max_size=2))
    return None


@st.composite
def anything(draw):
    dtype = draw(DTYPES)
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=6))
    return draw(hnp.arrays(dtype, shape, elements=elements_for(dtype)))


@st.composite
def plausible(draw, c=None, t=None):
    """Panels that could be right: numeric, 2D or 3D, with NaN and extremes now and then."""
    dtype = draw(st.sampled_from([np.float64, np.float32, np.int64, np.bool_]))
    n = draw(st.integers(1, 6))
    if c is None:
        c, t = draw(st.integers(1, 3)), draw(st.integers(1, 7))
        shape = draw(st.sampled_from([(n, t), (n, c, t)]))
    else:
        shape = (n, c, t)
    elements = None
    if np.dtype(dtype).kind == "f":
        width = 8 * np.dtype(dtype).itemsize
        rare = st.one_of(st.just(np.nan), st.floats(width=width))
        elements = st.one_of(MODERATE, MODERATE, MODERATE, rare)
    return draw(hnp.arrays(dtype, shape, elements=elements))


def arrays_of_any_kind():
    return st.one_of(plausible(), anything())


@FAST
@given(X=arrays_of_any_kind(), labels=st.lists(st.integers(0, 2), min_size=0, max_size=3))
def test_fit_on_any_array_fails_cleanly_or_works(X, labels):
    n = X.shape[0] if X.ndim else 1
    y = (labels * (n // max(len(labels), 1) + 1))[:n] if labels else [i % 2 for i in range(n)]
    clf = clean_or_result(lambda: SPTClassifier(**TINY).fit(X, y))
    if clf is not None:
        assert_finite_outputs(clf, X)


@FAST
@given(X=st.one_of(plausible(c=2, t=12), arrays_of_any_kind()))
def test_predict_on_any_array_fails_cleanly_or_works(fitted, X):
    proba = clean_or_result(lambda: fitted.predict_proba(X))
    if proba is not None:
        assert proba.shape == (X.shape[0], 2)
        assert np.isfinite(proba).all()


@FAST
@given(X=arrays_of_any_kind())
def test_pretrainer_on_any_array_fails_cleanly_or_works(X):
    pre = clean_or_result(lambda: SPTPretrainer(**PRE_TINY).fit(X))
    if pre is not None:
        assert np.isfinite(pre.transform(X)).all()


@st.composite
def ragged_panels(draw):
    n = draw(st.integers(0, 6))
    channels = draw(st.sampled_from([None, 1, 2, "mixed"]))
    series = []
    for i in range(n):
        c = (1 + i % 2) if channels == "mixed" else channels
        length = draw(st.integers(1, 9) | st.just(0))
        shape = (length,) if c is None else (c, length)
        values = draw(hnp.arrays(np.float64, shape, elements=MODERATE))
        if values.size and draw(st.booleans()):  # one special value: NaN, inf or huge
            values.flat[draw(st.integers(0, values.size - 1))] = draw(FLOATS)
        series.append(values)
    return series


@FAST
@given(X=ragged_panels())
def test_ragged_lists_fail_cleanly_or_work(X):
    y = [i % 2 for i in range(len(X))]
    clf = clean_or_result(lambda: SPTClassifier(**TINY).fit(X, y))
    if clf is not None:
        assert_finite_outputs(clf, X)


LABEL_VALUES = st.one_of(
    st.integers(-3, 3), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=3),
    st.booleans(), st.none(),
)


def labels_for(n):
    one_type = st.one_of(
        st.lists(st.integers(-3, 3), min_size=n, max_size=n),
        st.lists(st.text(max_size=3), min_size=n, max_size=n),
        st.lists(st.booleans(), min_size=n, max_size=n),
        st.lists(st.sampled_from([0.0, 1.5, -2.0]), min_size=n, max_size=n),
    )
    return st.one_of(one_type, st.lists(LABEL_VALUES, min_size=0, max_size=n + 2))


@FAST
@given(labels=labels_for(12), as_array=st.sampled_from([None, object, "column", "auto"]))
def test_any_labels_fail_cleanly_or_work(labels, as_array):
    X, _ = make_panel(n=12, c=1, t=8)
    y = labels
    if as_array == "column":
        y = np.asarray(labels, dtype=object).reshape(-1, 1)
    elif as_array is object:
        y = np.asarray(labels, dtype=object)
    elif as_array == "auto":
        y = clean_or_result(lambda: np.asarray(labels))
        if y is None:
            return
    clf = clean_or_result(lambda: SPTClassifier(**TINY).fit(X, y))
    if clf is not None:
        assert len(clf.classes_) >= 2
        assert_finite_outputs(clf, X)


@FAST
@given(n=st.integers(2, 8), m=st.integers(0, 10))
def test_mismatched_lengths_are_value_errors(n, m):
    X, _ = make_panel(n=n, c=1, t=8)
    y = np.arange(m) % 2
    if m == n:
        return
    with pytest.raises(ValueError, match="inconsistent numbers of instances|0 sample") as info:
        SPTClassifier(**TINY).fit(X, y)
    assert_clean(info.value)


# --- named cases: the message says what is wrong ------------------------------------------
X12, Y12 = make_panel(n=12, c=2, t=12)
BAD_FIT = {
    "1D X": (lambda: (X12[0, 0], [0]), ValueError, "got 1D array"),
    "4D X": (lambda: (X12[..., None], Y12), ValueError, "2D or 3D"),
    "no instances": (lambda: (X12[:0], Y12[:0]), ValueError, "0 sample"),
    "no channels": (lambda: (X12[:, :0], Y12), ValueError, "empty"),
    "no timepoints": (lambda: (X12[:, :, :0], Y12), ValueError, "empty"),
    "empty list": (lambda: ([], []), ValueError, "0 sample"),
    "complex": (lambda: (X12 + 1j, Y12), ValueError, "Complex"),
    "text": (lambda: (np.full((12, 8), "a", dtype=object), Y12), ValueError, "convert string"),
    "infinity": (lambda: (np.where(X12 > 1, np.inf, X12), Y12), ValueError, "infinity"),
    "beyond float32": (lambda: (X12.astype(np.float64) * 1e300, Y12), ValueError,
                       "float32 range"),
    "all-NaN series": (lambda: (np.where(np.arange(12)[:, None, None] == 2, np.nan, X12), Y12),
                       ValueError, "no observed value"),
    "string X": (lambda: ("data.csv", Y12), TypeError, "string"),
    "None X": (lambda: (None, Y12), ValueError, "None"),
    "ragged channels": (lambda: ([np.ones((2, 5)), np.ones((3, 6))], [0, 1]), ValueError,
                        "same number of channels"),
    "None y": (lambda: (X12, None), ValueError, "requires y"),
    "short y": (lambda: (X12, Y12[:5]), ValueError, "inconsistent"),
    "2D y": (lambda: (X12, np.stack([Y12, Y12], 1)), ValueError, "1d array"),
    "NaN in y": (lambda: (X12, np.where(Y12 == 0, np.nan, 1.0)), ValueError, "NaN"),
    "continuous y": (lambda: (X12, np.linspace(0, 1, 12)), ValueError, "continuous"),
    "mixed-type y": (lambda: (X12, np.array([1, "a"] * 6, dtype=object)), ValueError,
                     "mixes labels of types"),
    "one class": (lambda: (X12, np.zeros(12)), ValueError, "at least 2 classes"),
}


@pytest.mark.parametrize("case", list(BAD_FIT))
def test_bad_fit_input_has_a_clear_message(case):
    make, kind, message = BAD_FIT[case]
    X, y = make()
    with pytest.raises(kind, match=message) as info:
        SPTClassifier(**TINY).fit(X, y)
    assert_clean(info.value)


BAD_PARAMS = {
    "depth": -1, "lr": "fast", "optimizer__weight_decay": -1.0, "architecture__dropout": 1.5,
        "max_epochs": 2.5,
    "pretrain_epochs": -1, "schedule__patience": 0, "criterion__label_smoothing": 2.0,
        "masking__mean_span": 0,
    "batch_size": 0, "masking__ratio": 1.0, "masking": "nope", "architecture__positional": "nope",
    "normalize": "nope", "tokenizer__patch_size": 0, "validation_fraction": 1.0, "device": "gpu9",
}


@pytest.mark.parametrize("name", list(BAD_PARAMS))
def test_bad_parameters_are_caught_before_training(name):
    with pytest.raises(ValueError, match=name) as info:
        SPTClassifier(**{**TINY, name: BAD_PARAMS[name]}).fit(X12, Y12)
    assert_clean(info.value)


BAD_LATER = {
    "fewer channels": (lambda: X12[:, :1], "channels"),
    "other length": (lambda: X12[:, :, :10], "length 10"),
    "infinity": (lambda: np.full((2, 2, 12), np.inf), "infinity"),
    "all NaN": (lambda: np.full((2, 2, 12), np.nan), "no observed value"),
    "no instances": (lambda: X12[:0], "0 sample"),
}


@pytest.mark.parametrize("case", list(BAD_LATER))
@pytest.mark.parametrize("method", ["predict", "predict_proba", "transform"])
def test_bad_input_after_fit_has_a_clear_message(fitted, case, method):
    make, message = BAD_LATER[case]
    with pytest.raises(ValueError, match=message) as info:
        getattr(fitted, method)(make())
    assert_clean(info.value)


def test_bad_unlabeled_input_has_a_clear_message():
    with pytest.raises(ValueError, match="X_unlabeled has 1 channel, but") as info:
        SPTClassifier(**TINY).fit(X12, Y12, X_unlabeled=X12[:, :1])
    assert_clean(info.value)
    with pytest.raises(ValueError, match="X_unlabeled contains infinity"):
        SPTClassifier(**TINY).fit(X12, Y12, X_unlabeled=np.full((2, 2, 12), np.inf))


# --- numerics -------------------------------------------------------------------------------
def test_non_finite_loss_stops_fine_tuning_with_advice():
    clf = SPTClassifier(**{**TINY, "pretrain_epochs": 0, "max_epochs": 5, "lr": 1e30})
    with pytest.raises(FloatingPointError, match="lower learning rate.*normalize"):
        clf.fit(X12, Y12)


def test_non_finite_loss_stops_pretraining_with_advice():
    pre = SPTPretrainer(**{**PRE_TINY, "pretrain_epochs": 5, "lr": 1e30})
    with pytest.raises(FloatingPointError, match="lower learning rate") as info:
        pre.fit(X12)
    assert "epoch" in str(info.value)


class GradNorms(Callback):
    """Total gradient norm as the optimizer sees it (after the clipping callback)."""

    def initialize(self):
        self.norms_ = []
        return self

    def on_grad_computed(self, net, named_parameters, **kwargs):
        grads = [p.grad for _, p in named_parameters if p.grad is not None]
        self.norms_.append(float(torch.linalg.vector_norm(torch.stack(
            [torch.linalg.vector_norm(g) for g in grads]))))


def test_gradient_clipping_is_on_by_default():
    probe = GradNorms()
    # Reconstructing unnormalised, large values gives gradient norms far above 1.
    pre = SPTPretrainer(**{**PRE_TINY, "pretrain_epochs": 2, "normalize": None},
                        callbacks=[probe]).fit(X12 * 1e4)
    clip = dict(pre.net_.callbacks_)["grad_clip"]
    assert isinstance(clip, GradientNormClipping) and clip.gradient_clip_value == 1.0
    assert max(probe.norms_) <= 1.0 + 1e-4
    assert max(probe.norms_) > 0.99  # clipping was active, so the bound above means something
    clf = SPTClassifier(**TINY).fit(X12, Y12)
    clip = dict(clf.net_.callbacks_)["grad_clip"]
    assert isinstance(clip, GradientNormClipping) and clip.gradient_clip_value == 1.0


@pytest.mark.parametrize("normalize", ["global", "instance", None])
def test_constant_and_near_constant_channels_stay_finite(normalize):
    rng = np.random.default_rng(0)
    X = np.empty((12, 3, 16))
    X[:, 0] = 7.0  # constant
    X[:, 1] = 1e6 + 1e-3 * rng.normal(size=(12, 16))  # near-constant, large offset
    X[:, 2] = rng.normal(size=(12, 16))
    clf = SPTClassifier(**{**TINY, "max_epochs": 2, "normalize": normalize}).fit(X, Y12)
    assert np.isfinite(clf.history_[:, "train_loss"]).all()
    assert np.isfinite(clf.pretrain_history_[:, "train_loss"]).all()
    assert_finite_outputs(clf, X)


@FAST
@given(
    value=st.floats(-1e30, 1e30, allow_nan=False),
    spread=st.sampled_from([0.0, 1e-12, 1e-6, 1.0]),
    normalize=st.sampled_from(["global", "instance"]),
)
def test_any_constant_level_stays_finite(value, spread, normalize):
    X = np.full((8, 1, 8), value) + spread * np.random.default_rng(0).normal(size=(8, 1, 8))
    clf = SPTClassifier(**{**TINY, "normalize": normalize}).fit(X, np.arange(8) % 2)
    assert_finite_outputs(clf, X)


def test_large_values_do_not_overflow_the_statistics():
    """Many values near 1e36 sum past float32's range; statistics must still be right."""
    X = np.full((60, 1, 20), 1e36, dtype=np.float32)
    X[::2] *= 2
    pre = SPTPretrainer(**PRE_TINY).fit(X)
    np.testing.assert_allclose(pre.normalizer_.mean_, [1.5e36], rtol=1e-5)
    np.testing.assert_allclose(pre.normalizer_.std_, [0.5e36], rtol=1e-5)
    assert np.isfinite(pre.transform(X)).all()


# --- batched prediction ---------------------------------------------------------------------
def test_predict_on_more_series_than_a_batch_matches_chunks():
    X, y = make_panel(n=40, c=2, t=12)
    clf = SPTClassifier(**TINY).fit(X, y)
    big, _ = make_panel(n=601, c=2, t=12, seed=5)  # > skorch's batch and _embed's 256
    proba = clf.predict_proba(big)
    chunks = [clf.predict_proba(big[i : i + 7]) for i in range(0, len(big), 7)]
    np.testing.assert_allclose(proba, np.concatenate(chunks), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(
        clf.predict(big), np.concatenate([clf.predict(big[i : i + 7]) for i in range(0, 601, 7)])
    )
    emb = clf.transform(big)
    np.testing.assert_allclose(
        emb, np.concatenate([clf.transform(big[i : i + 7]) for i in range(0, 601, 7)]),
        rtol=1e-5, atol=1e-6,
    )
    assert proba.shape == (601, 2) and emb.shape == (601, 8)
