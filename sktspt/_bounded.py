"""Reading JSON from files that may be crafted, without exhausting memory.

A JSON text of ``n`` bytes can expand to far more in memory: ``{},`` is 3 bytes and an
empty dict of 64, so a 64 MiB text of them (a 68 KB zip member) parses to 2 GB. Every
parsed value follows a ``,`` or opens a container, or is the first value of one, so
``count(",") + count("{") + count("[") + 1`` bounds the number of values (counting
those inside strings too, which only errs on the safe side). :func:`loads_bounded`
checks the size and that count before anything is parsed.
"""

from __future__ import annotations

import json
import os

#: Values (numbers, strings, containers) a file's ``metadata.json`` or a checkpoint's JSON
#: may hold: about 2 million, e.g. a training history of 300,000 batches. Parsed, the
#: worst case (every value an empty dict) is about 150 MB.
MAX_JSON_VALUES = 2**21


def json_values_bound(raw: bytes) -> int:
    """An upper bound on the number of values in the JSON text ``raw`` (see module doc)."""
    return raw.count(b",") + raw.count(b"{") + raw.count(b"[") + 1


def loads_bounded(raw: bytes, what: str, max_bytes: int, max_values: int = MAX_JSON_VALUES):
    """``json.loads(raw)``, or a ValueError, before parsing, if ``raw`` is larger than
    ``max_bytes`` bytes or may hold more than ``max_values`` values."""
    if len(raw) > max_bytes:
        raise ValueError(f"{what} has {len(raw)} bytes, more than the {max_bytes} allowed")
    bound = json_values_bound(raw)
    if bound > max_values:
        raise ValueError(f"{what} may hold {bound} JSON values (by its separators), more than the "
                         f"{max_values} allowed")
    return json.loads(raw.decode("utf-8"))


def read_json_bounded(path: str | os.PathLike, max_bytes: int,
                      max_values: int = MAX_JSON_VALUES):
    """:func:`loads_bounded` of the file at ``path``, refused before reading if too large."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise ValueError(f"{os.fspath(path)!r} has {size} bytes, more than the "
                             f"{max_bytes} allowed")
        raw = f.read(max_bytes + 1)
    return loads_bounded(raw, repr(os.fspath(path)), max_bytes, max_values)


def depth(value) -> int:
    """Nesting depth of a parsed JSON value: 0 for a scalar, 1 for ``[1, 2]``, and so on."""
    deepest, level = 0, [(value, 0)]
    while level:
        item, d = level.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, d + 1)
            level.extend((v, d + 1) for v in item)
    return deepest
