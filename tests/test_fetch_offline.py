"""attnbook fetch without a network: a resolver that fails, connections that hang, a host lost mid-way.

Nothing here reaches the internet: ``socket.getaddrinfo`` is replaced (names fail, or resolve to a local socket),
and the servers are local. Each fetch must stop with the error that names the fix within a bound computed from the
configured probe timeout, having looked each host up once rather than once per file.
"""
from __future__ import annotations

import contextlib
import http.server
import socket
import threading
import time
from typing import Any, Iterator

import pytest

from attnbook.chapters.datasets import CHAPTER_DATASETS, ensure_data
from attnbook.data import fetch as F
from attnbook.data.manifest import Manifest

#: probe timeout the tests configure, in seconds
PROBE = 1.5
#: slack for everything that is not the probe (manifest, threads, a slow machine)
SLACK = 5.0


@pytest.fixture(autouse=True)
def _no_proxy_no_mirror(monkeypatch):
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy",
                 "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "ATTNBOOK_DATA_MIRROR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(F, "PROBE_TIMEOUT", PROBE, raising=False)


class Resolver:
    """A stand-in for ``socket.getaddrinfo``: names fail (``answer=None``) or resolve to ``answer``; numeric
    addresses resolve to themselves. More name look-ups than ``budget`` fail the test: a look-up per file."""

    def __init__(self, budget: int, answer: tuple[str, int] | None = None, after: int | None = None):
        self.budget, self.answer, self.after = budget, answer, after
        self.names: list[str] = []
        self._real = socket.getaddrinfo
        self._lock = threading.Lock()

    def __call__(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> list:
        with contextlib.suppress(OSError):
            socket.inet_aton(str(host))
            return self._real(host, port, *args, **kwargs)
        with self._lock:
            self.names.append(str(host))
            n = len(self.names)
        assert n <= self.budget, f"{n} name look-ups for {self.budget} host(s): {sorted(set(self.names))} " \
                                 "looked up again for every file"
        if self.answer is None or (self.after is not None and n > self.after):
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return self._real(*self.answer, *args, **kwargs)


def small_manifest(files: dict[str, dict], sources: dict[str, str]) -> Manifest:
    return Manifest.from_dict({
        "format": 1,
        "sources": {name: {"upstream": url} for name, url in sources.items()},
        "datasets": {name: {"folder": name, "description": "", "files": f} for name, f in files.items()},
    })


#: two upstream hosts, twelve files: a fetch that tried every file would look names up a dozen times or more
TWO_HOSTS = {"up": "https://example.org/up/", "wheels": "https://files.example.org/wheels/"}


def twelve_files() -> dict[str, dict]:
    copies = {f"f{i}.txt": {"source": "up", "path": f"f{i}.txt", "sha256": None, "size": None} for i in range(8)}
    wheels = {f"w{i}.txt": {"source": "wheels", "path": f"w{i}.txt", "sha256": None, "size": None} for i in range(4)}
    return {"docs": copies, "vec": wheels}


def assert_names_the_fix(message: str, hosts: list[str], datasets: str) -> None:
    for host in hosts:
        assert f"cannot reach {host}:443" in message, message
    assert "ATTNBOOK_DATA at a folder that has the data" in message
    assert "ATTNBOOK_DATA_MIRROR" in message and f"attnbook fetch {datasets} --base-url URL" in message


@contextlib.contextmanager
def hanging_port() -> Iterator[int]:
    """A local port whose connections hang: a listener that never accepts, its one-place queue already full."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        port = server.getsockname()[1]
        held = []
        try:
            for _ in range(8):  # fill the accept queue until a connection no longer completes
                client = socket.socket()
                held.append(client)
                client.settimeout(0.3)
                try:
                    client.connect(("127.0.0.1", port))
                except (TimeoutError, socket.timeout):
                    break
            else:
                pytest.fail("could not make a local connection hang")
            yield port
        finally:
            for client in held:
                client.close()


# ----------------------------------------------------------------------------- before any download


def test_names_that_do_not_resolve_stop_the_fetch_at_once(tmp_path, monkeypatch, capsys):
    """`attnbook fetch glove` (276 files of two hosts): one look-up per host, the error naming the fix."""
    resolver = Resolver(budget=2)
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    start = time.monotonic()

    status = F.main(["glove", "--dest", str(tmp_path / "data")])

    elapsed = time.monotonic() - start
    out = capsys.readouterr()
    assert status == 1
    assert elapsed < PROBE * 2 + SLACK, f"{elapsed:.1f} s"
    assert sorted(resolver.names) == ["files.pythonhosted.org", "raw.githubusercontent.com"]
    assert "checking that raw.githubusercontent.com:443, files.pythonhosted.org:443 can be reached" in out.err
    assert "276 to get" in out.err and "276 failed" in out.err
    assert_names_the_fix(out.err, ["raw.githubusercontent.com", "files.pythonhosted.org"], "glove")
    assert "the name does not resolve (Temporary failure in name resolution)" in out.err
    assert "failed: " not in out.err  # the hosts are named once, not 276 lines of files


def test_connections_that_hang_stop_the_fetch_within_the_probe_timeout(tmp_path, monkeypatch):
    with hanging_port() as port:
        resolver = Resolver(budget=2, answer=("127.0.0.1", port))
        monkeypatch.setattr(socket, "getaddrinfo", resolver)
        m = small_manifest(twelve_files(), TWO_HOSTS)
        start = time.monotonic()

        with pytest.raises(F.FetchError) as info:
            F.fetch(["docs", "vec"], tmp_path / "data", manifest=m, progress=None)

        elapsed = time.monotonic() - start
    assert isinstance(info.value, F.UnreachableHostError)
    assert elapsed < PROBE * 2 + SLACK, f"{elapsed:.1f} s"
    assert elapsed >= PROBE * 0.9  # the probe waited for the connection, it did not give up early
    assert sorted(resolver.names) == ["example.org", "files.example.org"]
    assert_names_the_fix(str(info.value), ["example.org", "files.example.org"], "docs vec")
    assert f"no answer to a connection within {PROBE:g} s" in str(info.value)
    assert info.value.report.counts() == {"failed": 12}
    assert "12 file(s) of docs, vec not fetched" in str(info.value)


def test_a_resolver_that_never_answers_is_bounded_too(tmp_path, monkeypatch):
    calls: list[str] = []

    def silent(host: Any, *args: Any, **kwargs: Any) -> list:
        calls.append(str(host))
        assert len(calls) <= 2, f"{len(calls)} name look-ups for 2 hosts: looked up again for every file"
        time.sleep(PROBE * 4)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", silent)
    m = small_manifest(twelve_files(), TWO_HOSTS)
    start = time.monotonic()
    with pytest.raises(F.FetchError) as info:
        F.fetch(["docs", "vec"], tmp_path / "data", manifest=m, progress=None)
    assert time.monotonic() - start < PROBE * 2 + SLACK
    assert len(calls) == 2
    assert isinstance(info.value, F.UnreachableHostError)
    assert f"the name did not resolve within {PROBE:g} s" in str(info.value)


def test_files_of_reachable_sources_are_fetched_and_the_others_not_tried(tmp_path, monkeypatch):
    local = tmp_path / "local"
    local.mkdir()
    (local / "a.txt").write_bytes(b"a\n")
    files = {"docs": {"a.txt": {"source": "local", "path": "a.txt", "sha256": None, "size": None}},
             "vec": twelve_files()["vec"]}
    m = small_manifest(files, {"local": local.as_uri() + "/", "wheels": TWO_HOSTS["wheels"]})
    resolver = Resolver(budget=1)
    monkeypatch.setattr(socket, "getaddrinfo", resolver)

    with pytest.raises(F.FetchError) as info:
        F.fetch(["docs", "vec"], tmp_path / "data", manifest=m, progress=None)

    assert isinstance(info.value, F.UnreachableHostError)
    assert resolver.names == ["files.example.org"]
    assert (tmp_path / "data/docs/a.txt").read_bytes() == b"a\n"
    report = info.value.report
    assert report.counts() == {"unverified": 1, "failed": 4}
    assert report.files[-1].detail == "not tried: files.example.org:443 cannot be reached"
    assert list(info.value.hosts) == ["files.example.org:443"]


def test_a_mirror_is_probed_instead_of_the_upstream_hosts(tmp_path, monkeypatch):
    resolver = Resolver(budget=1)
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    m = small_manifest(twelve_files(), TWO_HOSTS)
    with pytest.raises(F.FetchError) as info:
        F.fetch(["docs", "vec"], tmp_path / "data", base_url="https://mirror.example:8443/m",
                manifest=m, progress=None)
    assert resolver.names == ["mirror.example"]
    assert isinstance(info.value, F.UnreachableHostError)
    assert list(info.value.hosts) == ["mirror.example:8443"]


def test_a_proxy_is_probed_instead_of_the_host(monkeypatch):
    monkeypatch.setenv("https_proxy", "http://proxy.example:3128")
    assert F.source_host("https://raw.githubusercontent.com/o/r/c/x") == (
        "proxy.example", 3128, "proxy.example:3128 (the https proxy, for raw.githubusercontent.com)")
    monkeypatch.setenv("no_proxy", "raw.githubusercontent.com")
    assert F.source_host("https://raw.githubusercontent.com/o/r/c/x")[:2] == ("raw.githubusercontent.com", 443)
    assert F.source_host("file:///srv/mirror/x") is None


# ----------------------------------------------------------------------------- during the downloads


class _Flaky(http.server.BaseHTTPRequestHandler):
    """Serves ``/up/<name>`` as ``<name>`` bytes, answering 503 to the first request of each path."""

    seen: dict[str, int] = {}

    def do_GET(self) -> None:  # noqa: N802 (the handler's name)
        n = self.seen[self.path] = self.seen.get(self.path, 0) + 1
        if n == 1:
            self.send_error(503)
            return
        body = self.path.rsplit("/", 1)[-1].encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def flaky_server() -> Iterator[tuple[str, dict[str, int]]]:
    seen: dict[str, int] = {}
    handler = type("Handler", (_Flaky,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_a_reachable_host_still_gets_its_retries(tmp_path):
    files = {"docs": {n: {"source": "up", "path": n, "sha256": None, "size": None} for n in ("a.txt", "b.txt")}}
    m = small_manifest(files, {"up": "https://example.org/up/"})
    with flaky_server() as (base, seen):
        report = F.fetch(["docs"], tmp_path / "data", base_url=base, manifest=m, progress=None)
    assert report.counts() == {"unverified": 2}
    assert seen == {"/up/a.txt": 2, "/up/b.txt": 2}  # a 503 is tried again
    assert (tmp_path / "data/docs/a.txt").read_bytes() == b"a.txt"


def test_a_name_that_stops_resolving_mid_fetch_is_not_tried_again(tmp_path, monkeypatch):
    """The probe reaches the host; then its name fails: that file is not retried and the host's others not tried."""
    with socket.socket() as server:  # accepts connections (the kernel completes them) and never answers
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        resolver = Resolver(budget=2, answer=server.getsockname(), after=1)
        monkeypatch.setattr(socket, "getaddrinfo", resolver)
        m = small_manifest({"docs": twelve_files()["docs"]}, {"up": TWO_HOSTS["up"]})
        start = time.monotonic()
        with pytest.raises(F.FetchError) as info:
            F.fetch(["docs"], tmp_path / "data", manifest=m, progress=None, workers=1, timeout=2)
        elapsed = time.monotonic() - start
    assert isinstance(info.value, F.UnreachableHostError)
    assert resolver.names == ["example.org", "example.org"]  # the probe, then the first file: no retry
    assert elapsed < PROBE + SLACK, f"{elapsed:.1f} s"
    assert info.value.report.counts() == {"failed": 8}
    assert_names_the_fix(str(info.value), ["example.org"], "docs")


# ----------------------------------------------------------------------------- a chapter's set-up


def test_chapter_2_set_up_with_no_data_and_no_resolver_names_the_fix(tmp_path, monkeypatch, capsys):
    """What `attnbook run 02` runs first (its set-up cell's ensure_data), with no data folder and no name
    resolving: one line says what is checked, then the error names the fix, well under a minute."""
    resolver = Resolver(budget=2)
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    chapter = "02_clark_probing"
    start = time.monotonic()

    with pytest.raises(F.FetchError) as info:
        ensure_data(chapter, tmp_path / "no-data")

    elapsed = time.monotonic() - start
    out = capsys.readouterr()
    assert elapsed < PROBE * 2 + SLACK, f"{elapsed:.1f} s"
    assert f"{chapter} reads {', '.join(CHAPTER_DATASETS[chapter])}" in out.out
    assert "checking that raw.githubusercontent.com:443, files.pythonhosted.org:443 can be reached" in out.err
    assert sorted(resolver.names) == ["files.pythonhosted.org", "raw.githubusercontent.com"]
    assert_names_the_fix(str(info.value), ["raw.githubusercontent.com", "files.pythonhosted.org"],
                         " ".join(CHAPTER_DATASETS[chapter]))


def test_the_probe_of_reachable_hosts_is_quiet_and_quick():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        port = server.getsockname()[1]
        start = time.monotonic()
        assert F.probe_hosts([("127.0.0.1", port, f"127.0.0.1:{port}")], timeout=PROBE) == {}
        assert time.monotonic() - start < PROBE
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, not listening: refused
        down = F.probe_hosts([("127.0.0.1", port, "here")], timeout=PROBE)
    assert down == {"here": "no connection (Connection refused)"}


def test_the_packaged_hosts_are_the_ones_probed():
    """Every source of the manifest downloads over HTTPS from a named host, so the probe covers it."""
    hosts = {F.source_host(s["upstream"]) for s in Manifest.load().sources.values()}
    assert all(h is not None and h[1] == 443 for h in hosts)
    assert {h[0] for h in hosts} == {"raw.githubusercontent.com", "files.pythonhosted.org", "dl.fbaipublicfiles.com"}
