"""What a fetch (:mod:`attnbook.data.fetch`) checks before it starts and what it reports: the destination is
writable and every source host answers (:func:`probe_hosts`), each file's status, the report of a run, and the
errors, each naming its fix."""
from __future__ import annotations

import os
import socket
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from attnbook.core.errors import AttnbookError

# ----------------------------------------------------------------------------- errors


class FetchError(AttnbookError, RuntimeError):
    """A file could not be fetched; ``failures`` holds one error per file when several failed."""

    def __init__(self, message: str, failures: Sequence[BaseException] = ()):
        super().__init__(message)
        self.failures = list(failures)
        #: set by :func:`fetch`: what happened to every file
        self.report: Report | None = None


class RemoteFileMissingError(FetchError):
    """The upstream (or mirror) has no file at the URL."""

    def __init__(self, url: str, key: str | None = None, reason: str = "not found"):
        self.url, self.key = url, key
        what = f" (needed for {key})" if key else ""
        super().__init__(
            f"remote file missing: {url}{what}: {reason}.\n"
            "  With --base-url, the mirror must keep the upstream URL path, e.g. "
            "<base_url>/<owner>/<repo>/<commit>/<path> for GitHub files.")


class ChecksumMismatchError(FetchError):
    """A downloaded or rebuilt file differs from the reference copy; it was not written."""

    def __init__(self, key: str, origin: str, expected: str, actual: str,
                 expected_size: int | None, actual_size: int):
        self.key, self.origin = key, origin
        self.expected, self.actual = expected, actual
        super().__init__(
            f"checksum mismatch for {key} (from {origin}):\n"
            f"  expected sha256 {expected} ({_bytes(expected_size)})\n"
            f"  actual   sha256 {actual} ({_bytes(actual_size)})\n"
            "  The file was refused and not written. The source differs from the copy this book "
            "was checked against (a changed upstream file, a bad mirror, or a truncated download).")


def _bytes(size: int | None) -> str:
    return "size not recorded" if size is None else f"{size:,} bytes"


class DestinationError(FetchError):
    """The destination folder cannot be written."""


class UnreachableHostError(FetchError):
    """A source host (or the mirror, or the proxy) does not resolve or does not answer; its files were not tried.

    ``hosts`` maps each unreachable ``host:port`` to the reason. Without ``datasets`` the message names the hosts
    only (one file's failure); with them it names the fix for the whole fetch.
    """

    def __init__(self, hosts: dict[str, str], datasets: Sequence[str] = (), dest: Path | None = None,
                 not_fetched: int = 0, failures: Sequence[BaseException] = ()):
        self.hosts = dict(hosts)
        lines = [f"cannot reach {host}: {reason}" for host, reason in self.hosts.items()]
        if datasets:
            names = " ".join(datasets)
            others = [f for f in failures if not isinstance(f, UnreachableHostError)]
            lines.append(f"{not_fetched} file(s) of {', '.join(datasets)} not fetched.")
            if others:
                more = f" (and {len(others) - 1} more)" if len(others) > 1 else ""
                lines.append(f"  also: {str(others[0]).splitlines()[0]}{more}")
            lines.append(
                f"  Fix: point ATTNBOOK_DATA at a folder that has the data (now: {dest}),\n"
                f"  or fetch from a mirror of the upstream files: attnbook fetch {names} --base-url URL "
                "(a chapter's set-up cell reads the mirror from ATTNBOOK_DATA_MIRROR),\n"
                f"  or run `attnbook fetch {names}` again where the network reaches "
                f"{', '.join(self.hosts)} (behind a proxy, set HTTPS_PROXY).")
        super().__init__("\n".join(lines), failures)


# ----------------------------------------------------------------------------- before a fetch starts


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def _refuse_read_only(path: Path) -> None:
    """Refuse to write under a folder without write permission bits, even as root.

    Root ignores permissions, so a read-only reference copy (like the project's
    ``shared/data``) is protected only if attnbook checks the mode itself.
    """
    folder = _nearest_existing(path)
    if folder.is_dir() and not folder.stat().st_mode & 0o222:
        raise DestinationError(
            f"{folder} is read-only: attnbook does not write into it.\n"
            "  Fetch into a writable folder: attnbook fetch DATASET --dest DIR, "
            "and point ATTNBOOK_DATA at it.")


def _check_writable(dest: Path) -> None:
    """Fail early, once, if nothing can be written into ``dest`` (e.g. the read-only reference copy)."""
    _refuse_read_only(dest)
    try:
        dest.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".attnbook-write-test-", dir=dest)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise DestinationError(
            f"cannot write into {dest} ({err.strerror or err}).\n"
            "  Fetch into a writable folder: attnbook fetch DATASET --dest DIR, "
            "and point ATTNBOOK_DATA at it.") from None


def source_host(url: str) -> tuple[str, int, str] | None:
    """``(host, port, label)`` a download of ``url`` connects to: the URL's host, or the proxy urllib would use for
    it; None for a local (``file://``) URL."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy and not urllib.request.proxy_bypass(parts.hostname):
        via = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        if via.hostname:
            port = via.port or (443 if via.scheme == "https" else 80)
            return via.hostname, port, f"{via.hostname}:{port} (the {parts.scheme} proxy, for {parts.hostname})"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return parts.hostname, port, f"{parts.hostname}:{port}"


_NO_ANSWER = "no answer"


def _probe_one(host: str, port: int, deadline: float, stage: dict[str, str], label: str) -> str | None:
    """Why ``host:port`` cannot be reached by ``deadline`` (``time.monotonic()``), or None if it accepts a
    connection. ``stage[label]`` says what is under way, for a probe that has not finished in time."""
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as err:
        return f"the name does not resolve ({getattr(err, 'strerror', None) or err})"
    stage[label] = "connecting"
    errors: list[str] = []
    for i, (family, kind, proto, _, address) in enumerate(addresses):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            with socket.socket(family, kind, proto) as sock:
                sock.settimeout(left / (len(addresses) - i))  # an address that hangs leaves time for the next
                sock.connect(address)
            return None
        except (TimeoutError, socket.timeout):
            errors.append(_NO_ANSWER)
        except OSError as err:
            errors.append(err.strerror or str(err))
    if errors and set(errors) == {_NO_ANSWER}:
        return _NO_ANSWER
    return f"no connection ({'; '.join(dict.fromkeys(errors)) or 'no address'})"


def probe_hosts(hosts: Iterable[tuple[str, int, str]], timeout: float) -> dict[str, str]:
    """The hosts among ``hosts`` (``(host, port, label)``) that cannot be reached, label -> reason.

    Each host's name must resolve and a TCP connection to its port be accepted within ``timeout`` seconds; the
    hosts are probed at the same time, so the whole probe takes ``timeout`` seconds at most, even where a resolver
    or a connection never answers.
    """
    hosts = list({h[2]: h for h in hosts}.values())
    deadline = time.monotonic() + timeout
    stage = {label: "resolving" for _, _, label in hosts}
    outcome: dict[str, str | None] = {}

    def run(host: str, port: int, label: str) -> None:
        outcome[label] = _probe_one(host, port, deadline, stage, label)

    threads = [threading.Thread(target=run, args=h, daemon=True, name=f"attnbook-probe-{h[2]}") for h in hosts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    late = {"resolving": f"the name did not resolve within {timeout:g} s",
            "connecting": f"no answer to a connection within {timeout:g} s"}
    unreachable: dict[str, str] = {}
    for _, _, label in hosts:
        reason = outcome.get(label, _NO_ANSWER)
        if reason == _NO_ANSWER:
            unreachable[label] = late[stage[label]]
        elif reason is not None:
            unreachable[label] = reason
    return unreachable


def unreachable_sources(urls: Mapping[str, str], say: Callable[[str], None],
                        timeout: float) -> tuple[dict[str, str], dict[str, str]]:
    """Probe the hosts of ``urls`` (file key -> URL) once each, saying which; returns the unreachable hosts
    (label -> reason) and the files not to try (key -> why)."""
    hosts = {key: source_host(url) for key, url in urls.items()}
    remote = {h[2]: h for h in hosts.values() if h is not None}
    if not remote:
        return {}, {}
    say(f"checking that {', '.join(remote)} can be reached ({timeout:g} s at most)")
    down = probe_hosts(remote.values(), timeout)
    return down, {key: f"not tried: {h[2]} cannot be reached" for key, h in hosts.items()
                  if h is not None and h[2] in down}


# ----------------------------------------------------------------------------- reports


@dataclass(frozen=True)
class FileStatus:
    """What happened to one file: ``key`` is ``folder/path`` in the data directory."""

    key: str
    status: str
    detail: str = ""


#: statuses that mean "this file is not as it should be"
PROBLEMS = frozenset({"failed", "missing", "mismatch"})


@dataclass
class Report:
    """The outcome of :func:`fetch` or :func:`verify`, one :class:`FileStatus` per file.

    Fetch statuses: ``downloaded``, ``rebuilt``, ``skipped`` (present and verified),
    ``unverified`` (written or present, no reference checksum), ``failed``.
    Verify statuses: ``ok``, ``missing``, ``mismatch``, ``unverified``.
    """

    action: str
    dest: Path
    files: list[FileStatus] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return dict(Counter(f.status for f in self.files))

    def problems(self) -> list[FileStatus]:
        return [f for f in self.files if f.status in PROBLEMS]

    def status_of(self, key: str) -> str | None:
        return next((f.status for f in self.files if f.key == key), None)

    @property
    def ok(self) -> bool:
        return not self.problems()

    def summary(self) -> str:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(self.counts().items())) or "no files"
        lines = [f"{self.action} {self.dest}: {counts}"]
        lines += [f"  {f.status}: {f.key}" + (f" ({f.detail})" if f.detail else "") for f in self.problems()]
        return "\n".join(lines)


def _print_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
