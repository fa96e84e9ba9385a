"""Reading a saved estimator's fitted state back: every value of ``metadata.json`` checked
against its bounds (:mod:`.format`) and turned into what the estimator holds after ``fit``.
"""

from __future__ import annotations

import math

import numpy as np

from .._bounded import depth as _json_depth
from .._limits import MAX_SERIES_VALUES, check_architecture_limits, check_input_limits
from .._params import ARCHITECTURE, check_encoder_value
from ..augment import AUGMENTS, MIXUP_KINDS
from ..data import InputSpec, Normalizer
from .format import (
    CLASS_KINDS,
    EPOCH_STATE,
    MAX_CLASSES_BYTES,
    MAX_HISTORY_DEPTH,
    SHAPE_STATE,
)

__all__ = ["read_augment", "read_classes", "read_history", "read_input_spec", "read_mixup",
           "read_targets"]


def read_classes(state: dict) -> np.ndarray:
    name = state["dtype"]
    if not isinstance(name, str) or len(name) > 16:
        raise ValueError(f"classes_ dtype must be a short dtype string, got {name!r:.40}")
    dtype = np.dtype(name)
    if dtype.kind not in CLASS_KINDS:
        raise ValueError(f"unsupported classes_ dtype {dtype}")
    values = state["values"]
    if not isinstance(values, list) or not all(
        isinstance(v, bool | int | float | str) for v in values
    ):
        raise ValueError("classes_ must be a list of labels")
    # Sized before it is made: a dtype of "<U500000000" is 2 GB a label.
    if len(values) * dtype.itemsize > MAX_CLASSES_BYTES:
        raise ValueError(
            f"classes_ of {len(values)} labels of dtype {dtype} take "
            f"{len(values) * dtype.itemsize} bytes, more than the {MAX_CLASSES_BYTES} allowed"
        )
    if dtype.kind == "U" and any(len(str(v)) > dtype.itemsize // 4 for v in values):
        raise ValueError(f"classes_ dtype {dtype} is too narrow for its labels")
    classes = np.asarray(values, dtype=dtype)
    if classes.ndim != 1 or len(classes) < 2:
        raise ValueError(f"classes_ must list at least 2 labels, got {values!r}")
    if len(np.unique(classes)) != len(classes) or not np.array_equal(
        np.unique(classes), classes
    ):
        raise ValueError(
            "classes_ must be distinct and sorted, as fit stores them; got "
            f"{values[:10]!r}"
        )
    return classes


def read_targets(state: dict) -> dict:
    """A regressor's ``target_mean`` and ``target_scale`` (finite; scales positive)."""
    mean, scale = state["mean"], state["scale"]
    if not (isinstance(mean, list) and isinstance(scale, list) and mean
            and len(mean) == len(scale)):
        raise ValueError("the target statistics must list one mean and one scale per output")
    numbers = [v for v in mean + scale if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(numbers) != 2 * len(mean) or not np.isfinite(numbers).all():
        raise ValueError(f"the target statistics must be finite numbers: {state!r}")
    if not all(v > 0 for v in scale):
        raise ValueError(f"the target scales must be positive, got {scale!r}")
    return {"target_mean": np.asarray(mean, dtype=np.float64),
            "target_scale": np.asarray(scale, dtype=np.float64)}


def _numbers(values, n: int, name: str) -> np.ndarray:
    if not isinstance(values, list) or len(values) != n or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in values
    ):
        raise ValueError(f"the normaliser's {name} must list {n} numbers (one per channel)")
    array = np.asarray(values, dtype=np.float32)
    if not np.isfinite(array).all():
        raise ValueError(f"the normaliser's {name} is not finite: {values}")
    return array


def _normalizer(state: dict, n_channels: int) -> Normalizer:
    eps = state["eps"]
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not 0 < eps < math.inf:
        raise ValueError(f"the normaliser's eps must be a positive number, got {eps!r}")
    normalizer = Normalizer(state["mode"], eps=float(eps), floor=state["floor"])
    if normalizer.mode == "global":
        normalizer.mean_ = _numbers(state["mean"], n_channels, "mean")
        normalizer.std_ = _numbers(state["std"], n_channels, "std")
        if not (normalizer.std_ > 0).all():
            raise ValueError(
                f"the normaliser's std must be positive, got {state['std']}"
            )
    return normalizer


def read_mixup(fitted: dict) -> tuple[float, str]:
    """The fitted ``mixup_`` (a non-negative number) and ``mixup_kind_``."""
    value, kind = fitted["mixup_"], fitted["mixup_kind_"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
        raise ValueError(f"mixup_ must be a non-negative number, got {value!r}")
    if kind not in MIXUP_KINDS:
        raise ValueError(f"mixup_kind_ must be one of {MIXUP_KINDS}, got {kind!r}")
    return float(value), kind


def read_augment(fitted: dict) -> tuple[bool | str, dict | None]:
    """The fitted ``augment_`` and ``augment_evidence_`` (None, or a finite
    ``alignment_gain``)."""
    value, evidence = fitted["augment_"], fitted.get("augment_evidence_")
    if not (isinstance(value, bool) or value in AUGMENTS):
        raise ValueError(f"augment_ must be a bool or one of {AUGMENTS}, got {value!r}")
    gain = evidence.get("alignment_gain") if isinstance(evidence, dict) else None
    if evidence is not None and not (
            set(evidence) == {"alignment_gain"} and isinstance(gain, int | float)
            and not isinstance(gain, bool) and math.isfinite(gain)):
        raise ValueError(f"augment_evidence_ is malformed: {evidence!r}")
    return value, evidence


def read_input_spec(est, fitted: dict) -> tuple[InputSpec, dict]:
    """The input spec and ``encoder_kwargs`` of ``fitted``, checked; epochs set on ``est``."""
    shape = {}
    for name in SHAPE_STATE:
        if name in fitted:
            value = fitted[name]
            if not isinstance(value, bool | int):
                raise ValueError(f"{name} must be an int or bool, got {value!r}")
            if name != "equal_length_" and (isinstance(value, bool) or value < 1):
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
            shape[name] = value
    for name in EPOCH_STATE:
        if name in fitted:
            value = fitted[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
            setattr(est, name, value)
    if "n_features_in_" in shape:
        est.n_features_in_ = shape.pop("n_features_in_")
    resample_length = fitted.get("resample_length_")  # absent: lengths kept
    if resample_length is not None and (isinstance(resample_length, bool) or not isinstance(
            resample_length, int) or not 2 <= resample_length <= MAX_SERIES_VALUES):
        raise ValueError(f"resample_length_ must be None or an integer >= 2, got "
                         f"{resample_length!r}")
    spec = InputSpec(
        **{f: shape[f + "_"] for f in InputSpec.SHAPE},
        normalizer=_normalizer(fitted["normalizer"], shape["n_channels_"]),
        resample_length=resample_length,
    )
    if spec.max_tokens != math.ceil(spec.n_timepoints / spec.patch_size):
        raise ValueError("max_tokens_ disagrees with n_timepoints_ and patch_size_")
    check_input_limits(spec.n_channels, spec.n_timepoints, spec.patch_size, spec.max_tokens)
    n_features = est.__dict__.get("n_features_in_", spec.n_timepoints)
    if (resample_length is None and n_features != spec.n_timepoints) or (
            "n_features_in_" in est.__dict__ and spec.n_channels != 1):
        raise ValueError("n_features_in_ (of a model fitted on 2D input) must equal "
                         "n_timepoints_, with one channel")
    encoder_kwargs = fitted["encoder_kwargs"]
    if not isinstance(encoder_kwargs, dict):
        raise ValueError("encoder_kwargs must be a mapping")
    _check_architecture(encoder_kwargs)
    for key, value in spec.encoder_kwargs().items():
        if encoder_kwargs[key] != value:
            raise ValueError(f"encoder_kwargs_[{key!r}] disagrees with {key}_")
    return spec, encoder_kwargs


def _check_architecture(encoder_kwargs: dict) -> None:
    """The network fields of ``encoder_kwargs`` as ``fit`` would accept them (each value's
    constraint, ``n_heads`` dividing ``d_model``) and within
    :data:`~sktspt._limits.MAX_ARCHITECTURE`."""
    for name in ARCHITECTURE:
        if name not in encoder_kwargs:
            raise ValueError(f"encoder_kwargs lacks {name!r}")
        try:
            check_encoder_value(name, encoder_kwargs[name])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"encoder_kwargs_[{name!r}]: {exc}") from None
    check_architecture_limits(encoder_kwargs,
                              {f: f"encoder_kwargs_[{f!r}]" for f in encoder_kwargs})
    if encoder_kwargs["d_model"] % encoder_kwargs["n_heads"]:
        raise ValueError(
            f"encoder_kwargs_: d_model={encoder_kwargs['d_model']} is not divisible by "
            f"n_heads={encoder_kwargs['n_heads']}"
        )


def read_history(value, name: str) -> list:
    """A training history: a list of epochs (dicts with string keys), nested at most
    :data:`MAX_HISTORY_DEPTH` deep (its length is bounded by the metadata's value count)."""
    if not isinstance(value, list) or not all(
            isinstance(e, dict) and all(isinstance(k, str) for k in e) for e in value):
        raise ValueError(f"{name} must be a list of epochs (mappings)")
    if _json_depth(value) > MAX_HISTORY_DEPTH:
        raise ValueError(f"{name} is nested more than {MAX_HISTORY_DEPTH} deep")
    return value
