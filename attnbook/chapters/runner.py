"""Executing chapters with papermill into ``book/`` and building the book.

``run_chapter`` executes ``notebooks/<chapter>.ipynb`` with the profile and any
parameter overrides. The executed notebook is written to a temporary name and
moved to ``book/<chapter>.ipynb`` only when every cell succeeded, so a failing
chapter never replaces the last good page; its notebook is kept under
``book/_failed/`` and the error names the chapter, the cell and the exception.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

from attnbook.chapters.params import chapter_params, check_profile
from attnbook.chapters.publish import Progress, tidy
from attnbook.chapters.toc import CHAPTER_IDS, PAGES
from attnbook.core.errors import AttnbookError, ChapterExecutionError, ParameterError
from attnbook.core.io import atomic_path, temp_prefix, writer_alive
from attnbook.core.paths import project_root, results_dir

#: The chapters in book order (:mod:`attnbook.chapters.toc` holds the list).
CHAPTER_ORDER = CHAPTER_IDS


class BookBuildError(AttnbookError, RuntimeError):
    """Jupyter Book could not render the book."""


def notebooks_dir() -> Path:
    return project_root() / "notebooks"


def book_dir() -> Path:
    return project_root() / "book"


def available_chapters() -> list[str]:
    """Chapters whose notebook exists, in book order."""
    return [c for c in CHAPTER_ORDER if (notebooks_dir() / f"{c}.ipynb").exists()]


def resolve_chapter(name: str) -> str:
    """Accept ``01``, ``1``, ``01_clark_surface_patterns`` or a unique substring."""
    chapters = available_chapters()
    if name in chapters:
        return name
    if name.isdigit():
        matches = [c for c in chapters if c.startswith(f"{int(name):02d}_")]
    else:
        matches = [c for c in chapters if name in c]
    if len(matches) != 1:
        raise ParameterError(f"unknown chapter {name!r}; available: {', '.join(chapters)}")
    return matches[0]


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """``["n_segments=100", "model=embedded"]`` -> typed dict (YAML scalars: ints, floats, bools, lists)."""
    import yaml

    out: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise ParameterError(f"parameters are key=value, got {pair!r}")
        key, value = pair.split("=", 1)
        out[key.strip()] = yaml.safe_load(value)
    return out


def notebook_parameters(path: Path) -> set[str]:
    """Names defined in a notebook's ``parameters`` cell."""
    import papermill as pm

    return set(pm.inspect_notebook(str(path)).keys())


def run_chapter(
    chapter: str,
    profile: str = "quick",
    overrides: Mapping[str, Any] | None = None,
    output_dir: Path | None = None,
    log_output: bool = False,
    progress_every: float = 30.0,
) -> Path:
    """Execute one chapter; returns the executed notebook's path in ``output_dir`` (default ``book/``).

    While it runs, a line every ``progress_every`` seconds says which cell is executing. The executed
    notebook is tidied before it becomes the page (:mod:`attnbook.chapters.publish`): one parameters cell
    holding the values the chapter ran with, and the kernel's stderr moved to :func:`stderr_log`.
    """
    import papermill as pm

    chapter = resolve_chapter(chapter)
    check_profile(profile)
    overrides = dict(overrides or {})
    source = notebooks_dir() / f"{chapter}.ipynb"
    known = notebook_parameters(source)
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ParameterError(
            f"unknown parameter(s) {', '.join(unknown)} for chapter {chapter}; "
            f"its parameters are: {', '.join(sorted(known))}"
        )
    chapter_params(chapter, profile, overrides)  # validates names against the profile table too
    out_dir = Path(output_dir) if output_dir else book_dir()
    target = out_dir / f"{chapter}.ipynb"
    failed_dir = out_dir / "_failed"
    params = {"profile": profile, **overrides}
    remove_stale_temporaries(out_dir, chapter)
    env_backup = {k: os.environ.get(k) for k in ("ATTNBOOK_PROFILE", "ATTNBOOK_RESULTS_STAGING")}
    os.environ["ATTNBOOK_PROFILE"] = profile
    # the chapter's results files are written here and moved into the results folder only if every cell ran
    staging = Path(tempfile.mkdtemp(prefix=temp_prefix(f"{chapter}.results"), dir=results_dir()))
    os.environ["ATTNBOOK_RESULTS_STAGING"] = str(staging)
    # progress bars are for interactive use; in the executed book they would be widgets needing a CDN
    os.environ.setdefault("TQDM_DISABLE", "1")
    started = time.time()
    try:
        with atomic_path(target) as tmp:
            tmp_nb = tmp.parent / f"{tmp.name}.ipynb"
            try:
                with Progress(chapter, tmp_nb, every=progress_every):
                    pm.execute_notebook(
                        str(source), str(tmp_nb), parameters=params, cwd=str(notebooks_dir()),
                        kernel_name="python3", progress_bar=False, log_output=log_output,
                        report_mode=False, kernel_manager_class=ipc_kernel_manager(),
                    )
            except pm.PapermillExecutionError as exc:
                failed_dir.mkdir(parents=True, exist_ok=True)
                kept = failed_dir / f"{chapter}.ipynb"
                if tmp_nb.exists():
                    shutil.move(str(tmp_nb), kept)
                raise ChapterExecutionError(chapter, exc.cell_index, exc.ename, exc.evalue, kept) from None
            finally:
                pass
            log = stderr_log(chapter)
            tidied = tidy(tmp_nb, log, results=staging / f"{chapter}.json", seconds=time.time() - started,
                          chapter=chapter)
            if tidied["stderr"]:
                print(f"[attnbook] {chapter}: {tidied['stderr']} stderr message(s) kept off the page, in {log}",
                      flush=True)
            for page, path in tidied["pages"].items():  # the chapter's further pages (toc.Chapter.pages)
                if page != chapter:
                    os.replace(path, out_dir / f"{page}.ipynb")
            shutil.move(str(tmp_nb), tmp)
            publish_results(staging, results_dir())  # the page and its results files land together
        stale = failed_dir / f"{chapter}.ipynb"
        if stale.exists():
            stale.unlink()
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        for key, value in env_backup.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return target


def ipc_kernel_manager() -> type:
    """The kernel manager papermill starts each chapter's kernel with: the kernel talks to ``attnbook run`` over
    Unix domain sockets (ZeroMQ's ``ipc`` transport) in a private temporary folder instead of TCP ports on
    localhost. Other local users cannot connect to the kernel, and ipykernel has no reason for its "Kernel is
    running over TCP without encryption" warning, which it would otherwise print on every run's terminal.

    The socket files are named after the connection file (``<folder>/kernel-ipc-<port>``), so that file is
    placed in a short private folder (a Unix socket path has at most ~100 bytes), removed with the kernel.
    On Windows, where Jupyter has no ``ipc`` transport, it is the default (TCP) manager."""
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    if sys.platform == "win32":
        return AsyncKernelManager

    class IPCKernelManager(AsyncKernelManager):
        @default("transport")
        def _transport_default(self) -> str:
            return "ipc"

        @default("connection_file")
        def _connection_file_default(self) -> str:
            self._ipc_folder = tempfile.mkdtemp(prefix="attnbook-kernel-")
            return os.path.join(self._ipc_folder, "kernel.json")

        async def _async_cleanup_resources(self, restart: bool = False) -> None:
            await super()._async_cleanup_resources(restart=restart)
            folder = getattr(self, "_ipc_folder", None)
            if folder and not restart:
                shutil.rmtree(folder, ignore_errors=True)

        cleanup_resources = _async_cleanup_resources  # the name nbclient calls when a kernel fails to start

    return IPCKernelManager


def stderr_log(chapter: str) -> Path:
    """Where a chapter's stderr output (warnings) is kept: ``_build/logs/<chapter>.stderr.txt``, outside the pages."""
    return project_root() / "_build" / "logs" / f"{chapter}.stderr.txt"


def publish_results(staging: Path, folder: Path) -> list[Path]:
    """Move the results files a chapter wrote into ``staging`` into ``folder`` (each an atomic rename)."""
    moved = []
    for f in sorted(Path(staging).glob("*.json")):
        os.replace(f, Path(folder) / f.name)
        moved.append(Path(folder) / f.name)
    return moved


def remove_stale_temporaries(folder: Path, chapter: str) -> list[Path]:
    """Delete temporary notebooks that a killed run of ``chapter`` left behind (never complete pages);
    files of a run that is still going are left alone."""
    removed = []
    for tmp in Path(folder).glob(f".{chapter}.ipynb.tmp-*"):
        if not writer_alive(tmp):
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    for tmp in results_dir().glob(f".{chapter}.results.tmp-*"):  # results staged by a killed run
        if not writer_alive(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
            removed.append(tmp)
    return removed


def run_page(name: str, output_dir: Path | None = None) -> Path:
    """Execute the front-matter page ``notebooks/pages/<name>.ipynb`` (:data:`attnbook.chapters.toc.PAGES`) into
    ``book/<name>.ipynb``: all cells or nothing (a failed run leaves the previous page and raises
    :class:`ChapterExecutionError`), the kernel's stderr kept off the page as for a chapter."""
    import papermill as pm

    source = notebooks_dir() / "pages" / f"{name}.ipynb"
    if name not in PAGES or not source.exists():
        raise ParameterError(f"unknown page {name!r}; pages: {', '.join(PAGES)}")
    out_dir = Path(output_dir) if output_dir else book_dir()
    target = out_dir / f"{name}.ipynb"
    with atomic_path(target) as tmp:
        tmp_nb = tmp.parent / f"{tmp.name}.ipynb"
        try:
            pm.execute_notebook(str(source), str(tmp_nb), cwd=str(source.parent), kernel_name="python3",
                                progress_bar=False, report_mode=False, kernel_manager_class=ipc_kernel_manager())
        except pm.PapermillExecutionError as exc:
            tmp_nb.unlink(missing_ok=True)
            raise ChapterExecutionError(name, exc.cell_index, exc.ename, exc.evalue, source) from None
        tidy(tmp_nb, stderr_log(name))
        shutil.move(str(tmp_nb), tmp)
    return target


def run_all(profile: str = "quick", chapters: list[str] | None = None, overrides=None, keep_going: bool = False,
            output_dir: Path | None = None) -> dict[str, float]:
    """Execute chapters in book order; returns seconds per chapter. Stops at the first failure
    unless ``keep_going`` (then raises after the rest ran); earlier chapters' outputs stay intact.

    With a scheduler (``attnbook build --scheduler``, ``ATTNBOOK_SCHEDULER``; :mod:`attnbook.core.executor`) the
    chapters run side by side on its workers, each when the chapters it reads have finished
    (:func:`attnbook.chapters.parallel.run_chapters`); the pages and results are those of a run in book order."""
    from attnbook.core.executor import scheduler  # lazy: only a build reads it

    times: dict[str, float] = {}
    errors: list[ChapterExecutionError] = []
    for page in PAGES if chapters is None else ():  # the whole book: its executed front-matter pages first
        start = time.time()
        run_page(page, output_dir)
        times[page] = round(time.time() - start, 1)
        print(f"[attnbook] {page}: {times[page]} s", flush=True)
    s = scheduler()
    if s.kind != "default":
        from attnbook.chapters.parallel import run_chapters  # lazy: Dask is imported only for a cluster

        times.update(run_chapters(run_chapter, s, profile, chapters or available_chapters(), overrides, output_dir,
                                  keep_going))
        return times
    for chapter in chapters or available_chapters():
        start = time.time()
        print(f"[attnbook] running {chapter} ({profile}) ...", flush=True)
        try:
            run_chapter(chapter, profile, overrides, output_dir)
        except ChapterExecutionError as exc:
            errors.append(exc)
            print(f"[attnbook] FAILED {exc}", flush=True)
            if not keep_going:
                raise
        times[chapter] = round(time.time() - start, 1)
        print(f"[attnbook] {chapter}: {times[chapter]} s", flush=True)
    if errors:
        raise errors[0]
    return times


def build_book(builder: str = "html") -> Path:
    """Render ``book/`` with Jupyter Book into ``_build/html`` (the notebooks are not re-executed)."""
    from attnbook.chapters.frontmatter import write_generated_pages  # lazy: `attnbook run` needs no results pages
    from attnbook.charts import write_vega_bundle  # lazy: altair takes seconds to import; only the build needs it

    root = project_root()
    write_vega_bundle(book_dir() / "_static")
    write_generated_pages(book_dir())
    jb = Path(sys.executable).with_name("jupyter-book")
    if not jb.exists():
        found = shutil.which("jupyter-book")
        if not found:
            raise BookBuildError("jupyter-book is not installed in this environment: pip install 'jupyter-book==1.0.4.post1'")
        jb = Path(found)
    # every Sphinx warning fails the build (after reporting all of them), so a broken reference or an
    # unrendered output cannot reach the published book unnoticed
    cmd = [str(jb), "build", str(root), "--builder", builder, "--warningiserror", "--keep-going"]
    proc = subprocess.run(cmd, cwd=root, text=True, capture_output=True)
    sys.stdout.write(proc.stdout[-4000:])
    warnings = [line for line in proc.stderr.splitlines() + proc.stdout.splitlines() if "WARNING" in line]
    if warnings:
        sys.stderr.write("\n".join(warnings[:50]) + "\n")
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-8000:])
        raise BookBuildError(f"jupyter-book build failed (exit {proc.returncode}); see the output above")
    return root / "_build" / "html"
