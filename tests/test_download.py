"""Tests of the downloader and archive extraction against a local HTTP server."""

import hashlib
import io
import tarfile
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from xmltree.datasets import load_dataset
from xmltree.datasets._download import DownloadError, download_file, extract_archive


class _Handler(BaseHTTPRequestHandler):
    """Serves ``server.files``; honours ``Range`` unless told not to.

    ``server.restart_ranges`` answers a range request with a 206 response
    that nevertheless starts at byte 0 (a broken server or proxy).

    ``server.truncate`` names files whose next response announces the full
    length but stops halfway; ``server.delay`` stalls every response;
    ``server.length_header``, if set, replaces the Content-Length value.
    """

    def do_GET(self):  # noqa: N802 (name fixed by BaseHTTPRequestHandler)
        server = self.server
        server.requests.append((self.path, self.headers.get("Range")))
        time.sleep(server.delay)
        body = server.files.get(self.path.lstrip("/"))
        if body is None:
            self.send_error(404, "Not Found")
            return
        start = 0
        range_header = self.headers.get("Range")
        if range_header and server.support_range:
            start = int(range_header.removeprefix("bytes=").rstrip("-"))
            if start >= len(body):
                self.send_error(416, "Range Not Satisfiable")
                return
            start = 0 if server.restart_ranges else start
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", server.length_header or str(len(body) - start))
        self.end_headers()
        if self.path.lstrip("/") in server.truncate:
            server.truncate.discard(self.path.lstrip("/"))
            self.wfile.write(body[start:start + (len(body) - start) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body[start:])

    def log_message(self, *args):
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that timed out closes the socket mid-response; expected here.
        pass


@pytest.fixture
def server():
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.files, httpd.requests, httpd.truncate = {}, [], set()
    httpd.delay, httpd.support_range, httpd.restart_ranges = 0.0, True, False
    httpd.length_header = None
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


PAYLOAD = bytes(np.random.default_rng(0).integers(0, 256, size=300_000, dtype=np.uint8))
PAYLOAD_SHA = hashlib.sha256(PAYLOAD).hexdigest()


def _leftovers(directory):
    return sorted(p.name for p in directory.iterdir())


# ---------------------------------------------------------------- download_file


def test_download_success_with_checksum_and_size(server, tmp_path):
    server.files["data.bin"] = PAYLOAD
    path = download_file(f"{server.url}/data.bin", tmp_path / "data.bin", sha256=PAYLOAD_SHA,
                         size=len(PAYLOAD), verbose=False)
    assert path.read_bytes() == PAYLOAD
    assert _leftovers(tmp_path) == ["data.bin"]


def test_present_and_valid_file_is_not_downloaded_again(server, tmp_path):
    (tmp_path / "data.bin").write_bytes(PAYLOAD)
    download_file(f"{server.url}/data.bin", tmp_path / "data.bin", sha256=PAYLOAD_SHA)
    assert server.requests == []


def test_present_but_corrupt_file_is_replaced(server, tmp_path):
    server.files["data.bin"] = PAYLOAD
    (tmp_path / "data.bin").write_bytes(b"stale")
    download_file(f"{server.url}/data.bin", tmp_path / "data.bin", sha256=PAYLOAD_SHA,
                  verbose=False)
    assert (tmp_path / "data.bin").read_bytes() == PAYLOAD


def test_checksum_mismatch_removes_the_download(server, tmp_path):
    server.files["data.bin"] = PAYLOAD
    with pytest.raises(DownloadError, match="SHA-256 mismatch"):
        download_file(f"{server.url}/data.bin", tmp_path / "data.bin", sha256="0" * 64,
                      verbose=False)
    assert _leftovers(tmp_path) == []


def test_size_mismatch_removes_the_download(server, tmp_path):
    server.files["data.bin"] = PAYLOAD
    with pytest.raises(DownloadError, match="300000 bytes but 12 were expected"):
        download_file(f"{server.url}/data.bin", tmp_path / "data.bin", size=12, verbose=False)
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("length", ["3_00000", "+300000", "\u00b300000", "-1", "300000, 300000"])
def test_malformed_content_length_is_a_download_error(server, tmp_path, length):
    # int() takes the first two (and so does http.client, which then reads
    # the body to that length); the others escaped as a bare ValueError.
    server.files["data.bin"] = PAYLOAD
    server.length_header = length
    with pytest.raises(DownloadError, match="Content-Length"):
        download_file(f"{server.url}/data.bin", tmp_path / "data.bin", verbose=False)
    assert _leftovers(tmp_path) == []


def test_http_404(server, tmp_path):
    with pytest.raises(DownloadError, match="HTTP error 404"):
        download_file(f"{server.url}/missing.zip", tmp_path / "missing.zip", verbose=False)
    assert _leftovers(tmp_path) == []


def test_truncated_response_keeps_only_a_part_file_then_resumes(server, tmp_path):
    server.files["data.bin"] = PAYLOAD
    server.truncate.add("data.bin")
    with pytest.raises(DownloadError, match="closed early"):
        download_file(f"{server.url}/data.bin", tmp_path / "data.bin", sha256=PAYLOAD_SHA,
                      verbose=False)
    assert _leftovers(tmp_path) == ["data.bin.part"]
    assert (tmp_path / "data.bin.part").read_bytes() == PAYLOAD[:len(PAYLOAD) // 2]
    download_file(f"{server.url}/data.bin", tmp_path / "data.bin", sha256=PAYLOAD_SHA,
                  verbose=False)
    assert server.requests[-1] == ("/data.bin", f"bytes={len(PAYLOAD) // 2}-")
    assert (tmp_path / "data.bin").read_bytes() == PAYLOAD
    assert _leftovers(tmp_path) == ["data.bin"]


def test_server_ignoring_range_restarts_from_scratch(server, tmp_path):
    server.files["data.bin"] = PAYLOAD
    server.support_range = False
    (tmp_path / "data.bin.part").write_bytes(b"garbage that is not a prefix")
    download_file(f"{server.url}/data.bin", tmp_path / "data.bin", sha256=PAYLOAD_SHA,
                  verbose=False)
    assert (tmp_path / "data.bin").read_bytes() == PAYLOAD


def test_partial_file_longer_than_the_body_is_discarded(server, tmp_path):
    server.files["data.bin"] = PAYLOAD
    (tmp_path / "data.bin.part").write_bytes(PAYLOAD + b"extra")
    download_file(f"{server.url}/data.bin", tmp_path / "data.bin", sha256=PAYLOAD_SHA,
                  verbose=False)
    assert [r[1] for r in server.requests] == [f"bytes={len(PAYLOAD) + 5}-", None]
    assert (tmp_path / "data.bin").read_bytes() == PAYLOAD


def test_partial_response_at_the_wrong_offset_restarts(server, tmp_path):
    server.files["data.bin"] = PAYLOAD
    server.restart_ranges = True
    (tmp_path / "data.bin.part").write_bytes(PAYLOAD[:1000])
    download_file(f"{server.url}/data.bin", tmp_path / "data.bin", sha256=PAYLOAD_SHA,
                  verbose=False)
    assert (tmp_path / "data.bin").read_bytes() == PAYLOAD


def test_timeout(server, tmp_path):
    server.files["data.bin"] = PAYLOAD
    server.delay = 1.0
    with pytest.raises(DownloadError, match="timed out after 0.2 s"):
        download_file(f"{server.url}/data.bin", tmp_path / "data.bin", timeout=0.2,
                      verbose=False)
    assert not (tmp_path / "data.bin").exists()


def test_connection_refused(tmp_path):
    with pytest.raises(DownloadError, match="cannot download"):
        download_file("http://127.0.0.1:9/x.zip", tmp_path / "x.zip", timeout=2, verbose=False)


# ---------------------------------------------------------------- extract_archive


def _zip_bytes(members):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for name, data in members.items():
            bundle.writestr(name, data)
    return buffer.getvalue()


def _tar_gz_bytes(members, links=()):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as bundle:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            bundle.addfile(info, io.BytesIO(data))
        for name, target in links:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            bundle.addfile(info)
    return buffer.getvalue()


@pytest.mark.parametrize("pack", [_zip_bytes, _tar_gz_bytes])
def test_extract_zip_and_tar_gz(tmp_path, pack):
    archive = tmp_path / "set.archive"
    archive.write_bytes(pack({"Set/train.txt": b"a", "Set/sub/test.txt": b"b"}))
    dest = extract_archive(archive, tmp_path / "out")
    assert (dest / "Set" / "train.txt").read_bytes() == b"a"
    assert (dest / "Set" / "sub" / "test.txt").read_bytes() == b"b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "set.archive"]


@pytest.mark.parametrize(
    "archive_bytes",
    [_zip_bytes({"ok.txt": b"", "../evil.txt": b"x"}),
     _zip_bytes({"/abs/evil.txt": b"x"}),
     _tar_gz_bytes({"ok.txt": b"", "a/../../evil.txt": b"x"}),
     _tar_gz_bytes({"ok.txt": b""}, links=[("link", "/etc/passwd")])],
    ids=["zip-dotdot", "zip-absolute", "tar-dotdot", "tar-symlink"],
)
def test_extract_refuses_escaping_members(tmp_path, archive_bytes):
    archive = tmp_path / "bad.archive"
    archive.write_bytes(archive_bytes)
    with pytest.raises(ValueError, match="refusing"):
        extract_archive(archive, tmp_path / "out" / "inner")
    assert not (tmp_path / "out" / "evil.txt").exists()
    assert not (tmp_path / "evil.txt").exists()
    assert list((tmp_path / "out" / "inner").iterdir()) == []


def test_extract_rejects_other_files(tmp_path):
    (tmp_path / "plain.zip").write_bytes(b"not an archive")
    with pytest.raises(ValueError, match="neither a zip nor a tar"):
        extract_archive(tmp_path / "plain.zip", tmp_path / "out")


# ---------------------------------------------------------------- load_dataset(download=True)


def _mediamill_zip():
    rows = "".join(f"{i % 101} {i % 120}:1\n" for i in range(6))
    return _zip_bytes({
        "Mediamill/Mediamill_data.txt": f"6 120 101\n{rows}".encode(),
        "Mediamill/mediamill_trSplit.txt": b"1\n2\n3\n4\n",
        "Mediamill/mediamill_tstSplit.txt": b"5\n6\n",
    })


def test_load_dataset_downloads_extracts_and_loads(server, tmp_path, monkeypatch):
    server.files["mirror/Mediamill.zip"] = _mediamill_zip()
    monkeypatch.setenv("XMLTREE_DATASETS_URL", f"{server.url}/mirror/")
    (X, Y), (X_test, Y_test) = load_dataset("mediamill", tmp_path, download=True,
                                            subset="both", verbose=False)
    assert X.shape == (4, 120) and Y.shape == (4, 101) and X_test.shape == (2, 120)
    assert Y_test.indices.tolist() == [4, 5]
    assert (tmp_path / "mediamill" / "Mediamill" / "Mediamill_data.txt").is_file()
    assert not (tmp_path / "Mediamill.zip").exists()
    # Once present, nothing more is fetched.
    count = len(server.requests)
    load_dataset("mediamill", tmp_path, download=True, verbose=False)
    assert len(server.requests) == count


def test_file_url_mirror(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "Mediamill.zip").write_bytes(_mediamill_zip())
    X, Y = load_dataset("Mediamill", tmp_path / "home", download=True, base_url=mirror.as_uri(),
                        subset="test", verbose=False)
    assert X.shape == (2, 120) and Y.indices.tolist() == [4, 5]


def test_load_dataset_download_error_surfaces(server, tmp_path):
    with pytest.raises(DownloadError, match="404"):
        load_dataset("bibtex", tmp_path, download=True, base_url=server.url, verbose=False)
