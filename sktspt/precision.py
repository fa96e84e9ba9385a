"""Numeric precision of training and inference: autocast, TF32, float32 losses.

``precision`` (a parameter of both estimators) picks the dtype the network's matmuls run
in, through :func:`torch.autocast` with the device's type:

- ``"float32"``: no autocast and no TF32; the exact reference.
- ``"bfloat16"``: autocast to bfloat16. bfloat16 has float32's exponent range, so it needs
  no loss scaling; it runs on CPUs (slowly where they lack bf16 instructions) and on CUDA
  GPUs that support it (Ampere and later).
- ``"float16"``: autocast to float16 with a :class:`torch.amp.GradScaler` (float16's
  range is small: without loss scaling small gradients underflow to zero). CUDA only:
  most CPUs have no float16 arithmetic, so a CPU fit would be slower than float32 and no
  more useful than bfloat16, and ``fit`` raises ``ValueError`` there.
- ``"auto"``: bfloat16 on a CUDA GPU that supports it, float32 everywhere else.

On CUDA every setting but ``"float32"`` also lets the float32 matmuls that remain
(outside autocast) use TF32 tensor cores, for the duration of ``fit``, ``predict``,
``predict_proba`` and ``transform`` only (torch's global flags are restored after).

Whatever the setting, the network's outputs are cast to float32 before any loss, and
SIGReg, the LEAP exit loss and the reconstruction loss are computed in float32; the
weights and the optimizer state stay float32 (autocast casts copies per operation), so a
model trained in one precision is saved, loaded and used in any other.

Prediction on a device that cannot run the saved precision (a model trained in float16
on a GPU, loaded on a CPU) runs in float32 instead of failing: only ``fit`` insists.
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
    """The dtype (``"float32"``, ``"bfloat16"`` or ``"float16"``) to run ``precision`` in.

    Parameters
    ----------
    precision : {"auto", "float32", "bfloat16", "float16"}
    device : str or torch.device
        The device the network runs on.
    training : bool, default=True
        True in ``fit``: a precision the device cannot train in raises ``ValueError``.
        False for prediction: such a precision falls back to float32.
    """
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
    """Allow TF32 for float32 matmuls on CUDA (unless ``precision="float32"``), then restore.

    A no-op off CUDA, and for ``"float32"``, which stays the exact reference.
    """
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
