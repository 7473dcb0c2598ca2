"""Atomic writes: only regular files are replaced, and a killed write leaves nothing for long."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from xmltree import _atomic
from xmltree._atomic import atomic_write


def write(path, data=b"new"):
    with atomic_write(path) as handle:
        handle.write(data)


def leftovers(directory):
    return sorted(path.name for path in Path(directory).iterdir() if path.name.endswith(".tmp"))


def test_a_regular_file_is_replaced_and_nothing_is_left(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    write(target)
    assert target.read_bytes() == b"new" and leftovers(tmp_path) == []


def test_a_symbolic_link_is_refused_and_left_as_it_is(tmp_path):
    # It used to be replaced by a regular file.
    original = tmp_path / "original.bin"
    original.write_bytes(b"old")
    link = tmp_path / "link.bin"
    link.symlink_to(original)
    with pytest.raises(FileExistsError, match="not a regular file"):
        write(link)
    assert link.is_symlink() and original.read_bytes() == b"old"
    assert leftovers(tmp_path) == []


def test_a_fifo_or_a_directory_is_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(FileExistsError, match="not a regular file"):
        write(fifo)
    with pytest.raises(IsADirectoryError):
        write(tmp_path)
    assert leftovers(tmp_path) == []


def test_a_long_name_still_leaves_room_for_the_temporary_name(tmp_path):
    # A 249-byte name used to give a temporary name beyond 255 bytes.
    target = tmp_path / ("m" * 245 + ".npz")
    write(target)
    assert target.read_bytes() == b"new"
    with pytest.raises(OSError, match="too long"):
        write(tmp_path / ("m" * 256))


#: A child that starts writing `target` and is killed in the middle. It loads
#: the module alone (it needs only the standard library): a quick start.
WRITER = """
import importlib.util, sys, time
spec = importlib.util.spec_from_file_location("_atomic", sys.argv[2])
atomic = importlib.util.module_from_spec(spec)
spec.loader.exec_module(atomic)
with atomic.atomic_write(sys.argv[1]) as handle:
    handle.write(b"partial")
    handle.flush()
    print("writing", flush=True)
    time.sleep(600)
"""


def start_writer(target):
    """Start a writer of `target` and wait until its temporary file exists."""
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(target), _atomic.__file__],
                             stdout=subprocess.PIPE)
    assert child.stdout.readline() == b"writing\n"
    return child


def test_the_temporary_file_of_a_killed_write_is_removed_by_the_next_write(tmp_path):
    target = tmp_path / "model.npz"
    target.write_bytes(b"old")
    child = start_writer(target)
    child.send_signal(signal.SIGKILL)
    child.wait()
    # SIGKILL runs no cleanup: the old file is intact, the temporary file stays...
    assert target.read_bytes() == b"old" and len(leftovers(tmp_path)) == 1
    write(tmp_path / "other.npz")  # ...whatever else is written...
    assert len(leftovers(tmp_path)) == 1
    write(target)  # ...until the same file is written again.
    assert target.read_bytes() == b"new" and leftovers(tmp_path) == []


def test_the_temporary_file_of_a_running_write_is_kept(tmp_path):
    target = tmp_path / "model.npz"
    child = start_writer(target)
    try:
        write(target)
        assert len(leftovers(tmp_path)) == 1
    finally:
        child.kill()
        child.wait()


def test_own_pid_temporaries_count_as_stale_only_from_before_this_process(tmp_path):
    target = tmp_path / "model.npz"
    ours = tmp_path / _atomic._temporary_name(target.name)
    earlier = tmp_path / _atomic._temporary_name(target.name)
    another_host = f"{_atomic._short_hash(target.name)}-00000000"
    foreign = tmp_path / f".{target.name}~{another_host}-1-0a0b0c0d.tmp"
    for path in (ours, earlier, foreign):
        path.write_bytes(b"")
    # A process of the same pid that ran before this one (the pid was reused).
    os.utime(earlier, (_atomic._PROCESS_START - 60,) * 2)
    write(target)
    # Another machine's writer cannot be asked whether it runs: kept.
    assert leftovers(tmp_path) == sorted([ours.name, foreign.name])
