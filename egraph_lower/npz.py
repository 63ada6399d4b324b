"""Arrays on disk: `read_npz` and `write_npz` (.npz archives of NumPy arrays).

`write_npz` stores outputs as out0, out1, ... and writes beside the target
then renames it in place. NumPy stores bfloat16 arrays as 2-byte void
('|V2'); `read_npz` reads every '|V2' array back as bfloat16.
"""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from .arrays import _one_line
from .dtypes import bf16
from .errors import LowerError
from .outputs import write_atomic
from .reading import NPZ_BYTES, read_bytes, too_large

__all__ = ["npz_bytes", "read_npz", "write_npz"]


def read_npz(path: str | os.PathLike[str], cap: int = NPZ_BYTES) -> dict[str, np.ndarray]:
    """The arrays of an .npz file by name (2-byte void arrays come back as bfloat16).

    Missing, unreadable, corrupt or too large files (over `cap` bytes as stored or as the
    archive says its arrays take once inflated) raise a one-line LowerError.
    """
    where = f"cannot read arrays {os.fspath(path)!r}"
    data = read_bytes(path, "arrays", cap, magic=(b"PK", "an .npz archive (a zip file)"))
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:  # what each array inflates to, before inflating
            inflated = sum(info.file_size for info in archive.infolist())
    except Exception:
        inflated = 0  # not a zip archive: np.load says what it is
    if inflated > cap:
        raise too_large("arrays", os.fspath(path), cap)
    try:
        with io.BytesIO(data) as fh:
            z = np.load(fh, allow_pickle=False)
            if not isinstance(z, np.lib.npyio.NpzFile):
                raise LowerError(f"{where}: not an .npz archive (a single .npy array?)")
            with z:
                arrays = {k: z[k] for k in z.files}
    except LowerError:
        raise
    except Exception as e:  # BadZipFile, zlib.error, ValueError (pickled data), EOFError, ...
        raise LowerError(f"{where}: not a valid .npz file ({_one_line(e)})") from None
    for k, a in arrays.items():
        if a.dtype.kind == "V" and a.dtype.itemsize == 2 and a.dtype.fields is None:
            arrays[k] = a.view(bf16())
    return arrays


def write_npz(path: str | os.PathLike[str], arrays: Sequence[np.ndarray]) -> None:
    """Write `arrays` as out0, out1, ... to an .npz file, beside the target first, then renamed."""
    write_atomic(path, npz_bytes(arrays), "arrays")


def npz_bytes(arrays: Sequence[np.ndarray]) -> bytes:
    """The .npz archive of `arrays` as out0, out1, ..."""
    buf = io.BytesIO()
    # Values typed Any: to mypy a **dict of arrays could also fill savez's `allow_pickle: bool`
    # (numpy >= 2.1); the keys are out0, out1, ..., never that name.
    named: dict[str, Any] = {f"out{i}": np.asarray(a) for i, a in enumerate(arrays)}
    np.savez(buf, **named)
    return buf.getvalue()
