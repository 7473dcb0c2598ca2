"""Atomic file writes: a reader sees the old file or the complete new one, never a part.

The new content goes to a temporary file beside the destination, which
replaces it only once complete. The temporary file's name says whose it is,
``.NAME~TARGET-HOST-PID-TOKEN.tmp`` (``TARGET`` and ``HOST`` are short
hashes of the destination's name and of the machine's), so that a process
killed mid-write (SIGKILL, power loss) leaves a file that a later write of
the same destination recognises and removes: one whose writer, on this
machine, is gone.

Only regular files are ever replaced: a destination that is a symbolic link,
a device, a FIFO, a socket or a directory is refused, so that writing a model
or a prediction file can never swap a device node or a link for a file.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import socket
import stat
import time
from pathlib import Path

__all__ = ["atomic_write"]

#: When this process started writing files, about: a temporary file of our own
#: pid older than this was left by an earlier process that had the same pid.
_PROCESS_START = time.time()

#: Bytes of the destination's name kept in a temporary name; the rest of the
#: name (``~TARGET-HOST-PID-TOKEN.tmp``, at most 40 bytes) keeps it within
#: the 255 bytes file systems allow.
_NAME_BYTES = 200

_TEMPORARY = re.compile(r"\.(?P<stem>.*)~(?P<target>[0-9a-f]{8})-(?P<host>[0-9a-f]{8})-"
                        r"(?P<pid>[0-9]{1,10})-[0-9a-f]{8}\.tmp")


@contextlib.contextmanager
def atomic_write(path, mode: str = "wb", **open_kwargs):
    """Open a temporary file that replaces ``path`` when the block succeeds.

    The temporary file lives in the destination directory (so the final
    ``os.replace`` is an atomic rename on the same file system), is flushed
    and fsynced before the rename, and is removed if the block raises —
    leaving any previous ``path`` untouched. Temporary files of earlier
    writes of ``path`` whose process was killed are removed first.

    Parameters
    ----------
    path : str or os.PathLike
        Final destination: a new file, or a regular file to replace.
    mode : {"wb", "w"}, default="wb"
        Binary or text mode.
    **open_kwargs
        Passed to :func:`open` (e.g. ``encoding``, ``newline``).

    Yields
    ------
    file object
        The open temporary file.

    Raises
    ------
    IsADirectoryError
        If ``path`` is a directory.
    FileExistsError
        If ``path`` exists and is not a regular file (a symbolic link, a
        device, a FIFO or a socket).
    OSError
        If the directory cannot be written or the name is too long.
    """
    path = Path(path)
    _refuse_special(path)
    _remove_stale_temporaries(path)
    temporary = path.with_name(_temporary_name(path.name))
    # os.open applies the umask, so the result gets the usual permissions
    # (tempfile.mkstemp would create it 0600).
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        # The temporary name is ours, not the caller's: name the file they asked for.
        raise type(exc)(exc.errno, f"cannot write {path.name} in its directory "
                        f"({exc.strerror})", str(path)) from None
    try:
        with open(descriptor, mode, **open_kwargs) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        _refuse_special(path)  # again: something may have been put there meanwhile
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _refuse_special(path: Path) -> None:
    """Raise unless ``path`` is missing or a regular file (a link is not followed)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file to write", str(path))
    if not stat.S_ISREG(mode):
        raise FileExistsError(errno.EEXIST, "exists and is not a regular file (a symbolic "
                              "link, device, FIFO or socket): refusing to replace it", str(path))


def _short_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=4).hexdigest()


def _owner_tag(name: str) -> str:
    """``TARGET-HOST``: the temporary names of writes of `name` on this machine share it."""
    return f"{_short_hash(name)}-{_short_hash(socket.gethostname())}"


def _temporary_name(name: str) -> str:
    """A fresh temporary name for a write of the file called `name`."""
    stem = name.encode("utf-8", "surrogateescape")[:_NAME_BYTES]
    stem = stem.decode("utf-8", "ignore")
    return f".{stem}~{_owner_tag(name)}-{os.getpid()}-{secrets.token_hex(4)}.tmp"


def _remove_stale_temporaries(path: Path) -> None:
    """Remove the temporary files of writes of ``path`` whose writer is gone.

    Only files of this machine count (another machine's writer cannot be
    asked whether it still runs): those of a process that no longer exists,
    and those of this process's pid written before it started. Best effort:
    what cannot be listed or removed is left.
    """
    if os.name != "posix":  # os.kill(pid, 0) would signal the process on Windows
        return
    tag = _owner_tag(path.name)
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return
    for entry in entries:
        match = _TEMPORARY.fullmatch(entry.name)
        if match is None or f"{match['target']}-{match['host']}" != tag:
            continue
        with contextlib.suppress(OSError):
            if _writer_gone(int(match["pid"]), entry.stat(follow_symlinks=False).st_mtime):
                os.unlink(entry.path)


def _writer_gone(pid: int, modified: float) -> bool:
    """Whether the process `pid` that last wrote a temporary file at `modified` is gone."""
    if pid == os.getpid():
        return modified < _PROCESS_START
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):  # another user's process; not a pid at all
        return False
    return False
