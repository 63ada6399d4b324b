"""Arrays on disk: `read_npz` and `write_npz` (.npz archives of NumPy arrays).

`write_npz` stores outputs as out0, out1, ... and writes beside the target
then renames it in place. NumPy stores bfloat16 arrays as 2-byte void
('|V2'); `read_npz` reads every '|V2' array back as bfloat16.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from .arrays import _BF16, _one_line
from .errors import LowerError
from .graph import write_atomic

__all__ = ["read_npz", "write_npz"]


def read_npz(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """The arrays of an .npz file by name (2-byte void arrays come back as bfloat16).

    Missing, unreadable or corrupt files raise a one-line LowerError.
    """
    where = f"cannot read arrays {os.fspath(path)!r}"
    if os.path.isdir(path):
        raise LowerError(f"{where}: it is a directory")
    try:
        # open the file here: np.load leaks its own handle when the archive is corrupt
        with open(path, "rb") as fh:
            z = np.load(fh, allow_pickle=False)
            if not isinstance(z, np.lib.npyio.NpzFile):
                raise LowerError(f"{where}: not an .npz archive (a single .npy array?)")
            with z:
                arrays = {k: z[k] for k in z.files}
    except LowerError:
        raise
    except FileNotFoundError:
        raise LowerError(f"{where}: no such file") from None
    except PermissionError:
        raise LowerError(f"{where}: permission denied") from None
    except Exception as e:  # BadZipFile, zlib.error, ValueError (pickled data), EOFError, ...
        raise LowerError(f"{where}: not a valid .npz file ({_one_line(e)})") from None
    for k, a in arrays.items():
        if a.dtype.kind == "V" and a.dtype.itemsize == 2 and a.dtype.fields is None:
            arrays[k] = a.view(_BF16)
    return arrays


def write_npz(path: str | os.PathLike[str], arrays: Sequence[np.ndarray]) -> None:
    """Write `arrays` as out0, out1, ... to an .npz file, beside the target first, then renamed."""
    buf = io.BytesIO()
    # Values typed Any: to mypy a **dict of arrays could also fill savez's `allow_pickle: bool`
    # (numpy >= 2.1); the keys are out0, out1, ..., never that name.
    named: dict[str, Any] = {f"out{i}": np.asarray(a) for i, a in enumerate(arrays)}
    np.savez(buf, **named)
    try:
        write_atomic(path, buf.getvalue())
    except OSError as e:
        raise LowerError(f"cannot write arrays {os.fspath(path)!r}: {e.strerror or _one_line(e)}") from None
