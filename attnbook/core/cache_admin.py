"""What the disk cache holds, whether it is intact, and removing part of it safely (``attnbook cache``).

The cache root (:func:`attnbook.core.paths.cache_dir`: ``$ATTNBOOK_CACHE`` or ``~/.cache/attnbook``) holds two
layouts, both written atomically by their own modules:

* ``<namespace>/<key>.npz`` + ``<key>.json`` (:mod:`attnbook.core.cache`): one result's arrays and its metadata,
  ``{"parts": ..., "sha256": <the npz's SHA-256>}``, the JSON written last. ``namespace`` is the folder a
  ``@cache.memoized(namespace)`` function (or a ``cached_arrays`` caller) names; its *kind* here is that folder's
  name. The JSON's ``parts["function"]`` records which function computed the entry (one namespace may hold
  several functions: ``head_sweeps`` does), shown as the entry's *source*. Namespaces are spelled in lower case
  with words joined by ``_`` (:data:`attnbook.core.cache.NAMESPACE_STYLE`).
* ``finetune/<key>/`` (:mod:`attnbook.engine.checkpoints`): one fine-tuned classifier (weights, config,
  ``meta.json``), its ``COMPLETE`` file (written last) recording the SHA-256 of every other file. Kind
  ``checkpoint``; its source is the task, initialisation, seed and share of training its ``meta.json`` records.

Beside them, ``code-hashes.json`` remembers the code hashes of the package's modules (:mod:`attnbook.core.code_keys`);
it is not an entry and is left alone, like the ``models`` and ``datasets`` folders.

An interrupted writer leaves ``.<key>[.npz|.json].tmp-<pid>@<host>-*`` (a file, or a checkpoint's folder) beside
them: a *stale temp* entry once process ``pid`` of this machine no longer runs, a *writing* one while it does or when
another machine wrote it (a cache on a shared filesystem; never removed here: :func:`attnbook.core.io.writer_alive`).

Chapter: an entry records the function and the content of its inputs, not which chapter asked for it (chapters
share functions: the head atlas of chapter 8 reruns the Clark chapters' pipelines, chapters 5 and 6 both use
:mod:`attnbook.studies.heads_off`). Which chapter used it is recorded the other way round: each chapter's
``<chapter>.provenance.json`` in the results folder lists the entries its run read or wrote
(:func:`attnbook.core.cache.used_entries`; :func:`book_record` reads them), so ``list`` groups the entries by the
chapters of the book built there and ``prune --unused`` removes every entry that book did not use (what a rebuild
of the same book with the same code needs); nothing is guessed from names.

Removal never leaves half an entry where a reader could take it for a whole one: an array entry's JSON (its
commit marker, written last) goes first, so an interrupted removal leaves at most data without metadata, which
no reader loads and :func:`verify` and :func:`prune` report and remove; a checkpoint folder is first renamed to
a temporary name (atomic), then deleted. Only files the walk recognised as entries are removed, each checked to
lie inside the root; other files are listed and left alone, and a folder that holds no cache entry but other
files is refused (:class:`CacheRootError`). Pruning while a build runs is safe for the build's own writes (temp
files of running writers are skipped) but may remove an entry the build is about to read (it then recomputes it).

Ages are from files' modification times: when an entry was *written*. Reading an entry does not renew it.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnbook.core.code_keys import MEMO_FILE
from attnbook.core.errors import AttnbookError
from attnbook.core.io import sha256_file, temp_prefix, writer_alive
from attnbook.core.paths import cache_dir, project_root

#: the folder of fine-tuned checkpoints under the cache root, and their kind here
CHECKPOINTS_FOLDER = "finetune"
CHECKPOINT_KIND = "checkpoint"
#: a checkpoint folder's files: the weights, and the checksum file written last (:mod:`attnbook.engine.checkpoints`
#: writes them under these names, from here)
COMPLETE_FILE = "COMPLETE"
WEIGHTS_FILE = "model.safetensors"
#: :func:`attnbook.core.cache.key` is 24 hex digits (importing that module would load NumPy; a test checks it)
_KEY = r"[0-9a-f]{24}"
_ARRAY_FILE = re.compile(rf"^(?P<key>{_KEY})\.(?P<ext>npz|json)$")
_TEMP = re.compile(rf"^\.(?P<key>{_KEY})(?:\.(?:npz|json))?\.tmp-(?P<pid>\d+)(?:@[A-Za-z0-9._]+)?-")

#: entry statuses; the last three are problems
OK, UNCHECKED, WRITING = "ok", "unchecked", "writing"
CORRUPT, INCOMPLETE, STALE_TEMP = "corrupt", "incomplete", "stale-temp"
PROBLEMS = (CORRUPT, INCOMPLETE, STALE_TEMP)


class CacheRootError(AttnbookError):
    """The cache root is missing or does not look like an attnbook cache."""


class CacheSelectorError(AttnbookError, ValueError):
    """A prune was asked for without saying which entries to remove."""


@dataclass(frozen=True)
class Entry:
    """One cache entry: every file that belongs to it, in the order they are removed."""

    kind: str  #: the namespace folder, or ``"checkpoint"`` (``finetune/<key>/``)
    key: str
    paths: tuple[Path, ...]
    size: int  #: bytes, all its files together
    mtime: float  #: the newest modification time of its files
    status: str  #: ``ok`` (checksums recomputed), ``unchecked``, ``writing``, or a problem (:data:`PROBLEMS`)
    detail: str = ""  #: what is wrong, for a problem
    source: str = ""  #: what computed it: the memoized function, or the checkpoint's task/init/seed
    chapter: str = "unknown"

    @property
    def age_days(self) -> float:
        return max(0.0, time.time() - self.mtime) / 86400

    @property
    def problem(self) -> bool:
        return self.status in PROBLEMS

    @property
    def temp(self) -> bool:
        return self.status in (WRITING, STALE_TEMP)

    @property
    def name(self) -> str:
        """Where it is, relative to the root: ``kind-folder/key`` (a temp file: its own name)."""
        first = self.paths[0]
        return f"{first.parent.name}/{first.name if self.temp else self.key}"


@dataclass(frozen=True)
class Problem:
    """An entry that is corrupt, half-written or left by an interrupted writer."""

    entry: Entry

    @property
    def message(self) -> str:
        return f"{self.entry.name} ({self.entry.kind}): {self.entry.status}: {self.entry.detail}"


# ---------------------------------------------------------------------------------------------- the walk
def resolve_root(root: Path | str | None = None) -> Path:
    """``root``, or the configured cache (:func:`~attnbook.core.paths.cache_dir`); it must be a folder."""
    if root is None:
        path = cache_dir()
    else:
        path = Path(root).expanduser()
    if not path.is_dir():
        raise CacheRootError(f"no attnbook cache at {path} (not a folder). {_where_hint()}")
    return path


def _where_hint() -> str:
    now = os.environ.get("ATTNBOOK_CACHE")
    return ("Set $ATTNBOOK_CACHE to the attnbook cache folder (now: "
            + (f"{now})." if now else "unset, so the default ~/.cache/attnbook)."))


#: where `attnbook fetch model` assembles model folders inside the cache (attnbook.data.models_fetch)
MODELS_FOLDER = "models"
#: where the data readers keep their corpora as saved ``datasets.Dataset`` folders (attnbook.data.hf)
DATASETS_FOLDER = "datasets"


def _scan(root: Path | str | None, check: bool) -> tuple[Path, list[Entry], list[Path]]:
    """The root, its entries and the paths in it that are not cache entries (left alone)."""
    root = resolve_root(root)
    found: list[Entry] = []
    foreign: list[Path] = []
    for folder in sorted(root.iterdir()):
        if folder.is_symlink() or not folder.is_dir() or folder.name.startswith("."):
            foreign.append(folder)
            continue
        kind = CHECKPOINT_KIND if folder.name == CHECKPOINTS_FOLDER else folder.name
        arrays: dict[str, dict[str, Path]] = defaultdict(dict)
        for path in sorted(folder.iterdir()):
            try:
                if path.is_symlink():
                    foreign.append(path)
                elif m := _TEMP.match(path.name):
                    found.append(_temp_entry(kind, m["key"], path))
                elif path.is_file() and (m := _ARRAY_FILE.match(path.name)):
                    arrays[m["key"]][m["ext"]] = path
                elif path.is_dir() and kind == CHECKPOINT_KIND and re.fullmatch(_KEY, path.name):
                    found.append(_checkpoint_entry(path, check))
                else:
                    foreign.append(path)
            except FileNotFoundError:  # removed while we looked (a writer renaming, another prune)
                continue
        for key, files in arrays.items():
            try:
                found.append(_array_entry(kind, key, files, check))
            except FileNotFoundError:
                continue
    # assembled model folders (attnbook fetch model), the readers' datasets (attnbook.data.hf) and the code hashes
    # (attnbook.core.code_keys): left alone
    kept = {root / MODELS_FOLDER, root / DATASETS_FOLDER, root / MEMO_FILE}
    strangers = [p for p in foreign if p not in kept and p.parent not in kept]
    if not found and strangers:
        foreign = strangers
        shown = ", ".join(p.name for p in foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        raise CacheRootError(
            f"{root} does not look like an attnbook cache: it holds no cache entries (<kind>/<key>.npz + .json, "
            f"finetune/<key>/) but other files ({shown}); refusing to read or change it. {_where_hint()}")
    if found and root.resolve() in (Path("/"), Path.home().resolve()):
        raise CacheRootError(f"refusing to treat {root} as the attnbook cache. {_where_hint()}")
    return root, found, foreign


def _files(path: Path) -> list[Path]:
    if path.is_dir() and not path.is_symlink():
        return [p for p in path.rglob("*") if p.is_file() and not p.is_symlink()]
    return [path]


def _size_mtime(paths: Iterable[Path]) -> tuple[int, float]:
    stats = [f.lstat() for p in paths for f in _files(p)]
    return sum(s.st_size for s in stats), max((s.st_mtime for s in stats), default=0.0)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _chapter(parts: Any) -> str:
    chapter = parts.get("chapter") if isinstance(parts, dict) else None
    return chapter if isinstance(chapter, str) and chapter else "unknown"


def _temp_entry(kind: str, key: str, path: Path) -> Entry:
    size, mtime = _size_mtime([path])
    alive = writer_alive(path)
    return Entry(kind, key, (path,), size, mtime, WRITING if alive else STALE_TEMP,
                 "" if alive else "left by an interrupted write (its process no longer runs)")


def _array_entry(kind: str, key: str, files: dict[str, Path], check: bool) -> Entry:
    npz, meta = files.get("npz"), files.get("json")
    paths = tuple(p for p in (meta, npz) if p is not None)  # the JSON first: without it no reader loads the npz
    size, mtime = _size_mtime(paths)
    record = _read_json(meta) if meta else None
    parts = record.get("parts") if isinstance(record, dict) else None
    source = str(parts.get("function", "")) if isinstance(parts, dict) else ""
    status, detail = UNCHECKED, ""
    if npz is None:
        status, detail = INCOMPLETE, "metadata (.json) without its data (.npz)"
    elif meta is None:
        status, detail = INCOMPLETE, "data (.npz) without its metadata (.json): a write stopped before it finished"
    elif not isinstance(record, dict) or not isinstance(record.get("sha256"), str):
        status, detail = CORRUPT, "its .json is unreadable or records no checksum"
    elif check:
        ok = sha256_file(npz) == record["sha256"]
        status, detail = (OK, "") if ok else (CORRUPT, "its .npz fails the checksum its .json records")
    return Entry(kind, key, paths, size, mtime, status, detail, source, _chapter(parts))


def _checkpoint_entry(folder: Path, check: bool) -> Entry:
    size, mtime = _size_mtime([folder])
    meta = _read_json(folder / "meta.json")
    parts = meta.get("parts") if isinstance(meta, dict) else None
    source = ""
    if isinstance(parts, dict):
        source = f"{parts.get('task', '?')} {parts.get('init', '?')} seed {parts.get('seed', '?')}"
        if parts.get("fraction", 1.0) != 1.0:
            source += f" at {parts['fraction']:g} of training"
    status, detail = UNCHECKED, ""
    record = _read_json(folder / COMPLETE_FILE)
    checks = record.get("sha256") if isinstance(record, dict) else None
    if not (folder / COMPLETE_FILE).exists():
        status, detail = INCOMPLETE, f"no {COMPLETE_FILE} file: its write never finished"
    elif not isinstance(checks, dict) or WEIGHTS_FILE not in checks or "config.json" not in checks:
        status, detail = CORRUPT, f"its {COMPLETE_FILE} file is unreadable or lists no weights/config"
    elif check:
        bad = [n for n, d in sorted(checks.items())
               if not (folder / n).is_file() or sha256_file(folder / n) != d]
        status, detail = (OK, "") if not bad else (CORRUPT, f"fails its checksums: {', '.join(bad)}")
    return Entry(CHECKPOINT_KIND, folder.name, (folder,), size, mtime, status, detail, source, _chapter(parts))


# ---------------------------------------------------------------------------------------------- reading
def entries(root: Path | str | None = None, *, check: bool = False) -> list[Entry]:
    """Every entry of the cache at ``root`` (default: the configured one), by kind then key.

    ``check=False`` (fast) tells complete from half-written entries without reading data: complete ones are
    ``unchecked``; ``check=True`` recomputes every checksum (``ok`` or ``corrupt``), as :func:`verify` does.
    """
    return sorted(_scan(root, check)[1], key=lambda e: (e.kind, e.key, e.paths[0].name))


def foreign(root: Path | str | None = None) -> list[Path]:
    """The files and folders in the cache root that are not cache entries (never removed)."""
    return _scan(root, False)[2]


def total_size(root: Path | str | None = None) -> int:
    """Bytes of all cache entries at ``root``."""
    return sum(e.size for e in entries(root))


def by_kind(items: Sequence[Entry]) -> dict[str, list[Entry]]:
    groups: dict[str, list[Entry]] = defaultdict(list)
    for e in items:
        groups[e.kind].append(e)
    return dict(sorted(groups.items()))


@dataclass(frozen=True)
class BookRecord:
    """Which cache entries the chapters of the book in a results folder used (their provenance files)."""

    folder: Path
    profiles: dict[str, str]  #: chapter -> the profile it was built with
    uses: dict[str, frozenset[str]]  #: entry name (``kind-folder/key``) -> the chapters that read or wrote it
    unrecorded: tuple[str, ...]  #: chapters whose provenance lists no entries (written before they were recorded)

    def chapters_of(self, entry: Entry) -> frozenset[str]:
        return self.uses.get(entry.name, frozenset())

    def describe(self) -> str:
        profiles = ", ".join(sorted(set(self.profiles.values()))) or "none"
        return f"the book in {self.folder} ({len(self.profiles)} chapters; profile {profiles})"


def book_record(results: Path | str | None = None) -> BookRecord:
    """The entries each chapter in ``results`` (default: the book's results folder) read or wrote, from its
    ``<chapter>.provenance.json``."""
    if results is None:  # results_dir() without creating it
        env = os.environ.get("ATTNBOOK_RESULTS")
        results = Path(env) if env else project_root() / "book" / "results"
    folder = Path(results).expanduser()
    profiles: dict[str, str] = {}
    uses: dict[str, set[str]] = defaultdict(set)
    unrecorded = []
    for path in sorted(folder.glob("*.provenance.json")) if folder.is_dir() else []:
        record = _read_json(path)
        if not isinstance(record, dict):
            continue
        chapter = str(record.get("chapter") or path.name.split(".")[0])
        profiles[chapter] = str(record.get("profile"))
        if not isinstance(record.get("cache_entries"), list):
            unrecorded.append(chapter)
            continue
        for name in record["cache_entries"]:
            uses[str(name)].add(chapter)
    return BookRecord(folder, profiles, {k: frozenset(v) for k, v in uses.items()}, tuple(unrecorded))


def by_chapter(items: Sequence[Entry], record: BookRecord | None = None) -> dict[str, list[Entry]]:
    """Entries by chapter: with a :class:`BookRecord`, every chapter that used an entry (an entry shared by
    chapters is in each group) and ``"used by no chapter"``; without one, the chapter in an entry's parts."""
    groups: dict[str, list[Entry]] = defaultdict(list)
    for e in items:
        if record is None:
            groups[e.chapter].append(e)
            continue
        for chapter in sorted(record.chapters_of(e)) or [UNUSED]:
            groups[chapter].append(e)
    return dict(sorted(groups.items()))


#: :func:`by_chapter`'s group of the entries no chapter of the book used
UNUSED = "used by no chapter"


def verify(root: Path | str | None = None) -> list[Problem]:
    """The entries that are corrupt (a checksum fails, metadata unreadable), half-written (data without
    metadata, a checkpoint without ``COMPLETE``) or temp files of writers that no longer run. Recomputes every
    checksum the way :mod:`attnbook.core.cache` and :mod:`attnbook.engine.checkpoints` record them."""
    return [Problem(e) for e in entries(root, check=True) if e.problem]


# ---------------------------------------------------------------------------------------------- removing
@dataclass
class PruneReport:
    """What a prune removed (or, dry, would remove) and what it could not."""

    root: Path
    dry_run: bool
    removed: list[Entry] = field(default_factory=list)
    left: int = 0  #: entries not selected (kept)
    writing: list[Entry] = field(default_factory=list)  #: temp files of running writers, never removed
    failed: list[tuple[Entry, str]] = field(default_factory=list)
    unknown_kinds: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  #: the kinds the cache holds

    @property
    def freed(self) -> int:
        return sum(e.size for e in self.removed)

    def text(self, *, each: bool = True) -> str:
        verb = "would remove" if self.dry_run else "removed"
        head = f"{verb} {len(self.removed)} entries, {human_size(self.freed)}, from {self.root}"
        lines = [f"{head}; {self.left} entries left"]
        if each:
            lines += [f"  {e.name:48s} {e.kind:24s} {human_size(e.size):>10s}  {human_age(e.age_days)}"
                      + (f"  ({e.status})" if e.status not in (OK, UNCHECKED) else "") for e in self.removed]
        for kind in self.unknown_kinds:
            lines.append(f"no entries of kind {kind!r} here (kinds: {', '.join(self.kinds) or 'none'})")
        if self.writing:
            lines.append(f"left {len(self.writing)} temp files of writers still running")
        lines += [f"could not remove {e.name}: {why}" for e, why in self.failed]
        if self.dry_run and self.removed:
            lines.append("nothing was removed (dry run)")
        return "\n".join(lines)


def prune(root: Path | str | None = None, *, older_than: float | None = None, kinds: Iterable[str] | None = None,
          keep: int | None = None, everything: bool = False, unused_by: BookRecord | None = None,
          dry_run: bool = True) -> PruneReport:
    """Remove the entries every given selector picks: written more than ``older_than`` days ago; of one of
    ``kinds`` (namespace folders, ``"checkpoint"``); all but the ``keep`` newest complete entries of each kind;
    not used by any chapter of the book ``unused_by`` records (:func:`book_record`; it refuses when a chapter
    there has no record of its entries); ``everything=True`` picks every entry. With no selector it refuses
    (:class:`CacheSelectorError`). Temp files of running writers are never removed. ``dry_run`` (the default)
    only reports what would go."""
    kinds = sorted({CHECKPOINT_KIND if k == CHECKPOINTS_FOLDER else k for k in (kinds or ())})
    if older_than is None and not kinds and keep is None and not everything and unused_by is None:
        raise CacheSelectorError(
            "say which cache entries to remove: --unused (what the book in the results folder did not use), "
            "--older-than DAYS, --kind K (repeatable; see 'attnbook cache list') or --all for every entry; add "
            "--dry-run to see what would go first")
    if unused_by is not None and (unused_by.unrecorded or not unused_by.profiles):
        missing = (f"chapters {', '.join(unused_by.unrecorded)} record no cache entries (built before attnbook "
                   "recorded them)" if unused_by.unrecorded else "no chapter's provenance file is there")
        raise CacheSelectorError(
            f"cannot tell what {unused_by.describe()} uses: {missing}. Build the book first (make book, or "
            "attnbook build --chapters ...), point --results at another results folder, or prune by --kind or "
            "--older-than")
    if older_than is not None and older_than < 0:
        raise CacheSelectorError(f"--older-than takes a number of days >= 0, not {older_than}")
    if keep is not None and keep < 0:
        raise CacheSelectorError(f"keep takes a number of entries >= 0, not {keep}")
    root, found, _ = _scan(root, False)
    present = sorted({e.kind for e in found})
    report = PruneReport(root, dry_run, kinds=present, unknown_kinds=[k for k in kinds if k not in present])
    spared: set[int] = set()
    if keep is not None:
        for group in by_kind([e for e in found if not e.temp and not e.problem]).values():
            spared |= {id(e) for e in sorted(group, key=lambda e: e.mtime, reverse=True)[:keep]}
    for e in found:
        if e.status == WRITING:
            report.writing.append(e)
        elif (id(e) not in spared and (not kinds or e.kind in kinds)
              and (older_than is None or e.age_days > older_than)
              and (unused_by is None or not unused_by.chapters_of(e))):
            report.removed.append(e)
    report.left = len(found) - len(report.removed)
    if not dry_run:
        done = []
        for e in report.removed:
            try:
                _remove(e, root)
                done.append(e)
            except OSError as exc:
                report.failed.append((e, str(exc)))
        report.left += len(report.removed) - len(done)
        report.removed = done
    return report


def _inside(path: Path, root: Path) -> None:
    """Refuse to remove anything that is a symlink or does not lie in a folder directly inside the cache root."""
    real_root = root.resolve()
    if path.is_symlink() or path.parent.parent.resolve() != real_root \
            or not path.resolve().is_relative_to(real_root):
        raise OSError(f"refusing to remove {path}: not an entry inside the cache root {root}")


def _remove(entry: Entry, root: Path) -> None:
    for path in entry.paths:
        _inside(path, root)
    for path in entry.paths:  # the JSON (commit marker) first
        if path.is_dir():
            if not entry.temp:  # out of the readers' sight at once; a crash leaves a stale temp folder
                hidden = path.with_name(f"{temp_prefix(path.name)}removing")
                os.rename(path, hidden)
                path = hidden
            shutil.rmtree(path)
        else:
            try:
                path.unlink()
            except FileNotFoundError:
                pass


# ---------------------------------------------------------------------------------------------- text
def human_size(n: float) -> str:
    """``1536`` -> ``"1.5 KiB"``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def human_age(days: float) -> str:
    """An age in days as text: ``"40 s"``, ``"12 min"``, ``"5.0 h"``, ``"3.2 d"``."""
    seconds = days * 86400
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{days:.1f} d"


def table(items: Sequence[Entry], root: Path, *, each: bool = False, others: Sequence[Path] = (),
          record: BookRecord | None = None) -> str:
    """The ``attnbook cache list`` text: one line per kind (``each``: one per entry too), then by chapter (with
    ``record``: the chapters of that book that used each entry)."""
    lines = [f"attnbook cache at {root}: {len(items)} entries, {human_size(sum(e.size for e in items))}"]
    if not items:
        return "\n".join(lines + ["(empty)"])
    lines.append(f"  {'kind':28s} {'entries':>7s} {'size':>10s} {'newest':>8s} {'oldest':>8s} {'problems':>8s}")
    for kind, group in by_kind(items).items():
        ages = [e.age_days for e in group]
        problems = sum(e.problem for e in group)
        lines.append(f"  {kind:28s} {len(group):7d} {human_size(sum(e.size for e in group)):>10s} "
                     f"{human_age(min(ages)):>8s} {human_age(max(ages)):>8s} {problems or '-':>8}")
        if each:
            for e in sorted(group, key=lambda e: e.mtime, reverse=True):
                status = e.status if e.status != UNCHECKED else ""
                lines.append(f"    {e.name:46s} {human_size(e.size):>10s} {human_age(e.age_days):>8s} "
                             f"{status:10s} {e.source}".rstrip())
    if record is not None and record.profiles and not record.unrecorded:
        lines.append(f"by chapter of {record.describe()}; an entry several chapters used is under each:")
        lines += [f"  {c:28s} {len(g):7d} {human_size(sum(e.size for e in g)):>10s}"
                  for c, g in by_chapter(items, record).items()]
    else:
        chapters = ", ".join(f"{c}: {len(g)} entries, {human_size(sum(e.size for e in g))}"
                             for c, g in by_chapter(items).items())
        lines.append(f"by chapter: {chapters}" + (
            " (entries record the function and inputs that made them, not the chapter that asked; the chapters of "
            f"a built book list theirs: none recorded in {record.folder if record else 'the results folder'})"
            if "unknown" in by_chapter(items) else ""))
    lines += [
              ("ages: since written (reading an entry does not renew it); checksums are not recomputed here: "
               "attnbook cache verify")]
    if others:
        lines.append(f"not cache entries, left alone: {', '.join(str(p.relative_to(root)) for p in others)}")
    return "\n".join(lines)


def verify_text(problems: Sequence[Problem], root: Path, n_entries: int) -> str:
    """The ``attnbook cache verify`` text: each broken entry and how to remove it."""
    if not problems:
        return f"attnbook cache at {root}: all {n_entries} entries pass their checksums"
    kinds = sorted({p.entry.kind for p in problems})
    paths = [str(path) for p in problems for path in p.entry.paths]
    return "\n".join([
        f"attnbook cache at {root}: {len(problems)} of {n_entries} entries are broken",
        *(f"  {p.message}" for p in problems),
        "A broken entry is recomputed (a checkpoint: trained again) when next needed. Remove them now with",
        "  rm -r " + " ".join(shlex.quote(p) for p in paths),
        "or every entry of their kind with",
        "  attnbook cache prune " + " ".join(f"--kind {shlex.quote(k)}" for k in kinds),
    ])


def run(args: Any) -> int:
    """``attnbook cache list | size | verify | prune`` (arguments: :mod:`attnbook.chapters.cli`)."""
    if args.cache_command == "list":
        root, found, others = _scan(None, False)
        print(table(sorted(found, key=lambda e: (e.kind, e.key)), root, each=args.all, others=others,
                    record=book_record(getattr(args, "results", None))))
    elif args.cache_command == "size":
        root, found, _ = _scan(None, False)
        print(f"{human_size(sum(e.size for e in found))} in {len(found)} entries "
              f"({sum(e.size for e in found)} bytes) at {root}")
    elif args.cache_command == "verify":
        root, found, _ = _scan(None, True)
        problems = [Problem(e) for e in sorted(found, key=lambda e: (e.kind, e.key)) if e.problem]
        print(verify_text(problems, root, len(found)))
        return 1 if problems else 0
    elif args.cache_command == "prune":
        record = book_record(args.results) if args.unused else None
        report = prune(None, older_than=args.older_than, kinds=args.kind, everything=args.all, unused_by=record,
                       dry_run=args.dry_run)
        print((f"keeping what {record.describe()} used\n" if record else "") + report.text())
        return 1 if report.failed else 0
    return 0
