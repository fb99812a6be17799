"""What a fetch reports (:mod:`attnbook.data.fetch`): each file's status, the report of a run, and the errors, each
naming its fix."""
from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from attnbook.core.errors import AttnbookError


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
