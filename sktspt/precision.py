"""Numeric precision of training and inference: autocast, TF32, float32 losses.

``device__precision`` picks the dtype the network's matmuls run in, through
:func:`torch.autocast`:

- ``"float32"``: no autocast and no TF32; the exact reference.
- ``"bfloat16"``: float32's exponent range, so no loss scaling; on CPUs and on CUDA GPUs
  that support it (Ampere and later).
- ``"float16"``: with a :class:`torch.amp.GradScaler` (small gradients underflow without
  loss scaling); CUDA only (most CPUs have no float16 arithmetic): ``fit`` raises there.
- ``"auto"``: bfloat16 on a CUDA GPU that supports it, float32 everywhere else.

On CUDA every setting but ``"float32"`` also allows TF32 for the remaining float32
matmuls, during the estimators' calls only. Losses (and SIGReg) are computed in float32,
weights and optimizer state stay float32, so a model trained in one precision is used in
any other; prediction falls back to float32 where the device cannot run the precision.
"""

from __future__ import annotations

import contextlib

import torch

__all__ = ["PRECISIONS", "check_precision", "autocast_dtype", "autocast", "to_float32",
           "matmul_precision"]

PRECISIONS = ("auto", "float32", "bfloat16", "float16")
_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}


def check_precision(precision, name: str = "precision") -> None:
    """Raise ``ValueError`` unless ``precision`` is one of :data:`PRECISIONS`."""
    if not isinstance(precision, str) or precision not in PRECISIONS:
        raise ValueError(f"{name} must be one of {PRECISIONS}, got {precision!r}.")


def _bf16_ok(device: torch.device) -> bool:
    if device.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    return device.type == "cpu"


def autocast_dtype(precision, device, training: bool = True) -> str:
    """The dtype (``"float32"``, ``"bfloat16"`` or ``"float16"``) to run ``precision`` in on
    ``device``: where the device cannot, a ``ValueError`` in training (``fit``), else
    float32."""
    check_precision(precision)
    device = torch.device("cpu" if device is None else device)
    if precision == "float32" or device.type not in ("cpu", "cuda"):
        return "float32"
    if precision == "auto":
        return "bfloat16" if device.type == "cuda" and _bf16_ok(device) else "float32"
    if precision == "float16" and device.type == "cpu":
        if training:
            raise ValueError(
                "precision='float16' needs a CUDA device: most CPUs have no float16 "
                "arithmetic (it would run slower than float32) and float16 training needs "
                "loss scaling. Use precision='bfloat16' (same range as float32, no scaling) "
                "or 'float32' on CPU, or 'auto' to take bfloat16 only on a GPU."
            )
        return "float32"
    if precision == "bfloat16" and not _bf16_ok(device):
        if training:
            raise ValueError(
                f"precision='bfloat16' is not supported on {device} "
                "(torch.cuda.is_bf16_supported() is False); use 'float16' or 'float32'."
            )
        return "float32"
    return precision


def autocast(device, dtype: str):
    """``torch.autocast`` for ``dtype`` on ``device``'s type; a no-op for float32."""
    if dtype == "float32" or device is None:
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=_DTYPES[dtype])


def to_float32(value):
    """``value`` (a tensor, or a tuple, list or dict of them) with half floats as float32."""
    if isinstance(value, torch.Tensor):
        return value.float() if value.dtype in (torch.bfloat16, torch.float16) else value
    if isinstance(value, tuple | list):
        return type(value)(to_float32(v) for v in value)
    if isinstance(value, dict):
        return {k: to_float32(v) for k, v in value.items()}
    return value


@contextlib.contextmanager
def matmul_precision(precision, device):
    """Allow TF32 for float32 matmuls on CUDA (unless ``precision="float32"``), then restore."""
    try:
        cuda = torch.device(device).type == "cuda" and precision in PRECISIONS
    except (RuntimeError, TypeError):
        cuda = False
    if not cuda or precision == "float32":
        yield
        return
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before
