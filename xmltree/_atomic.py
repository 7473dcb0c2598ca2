"""Atomic file writes: a reader sees the old file or the complete new one, never a part."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

__all__ = ["atomic_write"]


@contextlib.contextmanager
def atomic_write(path, mode: str = "wb", **open_kwargs):
    """Open a temporary file that replaces ``path`` when the block succeeds.

    The temporary file lives in the destination directory (so the final
    ``os.replace`` is an atomic rename on the same file system), is flushed
    and fsynced before the rename, and is removed if the block raises —
    leaving any previous ``path`` untouched.

    Parameters
    ----------
    path : str or os.PathLike
        Final destination.
    mode : {"wb", "w"}, default="wb"
        Binary or text mode.
    **open_kwargs
        Passed to :func:`open` (e.g. ``encoding``, ``newline``).

    Yields
    ------
    file object
        The open temporary file.
    """
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    # os.open applies the umask, so the result gets the usual permissions
    # (tempfile.mkstemp would create it 0600).
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with open(descriptor, mode, **open_kwargs) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
