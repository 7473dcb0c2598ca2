"""Fetching and unpacking dataset archives.

Downloads stream into ``<name>.part`` next to the destination and are
renamed into place only after the size and checksum have been verified, so a
file under its final name is always complete. An interrupted download leaves
the ``.part`` file behind, and the next attempt resumes it with an HTTP
``Range`` request when the server supports one.

Archives are unpacked into a scratch directory first and moved into place
only when every member has been extracted; members that would land outside
the destination (absolute paths, ``..`` components, links) are refused
before anything is written.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import shutil
import socket
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath

from tqdm.auto import tqdm

logger = logging.getLogger(__name__)

__all__ = ["DownloadError", "download_file", "extract_archive", "sha256_of"]

#: Bytes read from the network (and from disk when hashing) per step.
CHUNK_SIZE = 1 << 20


class DownloadError(OSError):
    """A download failed: HTTP error, timeout, truncated body, or bad checksum."""


def sha256_of(path: str | os.PathLike) -> str:
    """Return the hex SHA-256 digest of a file, read in chunks.

    Parameters
    ----------
    path : str or os.PathLike
        File to hash.

    Returns
    -------
    str
        64 lowercase hex digits.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(CHUNK_SIZE), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download_file(url: str, dest: str | os.PathLike, *, sha256: str | None = None,
                  size: int | None = None, timeout: float = 60.0,
                  verbose: bool = True) -> Path:
    """Download ``url`` to ``dest``, verifying it before it gets its final name.

    Parameters
    ----------
    url : str
        Address of the file (any scheme ``urllib`` supports).
    dest : str or os.PathLike
        Final path. Its directory must exist. If ``dest`` already exists and
        has the expected ``size`` and ``sha256`` (those given), nothing is
        downloaded; otherwise it is replaced.
    sha256 : str, optional
        Expected hex SHA-256 of the complete file.
    size : int, optional
        Expected size in bytes of the complete file.
    timeout : float, default=60.0
        Seconds to wait for the connection and for each read.
    verbose : bool, default=True
        Show a progress bar (only when standard error is a terminal).

    Returns
    -------
    pathlib.Path
        ``dest``.

    Raises
    ------
    DownloadError
        On an HTTP or network error, a timeout, a body shorter than announced
        (the partial ``.part`` file is kept for resuming), or a size or
        checksum mismatch (the downloaded data is deleted).
    """
    dest = Path(dest)
    if dest.exists():
        problem = _verification_problem(dest, sha256=sha256, size=size)
        if problem is None:
            logger.info("%s already present, not downloading", dest)
            return dest
        logger.warning("%s: %s; downloading it again", dest, problem)
        dest.unlink()
    partial = dest.with_name(dest.name + ".part")
    logger.info("downloading %s to %s", url, dest)
    _fetch_into(url, partial, timeout=timeout, verbose=verbose)
    problem = _verification_problem(partial, sha256=sha256, size=size)
    if problem is not None:
        partial.unlink()
        raise DownloadError(f"{url}: {problem}; the downloaded file was removed")
    os.replace(partial, dest)
    return dest


def _fetch_into(url: str, partial: Path, *, timeout: float, verbose: bool) -> None:
    """Write the body of ``url`` into ``partial``, resuming what is already there."""
    offset = partial.stat().st_size if partial.exists() else 0
    try:
        try:
            response = _open(url, offset, timeout)
        except urllib.error.HTTPError as exc:
            if exc.code != 416 or not offset:
                raise
            offset = 0  # the range starts past the end: the partial file is stale
            response = _open(url, offset, timeout)
        with response:
            if offset and not _resumes_at(response, offset):
                offset = 0  # the server ignored the range: start again
            length = _announced_length(response, url)
            expected = None if length is None else offset + length
            with open(partial, "ab" if offset else "wb") as sink:
                _copy_stream(response, sink, offset, expected, verbose, url)
    except urllib.error.HTTPError as exc:
        raise DownloadError(f"HTTP error {exc.code} ({exc.reason}) for {url}") from exc
    except (TimeoutError, socket.timeout) as exc:
        raise DownloadError(f"timed out after {timeout:g} s while downloading {url}") from exc
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, (TimeoutError, socket.timeout)):
            raise DownloadError(
                f"timed out after {timeout:g} s while connecting to {url}") from exc
        raise DownloadError(f"cannot download {url}: {exc.reason}") from exc
    except http.client.IncompleteRead as exc:
        raise DownloadError(
            f"connection closed early while downloading {url}; "
            f"the partial file {partial} is kept and will be resumed") from exc
    except (ConnectionError, http.client.HTTPException) as exc:
        raise DownloadError(f"connection failed while downloading {url}: {exc}") from exc


def _open(url: str, offset: int, timeout: float):
    """Open ``url``, asking for the bytes from ``offset`` on when it is positive."""
    request = urllib.request.Request(url)
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    return urllib.request.urlopen(request, timeout=timeout)


def _announced_length(response, url: str) -> int | None:
    """The Content-Length of ``response`` in bytes, or None if it announces none.

    Raises ``DownloadError`` unless the header is ASCII digits: ``int()``
    would also take ``1_0``, a sign or other scripts' digits.
    """
    length = response.headers.get("Content-Length")
    if length is None:
        return None
    if not (length.isascii() and length.isdigit()):
        raise DownloadError(f"{url}: malformed Content-Length header {length!r}")
    return int(length)


def _resumes_at(response, offset: int) -> bool:
    """True if ``response`` is a partial body starting exactly at ``offset``."""
    content_range = response.headers.get("Content-Range", "")
    return response.status == 206 and content_range.startswith(f"bytes {offset}-")


def _copy_stream(response, sink, offset: int, expected: int | None, verbose: bool,
                 url: str) -> None:
    """Copy the response body to ``sink`` with a progress bar; check its length."""
    show = verbose and sys.stderr.isatty()
    written = offset
    with tqdm(total=expected, initial=offset, unit="B", unit_scale=True, unit_divisor=1024,
              desc=Path(url).name or url, disable=not show) as progress:
        for chunk in iter(lambda: response.read(CHUNK_SIZE), b""):
            sink.write(chunk)
            written += len(chunk)
            progress.update(len(chunk))
    if expected is not None and written < expected:
        raise http.client.IncompleteRead(b"", expected - written)


def _verification_problem(path: Path, *, sha256: str | None, size: int | None) -> str | None:
    """Describe how ``path`` differs from the expected size or checksum, or return None."""
    actual_size = path.stat().st_size
    if size is not None and actual_size != size:
        return f"size is {actual_size} bytes but {size} were expected"
    if sha256 is not None:
        actual = sha256_of(path)
        if actual != sha256.lower():
            return f"SHA-256 mismatch (expected {sha256.lower()}, got {actual})"
    return None


def extract_archive(archive: str | os.PathLike, dest: str | os.PathLike) -> Path:
    """Unpack a zip or tar (optionally gz/bz2/xz-compressed) archive into ``dest``.

    Every member name is checked before anything is written. Top-level
    entries of the archive replace same-named entries already in ``dest``.

    Parameters
    ----------
    archive : str or os.PathLike
        The archive; its type is detected from the contents, not the name.
    dest : str or os.PathLike
        Directory to unpack into; created if missing.

    Returns
    -------
    pathlib.Path
        ``dest``.

    Raises
    ------
    ValueError
        If the file is neither a zip nor a tar archive, or a member is an
        absolute path, climbs out with ``..``, or is a link or device file.
    """
    archive, dest = Path(archive), Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".extract-", dir=dest.parent))
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as bundle:
                for name in bundle.namelist():
                    _check_member_name(name, archive)
                bundle.extractall(scratch)
        elif tarfile.is_tarfile(archive):
            with tarfile.open(archive) as bundle:
                members = bundle.getmembers()
                for member in members:
                    _check_member_name(member.name, archive)
                    if not (member.isfile() or member.isdir()):
                        raise ValueError(f"{archive}: refusing member {member.name!r}: "
                                         "links and special files are not allowed")
                # Python's own "data" filter (3.11.4+) re-checks names and
                # strips unsafe permission bits; older versions rely on the
                # checks above.
                safety = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
                bundle.extractall(scratch, members=members, **safety)
        else:
            raise ValueError(f"{archive} is neither a zip nor a tar archive")
        for entry in scratch.iterdir():
            _replace(entry, dest / entry.name)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return dest


def _check_member_name(name: str, archive: Path) -> None:
    """Refuse archive member names that would escape the extraction directory."""
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if not parts or name.startswith(("/", "\\")) or ".." in parts or ":" in parts[0]:
        raise ValueError(f"{archive}: refusing unsafe member path {name!r}")


def _replace(source: Path, target: Path) -> None:
    """Move ``source`` to ``target``, removing whatever ``target`` was before."""
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    os.replace(source, target)
