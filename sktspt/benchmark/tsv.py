"""One split of the UCR 2018 archive's ``.tsv`` layout, read without guessing.

A file saved by an editor may start with a UTF-8 byte-order mark (dropped), end its lines
with a tab (no value follows it), or write a numeric label as ``1``, ``1.0`` or ``1e0``
(one class, compared as numbers). What cannot be read for sure is refused, naming the file
and the line: bytes that are not UTF-8 (a latin-1 ``café`` and ``cafè`` would otherwise
read as one label), and a split that padded to its longest series would hold more than
:data:`MAX_TSV_VALUES` values (checked before they are allocated).
"""

from __future__ import annotations

import os
from decimal import Decimal, InvalidOperation
from pathlib import Path

import numpy as np

__all__ = ["MAX_TSV_VALUES", "read_ucr_tsv"]

#: Values (series x longest length) a split may hold once its series are padded to one
#: length: 1 GiB as float64, eight times the archive's largest split.
MAX_TSV_VALUES = 2**27


def read_ucr_tsv(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """One split in the UCR 2018 archive's ``.tsv`` format, as the official zip unpacks it.

    Each line is one series: its class label, then its values, separated by tabs; ``NaN``
    marks a missing value, and the padding after a series shorter than the longest one.
    Both stay NaN in the returned panel, which is how the estimators take gaps and unequal
    lengths.

    Returns
    -------
    X : ndarray of shape (n_series, 1, n_timepoints), float64
    y : ndarray of shape (n_series,), str
        The labels as written in the file (``"1"``, ``"-1"``, ...), as sktime reads them;
        a numeric label in one form per number (``"1.00"`` and ``"1e0"`` are ``"1"``).

    Raises
    ------
    ValueError
        If the file is empty or not UTF-8, a line has no value after its label, a value
        is not a number, a label is missing, a series has no observed value, or the
        padded split would exceed :data:`MAX_TSV_VALUES`; the message names the file and
        the line.
    """
    path = Path(path)
    labels, rows, longest = [], [], 0
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            line = _decode(raw, path, number)
            if not line.strip():
                continue
            label, values = _parse(line, path, number)
            longest = max(longest, len(values))
            if (len(rows) + 1) * longest > MAX_TSV_VALUES:
                raise ValueError(
                    f"{path}, line {number}: {len(rows) + 1} series padded to the longest "
                    f"({longest} values) would hold more than the {MAX_TSV_VALUES} values a "
                    ".tsv split may hold (1 GiB as float64).")
            labels.append(label)
            rows.append(values)
    if not rows:
        raise ValueError(f"{path} holds no series.")
    X = np.full((len(rows), 1, longest), np.nan)
    for i, r in enumerate(rows):
        X[i, 0, : len(r)] = r
    return X, np.asarray(labels, dtype=str)


def _decode(raw: bytes, path: Path, number: int) -> str:
    """Line ``number`` as text: UTF-8 (a byte-order mark before the first line dropped),
    without its line break and the tabs that end it; a ValueError if it is not UTF-8."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}, line {number}: not UTF-8 text ({exc.reason} at byte "
                         f"{exc.start}); save the file as UTF-8.") from None
    if number == 1:
        line = line.removeprefix("\ufeff")
    return line.rstrip("\r\n").rstrip("\t")


def _parse(line: str, path: Path, number: int) -> tuple[str, np.ndarray]:
    """The label and the values of one line, checked."""
    fields = line.split("\t")
    label = fields[0].strip()
    if not label or label.lower() == "nan":
        raise ValueError(f"{path}, line {number}: the first field (the class label) "
                         "is empty or NaN.")
    if len(fields) < 2:
        raise ValueError(f"{path}, line {number}: a label and no value; the UCR "
                         "layout is label<TAB>value<TAB>value ...")
    try:
        values = np.array(fields[1:], dtype=np.float64)
    except ValueError as exc:
        raise ValueError(f"{path}, line {number}: a value is not a number "
                         f"({exc}).") from None
    if np.isnan(values).all():
        raise ValueError(f"{path}, line {number}: the series has no observed value.")
    if np.isinf(values).any():
        raise ValueError(f"{path}, line {number}: an infinite value (only NaN may "
                         "mark a missing one).")
    return _canonical(label), values


def _canonical(label: str) -> str:
    """A numeric label in one form per number (``1``, ``1.0``, ``1.00``, ``1e0``: ``"1"``;
    ``0.50``: ``"0.5"``), so that labels are compared as numbers; others as written."""
    try:
        value = Decimal(label).normalize()
    except InvalidOperation:
        return label
    if not value.is_finite():
        return label
    if value == value.to_integral_value() and value.adjusted() < 30:
        return str(int(value))
    return str(value)
