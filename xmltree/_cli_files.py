"""The command line's care with paths: standard input, standard output, files it must
not read (devices) or overwrite (its own inputs)."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path


@contextlib.contextmanager
def _readable(path: Path):
    """Yield ``path``, or for ``-`` a temporary copy of standard input.

    The readers take paths (and a text file's format may follow its name), so
    standard input is copied once; format errors then name "standard input"
    instead of the copy.
    """
    from .exceptions import DataFormatError

    if str(path) != "-":
        yield path
        return
    with tempfile.TemporaryDirectory() as directory:
        copy = Path(directory) / "stdin"
        with open(copy, "wb") as handle:
            shutil.copyfileobj(sys.stdin.buffer, handle)
        try:
            yield copy
        except DataFormatError as exc:
            if exc.path != str(copy):
                raise
            raise DataFormatError(exc.problem, "standard input", exc.line) from None


@contextlib.contextmanager
def _output_path(output: Path | None):
    """Yield the path to write a prediction file to: ``output``, or a temporary
    file that is printed to standard output once written (the writers check
    their rows and write files atomically; printing reuses them unchanged)."""
    if output is not None:
        yield output
        return
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "predictions.txt"
        yield path
        with open(path, encoding="utf-8") as handle:
            shutil.copyfileobj(handle, sys.stdout)


def _check_regular_file(path: Path, option: str) -> None:
    """Raise unless ``path`` is a regular file (a link to one is fine).

    A device such as /dev/zero would be read without end, a FIFO would block.
    """
    mode = os.stat(path).st_mode  # FileNotFoundError names the path
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, f"{option}: is a directory, not a file", str(path))
    if not stat.S_ISREG(mode):
        raise ValueError(f"{option} {path}: not a regular file (a device, FIFO or socket); "
                         "refusing to read it")


def _refuse_overwriting(output: Path | None, option: str, inputs: dict) -> None:
    """Raise if writing ``output`` would replace one of ``inputs`` (name -> path or None)."""
    if output is None:
        return
    for name, path in inputs.items():
        if path is not None and str(path) != "-" and _same_file(output, path):
            raise ValueError(f"{option} {output} is the {name}: refusing to overwrite it")


def _same_file(first: Path, second: Path) -> bool:
    """Whether two paths name one file (links followed; a missing file by its resolved path)."""
    try:
        return os.path.samefile(first, second)
    except OSError:
        return Path(first).resolve() == Path(second).resolve()
