"""Validation and conversion of time-series inputs (normalisation: :mod:`sktspt.normalization`).

Everything the estimators accept is turned into one float32 array of shape
``(n_instances, n_channels, n_timepoints)`` in which NaN marks a value that is not
observed: a gap inside a series, or the padding after a series that is shorter than
the longest one. The network receives that NaN pattern as a mask, so missing values
and unequal lengths need no special path.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.utils.validation import check_array

from ._limits import MAX_PATCH_SIZE, check_input_limits, check_series_values
from .normalization import Normalizer, resolve_normalization
from .resampling import resample

__all__ = ["check_panel", "check_labels", "Normalizer", "PanelInfo", "InputSpec", "TARGET_TOKENS"]

#: Tokens per series that ``patch_size="auto"`` aims at.
TARGET_TOKENS = 32
#: The most tokens ``patch_size="auto"`` gives the longest series of an unequal-length
#: panel (attention's cost grows with their square).
MAX_AUTO_TOKENS = 256


@dataclass(frozen=True)
class PanelInfo:
    """What was learned about a panel while validating it."""

    n_channels: int
    n_timepoints: int
    equal_length: bool
    has_missing: bool
    ndim: int
    #: The median series length (up to each series' last observed value).
    median_length: int


@dataclass
class InputSpec:
    """What ``fit`` learned about its input: everything prediction needs to prepare X (the
    estimators show the fields as ``n_channels_``, ``patch_size_``, ...)."""

    n_channels: int
    n_timepoints: int
    equal_length: bool
    patch_size: int
    max_tokens: int
    normalizer: Normalizer
    #: Steps every series is resampled to before normalisation (``tokenizer__length``),
    #: or None to keep each series' length.
    resample_length: int | None = None

    #: The shape fields, in the order saved files and fingerprints list them.
    SHAPE = ("n_channels", "n_timepoints", "equal_length", "patch_size", "max_tokens")

    @classmethod
    def learn(cls, X: np.ndarray, info: PanelInfo, normalize, *, patch_size="auto",
              length: int | None = None) -> InputSpec:
        """The spec of validated training panel ``X``; the keyword-only arguments are the
        estimators' ``tokenizer__`` settings.

        Parameters
        ----------
        patch_size : int or "auto"
            Time steps per token (all channels of a patch form one token). ``"auto"``
            keeps about 32 tokens per series, so long series stay cheap: 32 for the
            median series of an unequal-length panel (at most 256 for its longest).
        length : int or None
            Resample every series (its observed part, in fit and after) to this many steps
            before tokenizing, so series of any length make the same tokens: what an encoder
            pretrained on a corpus of varied lengths needs. None keeps each series' length.
        """
        if length is not None:
            _check_resamplable(info, length)
            X = resample(X, length)
            info = PanelInfo(info.n_channels, length, True, False, info.ndim, length)
        typical = None if info.equal_length else info.median_length
        patch = resolve_patch_size(patch_size, info.n_timepoints, typical)
        check_input_limits(info.n_channels, info.n_timepoints, patch,
                           math.ceil(info.n_timepoints / patch))
        return cls(
            n_channels=info.n_channels,
            n_timepoints=info.n_timepoints,
            equal_length=info.equal_length,
            patch_size=patch,
            max_tokens=math.ceil(info.n_timepoints / patch),
            normalizer=Normalizer(resolve_normalization(normalize, X)).fit(X),
            resample_length=length,
        )

    def encoder_kwargs(self) -> dict:
        """The input facts that size the encoder."""
        return dict(
            n_channels=self.n_channels, patch_size=self.patch_size, max_tokens=self.max_tokens
        )

    def network_input(self, X, name: str = "The estimator", learned_positions: bool = False
                      ) -> np.ndarray:
        """Validate ``X`` seen after fit (``name`` heads the messages; with
        ``learned_positions`` a series longer than fit's is refused), normalise and pad it."""
        X, info = check_panel(X)
        if info.n_channels != self.n_channels:
            raise ValueError(f"X has {channel_count(info.n_channels)}, but {name} was fitted on "
                             f"{channel_count(self.n_channels)}.")
        if self.resample_length is not None:  # any length: every series is resampled
            _check_resamplable(info, self.resample_length)
            return self.prepare(X)
        if self.equal_length and info.n_timepoints != self.n_timepoints:
            if info.ndim == 2:
                raise ValueError(f"X has {info.n_timepoints} features, but {name} is expecting "
                                 f"{self.n_timepoints} features as input.")
            raise ValueError(
                f"X has series of length {info.n_timepoints}, but {name} was fitted on "
                f"series of length {self.n_timepoints}. Fit on series of unequal length "
                "(or NaN-padded) for a model that accepts other lengths."
            )
        # Padding after the last observed value changes nothing the network sees (padding
        # tokens are never attended to or pooled), so drop it rather than let it count
        # against the learned positions.
        observed_steps = ~np.isnan(X).all(axis=(0, 1))
        X = X[:, :, : len(observed_steps) - int(np.argmax(observed_steps[::-1]))]
        n_tokens = math.ceil(X.shape[2] / self.patch_size)
        if learned_positions and n_tokens > self.max_tokens:
            raise ValueError(f"X has series of length {X.shape[2]} ({n_tokens} tokens) but learned "
                             f"positions cover at most {self.max_tokens} tokens.")
        return self.prepare(X)

    def prepare(self, X: np.ndarray) -> np.ndarray:
        """Normalise validated ``X`` and NaN-pad its time axis to a multiple of the patch
        (resampled first, with ``resample_length``)."""
        if self.resample_length is not None:
            X = resample(X, self.resample_length)
        X = self.normalizer.transform(X).astype(np.float32, copy=False)
        pad = (-X.shape[2]) % self.patch_size
        if pad:
            X = np.pad(X, ((0, 0), (0, 0), (0, pad)), constant_values=np.nan)
        return X


def resolve_patch_size(patch_size, n_timepoints: int, typical_length: int | None = None
                       ) -> int:
    """``patch_size`` for series of up to ``n_timepoints`` steps: ``"auto"`` aims at
    :data:`TARGET_TOKENS` tokens for a series of ``typical_length`` (an unequal-length
    panel's median: sized by its longest, PLAID's median series would be 7 tokens), and at
    most :data:`MAX_AUTO_TOKENS` for the longest, of at most ``MAX_PATCH_SIZE`` steps."""
    if patch_size == "auto":
        typical = n_timepoints if typical_length is None else min(typical_length, n_timepoints)
        return min(MAX_PATCH_SIZE, max(1, math.ceil(typical / TARGET_TOKENS),
                                       math.ceil(n_timepoints / MAX_AUTO_TOKENS)))
    if patch_size > n_timepoints:
        raise ValueError(f"Series of length {n_timepoints} are shorter than one patch "
                         f"(patch_size={patch_size}); lower patch_size.")
    return int(patch_size)


def _check_resamplable(info: PanelInfo, length: int) -> None:
    """A ValueError where ``tokenizer__length`` would make too many values, or constants
    (series of one step)."""
    check_series_values(info.n_channels, length, "n_channels x tokenizer__length")
    if info.n_timepoints < 2:
        raise ValueError(
            f"X's series have one step: tokenizer__length={length} resamples each series' "
            "observed part, and one step resamples to a constant, the same for every "
            "series. Give series of at least 2 steps, or a model without tokenizer__length."
        )


def _is_pandas(X) -> bool:
    mod = type(X).__module__
    return mod.startswith("pandas") or mod.startswith("polars")


def _is_table(X) -> bool:
    """A flat numeric frame (rows = series, columns = time points), not an sktime panel."""
    import pandas as pd

    if isinstance(X, pd.Series):
        return True
    if not isinstance(X, pd.DataFrame) or isinstance(X.index, pd.MultiIndex):
        return False
    return all(pd.api.types.is_numeric_dtype(d) for d in X.dtypes)


#: Column names that mark the instance or time column of a long-format frame.
_LONG_FORMAT_NAMES = {
    "id", "ids", "instance", "instances", "instance_id", "series", "series_id", "case",
    "case_id", "sample", "sample_id", "unit", "t", "time", "times", "timepoint",
    "timepoints", "time_index", "timestamp", "step", "index",
}


def _long_format_columns(X) -> list:
    """Columns of a flat numeric frame that look like long format's instance/time index: by
    name (``id``, ``time``, ...), or a first column of integers in contiguous runs and a
    second that increases within each run, then at least one value column."""
    import pandas as pd

    if not isinstance(X, pd.DataFrame):
        return []
    named = [c for c in X.columns if isinstance(c, str) and c.strip().lower() in _LONG_FORMAT_NAMES]
    if named:
        return named
    if X.shape[1] < 3 or len(X) < 2:
        return []
    first = X.iloc[:, 0].to_numpy(dtype=np.float64)
    second = X.iloc[:, 1].to_numpy(dtype=np.float64)
    pair = np.concatenate([first, second])
    if not (np.isfinite(pair).all() and (pair == np.round(pair)).all()):
        return []
    same_id = np.diff(first) == 0
    runs = int(np.count_nonzero(~same_id)) + 1
    if same_id.any() and runs == len(np.unique(first)) and (np.diff(second)[same_id] > 0).all():
        return [c.item() if isinstance(c, np.generic) else c for c in X.columns[:2]]
    return []


def _from_sktime(X) -> list[np.ndarray]:
    """Convert a pandas panel held in any sktime mtype with sktime's own converters."""
    from sktime.datatypes import check_is_scitype, convert_to

    valid, msg, _ = check_is_scitype(X, scitype="Panel", return_metadata=[])
    if not valid:
        raise TypeError("X is a pandas object but not a valid sktime Panel "
                        f"(nested_univ, pd-multiindex, ...): {msg}")
    frames = convert_to(X, to_type="df-list")
    return [np.asarray(f.to_numpy(dtype=np.float64)).T for f in frames]


def _stack_ragged(series: list, name: str) -> np.ndarray:
    """Pad a list of ``(n_channels, length_i)`` (or 1D) series with NaN to one array."""
    arrays = []
    for i, s in enumerate(series):
        a = check_array(s, ensure_2d=False, allow_nd=False, dtype=np.float64,
                        ensure_all_finite=False, ensure_min_samples=1, input_name=f"{name}[{i}]")
        arrays.append(a[None, :] if a.ndim == 1 else a)
    if not arrays:
        raise ValueError(f"{name} is empty: got a list of 0 series.")
    channels = {a.shape[0] for a in arrays}
    if len(channels) > 1:
        raise ValueError(f"All series in {name} must have the same number of channels; "
                         f"got {sorted(channels)}.")
    length = max(a.shape[1] for a in arrays)
    out = np.full((len(arrays), arrays[0].shape[0], length), np.nan)
    for i, a in enumerate(arrays):
        out[i, :, : a.shape[1]] = a
    return out


def check_panel(X, name: str = "X") -> tuple[np.ndarray, PanelInfo]:
    """Validate a panel of time series and return it as float32 ``(n, c, t)``, with its info.

    Accepts a 3D array ``(n, c, t)``, a 2D array ``(n, t)``, a list of series of possibly
    different lengths, or a pandas panel in any sktime mtype. NaN means *not observed*.
    """
    if X is None:
        raise ValueError(f"{name} is None; expected an array of time series.")
    if isinstance(X, str | bytes):
        raise TypeError(f"{name} must be an array of time series, got a string.")
    if _is_pandas(X) and _is_table(X):
        long = _long_format_columns(X)
        if long:
            raise ValueError(
                f"{name} is a flat numeric DataFrame whose column(s) {long} look like the "
                "instance and time index of long format (one row per observation); read as "
                f"one series per row it would be {X.shape[0]} series of length {X.shape[1]}. "
                f"For long format, index it by instance and time: {name}.set_index([<id "
                "column>, <time column>]) (sktime's pd-multiindex). For one series per row, "
                f"pass {name}.to_numpy()."
            )
        X = X.to_numpy()
    # sktime's "df-list": one (time x channels) frame per series, not (channels x time).
    df_list = isinstance(X, list) and len(X) > 0 and all(
        _is_pandas(s) and type(s).__name__ == "DataFrame" for s in X
    )
    if df_list:
        arr = _stack_ragged([f.to_numpy(dtype=np.float64).T for f in X], name)
        ndim = 3
    elif _is_pandas(X):
        arr = _stack_ragged(_from_sktime(X), name)
        ndim = 3
    elif isinstance(X, list | tuple) and len(X) > 0 and all(
        hasattr(s, "__len__") and not isinstance(s, str | bytes) for s in X
    ) and len({np.shape(s) for s in X}) > 1:
        arr = _stack_ragged(list(X), name)
        ndim = 3
    else:
        if hasattr(X, "dtype") and np.issubdtype(np.asarray(X).dtype, np.complexfloating):
            raise ValueError(f"Complex data not supported in {name}.")
        arr = check_array(X, ensure_2d=False, allow_nd=True, dtype=np.float64,
                          ensure_all_finite=False, input_name=name)
        ndim = arr.ndim
        if arr.ndim == 1:
            raise ValueError(
                f"Expected 2D (n_instances, n_timepoints) or 3D (n_instances, n_channels, "
                f"n_timepoints) array for {name}, got 1D array of shape {arr.shape}. "
                "Reshape your data with X.reshape(1, -1) if it is one series."
            )
        if arr.ndim == 2:
            arr = arr[:, None, :]
        elif arr.ndim != 3:
            raise ValueError(
                f"Expected a 2D or 3D array for {name}, got {arr.ndim}D of shape {arr.shape}."
            )
    n, c, t = arr.shape
    if n == 0 or c == 0 or t == 0:
        raise ValueError(
            f"{name} is empty: shape {arr.shape} needs at least 1 instance, 1 channel and "
            "1 timepoint."
        )
    if np.isinf(arr).any():
        raise ValueError(f"{name} contains infinity; only NaN is accepted as a missing value.")
    # Values beyond float32's range would become infinity in the network's dtype.
    if arr.dtype.itemsize > 4 and (np.abs(arr) > np.finfo(np.float32).max).any():
        raise ValueError(f"{name} has values beyond the float32 range (|x| > 3.4e38); rescale it.")
    missing = np.isnan(arr)
    if missing.all(axis=(1, 2)).any():
        bad = np.flatnonzero(missing.all(axis=(1, 2)))[:5].tolist()
        raise ValueError(f"{name} has series with no observed value at all (instances {bad}); "
                         "remove them.")
    last_observed = t - np.argmax(~missing.all(axis=1)[:, ::-1], axis=1)
    info = PanelInfo(n_channels=c, n_timepoints=t, equal_length=bool((last_observed == t).all()),
                     has_missing=bool(missing.any()), ndim=ndim,
                     median_length=math.ceil(np.median(last_observed)))
    return np.ascontiguousarray(arr, dtype=np.float32), info


def warn_if_transposed(info: PanelInfo, name: str = "X") -> None:
    """Warn where a 3D panel looks like ``(n, timepoints, channels)``: few time points, and
    many more channels (GunPoint transposed is 150 channels of one step)."""
    c, t = info.n_channels, info.n_timepoints
    if info.ndim == 3 and t <= 16 and c >= 4 * t:
        warnings.warn(
            f"{name} has {c} channels of {t} time point(s) each. sktspt reads 3D arrays as "
            f"(n_instances, n_channels, n_timepoints); if yours is (n_instances, n_timepoints, "
            f"n_channels), pass {name}.transpose(0, 2, 1). If the layout is right, silence "
            "this with warnings.filterwarnings('ignore', message='.*channels of .* time "
            "point').",
            UserWarning,
            stacklevel=4,
        )


def channel_count(n: int) -> str:
    """``"1 channel"``, ``"3 channels"``: a channel count for a message."""
    return f"{n} channel{'' if n == 1 else 's'}"


def check_labels(y, n_instances: int) -> np.ndarray:
    """Validate classification targets: 1D, finite, same length as ``X``."""
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import column_or_1d

    if y is None:
        raise ValueError("This classifier requires y to be passed, but the target y is None.")
    values = np.asarray(y)
    if values.dtype.kind == "f":
        missing = np.flatnonzero(np.isnan(values.ravel())).tolist()
    elif values.dtype == object:
        missing = [i for i, v in enumerate(values.ravel())
                   if v is None or (isinstance(v, float) and v != v)]
    else:
        missing = []
    if missing:
        raise ValueError(
            f"y has no label (None or NaN) for {len(missing)} series, at position(s) "
            f"{missing[:10]}: class labels must not be NaN. Mark a series without a label "
            "with -1 (scikit-learn's semi-supervised convention; sktspt pretrains on it), or "
            "pass such series in X_unlabeled."
        )
    y = check_array(y, ensure_2d=False, dtype=None, input_name="y")
    y = column_or_1d(y, warn=True)
    if y.dtype == object:
        kinds = sorted({type(v).__name__ for v in y})
        try:
            np.unique(y)
        except TypeError:
            raise ValueError(
                f"y mixes labels of types that cannot be ordered ({', '.join(kinds)}); give "
                "every label the same type (e.g. all strings)."
            ) from None
    check_classification_targets(y)
    if y.shape[0] != n_instances:
        raise ValueError(f"X and y have inconsistent numbers of instances: X has {n_instances}, "
                         f"y has {y.shape[0]}.")
    return y


def check_finite_output(values: np.ndarray, what: str) -> np.ndarray:
    """``values`` (one row per series) if finite, else a ValueError naming the rows: a
    non-finite output must never become a label or feature silently."""
    bad = ~np.isfinite(values.reshape(len(values), -1)).all(axis=1)
    if bad.any():
        rows = np.flatnonzero(bad)
        raise ValueError(
            f"{what} is not finite for {len(rows)} of {len(values)} series (rows "
            f"{rows[:10].tolist()}{' ...' if len(rows) > 10 else ''}): the network "
            "overflowed on their values. With normalize=None raw values reach the network; "
            "use normalize='auto', 'global' or 'instance', or rescale X."
        )
    return values
