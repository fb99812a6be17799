"""The suite's long runs, started as soon as pytest knows it will need them, and run beside the other tests.

The smoke book (every chapter through papermill, then Jupyter Book) and the paper rehearsal (every chapter with
``profile=paper`` on the planted model), and the smoke book once more with its chapters on a two-worker local
cluster (compared with the first), are subprocesses that take minutes each. Run inside their fixtures, one
after the other and after the other tests, they kept one of the machine's two cores idle for most of the suite.
:func:`start` hands them, in order, to one background thread when collection ends (``conftest.py``): the runs use
one core while the other tests use the other, every process computing on one thread (:data:`ONE_THREAD`; the pytest
process too, while the runs go). Measured on this two-core machine (one suite each, ``--durations``): one run after
the other, 526 s; the runs beside the tests on one core, 436 s; the two runs at once beside the tests, 599 s with
one thread per process and 581 s with torch's default of one thread per core (the CPU time grew by half: the cores
do not scale to three busy processes). Until 2026-11-26 the chapters' kernels did not follow ``OMP_NUM_THREADS``
(their set-up took every core), so those timings had two-thread kernels beside a busy core. The fixture waits with
:func:`result`, which re-raises whatever stopped the run. What each run executes and checks is unchanged.
Subprocesses still going when the run ends (an interrupted or ``-x`` run) are killed, with the processes they
started.

The runs do nothing in the pytest process that a test beside them could disturb or be disturbed by: all their
work is in subprocesses (planting the model too: it draws from torch's global generator, which the tests seed),
with the environment taken when the runs start (a test's ``monkeypatch.setenv`` later does not reach them).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]

#: the long runs' subprocesses compute on one thread (a test that repeats a run's step uses the same)
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

_jobs: dict[str, "_Job"] = {}
_children: set[subprocess.Popen] = set()
_lock = threading.Lock()


class _Job:
    def __init__(self, name: str, fn: Callable[[dict], Any]) -> None:
        self.name, self.fn, self.value, self.error = name, fn, None, None
        self.done = threading.Event()

    def run(self, env: dict) -> None:
        try:
            self.value = self.fn(env)
        except BaseException as exc:  # handed to the fixture that waits for it
            self.error = exc
        finally:
            self.done.set()


def start(runs: dict[str, Callable[[dict], Any]]) -> None:
    """Run ``fn(environment now)`` for each ``name: fn`` of ``runs``, in order, in one background thread (runs
    already started are left alone)."""
    with _lock:
        todo = [_jobs.setdefault(name, _Job(name, fn)) for name, fn in runs.items() if name not in _jobs]
    env = dict(os.environ)

    def worker() -> None:
        for job in todo:
            job.run(env)

    if todo:
        threading.Thread(target=worker, name="longruns", daemon=True).start()


def result(name: str, fn: Callable[[dict], Any]) -> Any:
    """Wait for the run ``name`` (running ``fn`` here and now if nothing started it) and return its value."""
    with _lock:
        job = _jobs.get(name)
        mine = job is None
        if mine:
            job = _jobs[name] = _Job(name, fn)
    if mine:
        job.run(dict(os.environ))
    job.done.wait()
    if job.error is not None:
        raise job.error
    return job.value


def run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    """:func:`subprocess.run` with ``text=True, capture_output=True``, whose child :func:`stop` can kill."""
    # its own process group, so that stop() also reaches the Jupyter kernel papermill starts under it
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            cwd=ROOT, **kwargs)
    with _lock:
        _children.add(proc)
    try:
        out, err = proc.communicate()
    finally:
        with _lock:
            _children.discard(proc)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def stop() -> None:
    """Kill the long runs' subprocesses that are still going."""
    with _lock:
        children = list(_children)
    for proc in children:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


# ------------------------------------------------------------------------------------------------- the two runs

def _folder(name: str, env: dict) -> Path:
    """A new folder in the suite's temporary state (``conftest.py`` removes it when the run ends)."""
    return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=env["ATTNBOOK_TEST_STATE"]))


def _copy_project(home: Path, book: bool) -> None:
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, home / name)
    shutil.copytree(ROOT / "notebooks", home / "notebooks")
    if book:  # the book's own pages (intro, results overview ...), without executed chapters or results
        shutil.copytree(ROOT / "book", home / "book",
                        ignore=shutil.ignore_patterns("*.ipynb", "results", "_failed", "attnbook-vega.js"))
        report = ROOT / "benchmarks" / "results" / "latest.json"  # the cluster page's table is drawn from it
        if report.exists():
            (home / "benchmarks" / "results").mkdir(parents=True)
            shutil.copy(report, home / "benchmarks" / "results" / report.name)
    else:
        (home / "book" / "results").mkdir(parents=True)


def cli(args: list[str], env: dict) -> subprocess.CompletedProcess:
    """``attnbook <args>`` in a subprocess; fails the test with the tail of its output when it fails."""
    proc = run([sys.executable, "-m", "attnbook.chapters.cli", *args], env=env)
    assert proc.returncode == 0, f"attnbook {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


def smoke_book(env: dict) -> Path:
    """Every chapter executed with the smoke profile and the book rendered, in a copy of the project (the
    checkout's ``book/`` is never touched); returns the copy's folder."""
    home = _folder("project", env)
    _copy_project(home, book=True)
    env = dict(env, **ONE_THREAD, ATTNBOOK_HOME=str(home), ATTNBOOK_RESULTS=str(home / "book" / "results"))
    cli(["build", "--profile", "smoke", "--times-json", str(home / "times.json")], env)
    return home


def smoke_book_dask(env: dict) -> Path:
    """The smoke book again, its chapters side by side on a local cluster of two one-thread workers (``attnbook build
    --scheduler local:2``), from a cache of its own: every chapter and every job computed on the workers."""
    home = _folder("project-dask", env)
    _copy_project(home, book=True)
    env = dict(env, **ONE_THREAD, ATTNBOOK_HOME=str(home), ATTNBOOK_RESULTS=str(home / "book" / "results"),
               ATTNBOOK_CACHE=str(home / "cache"))
    cli(["build", "--profile", "smoke", "--scheduler", "local:2", "--times-json", str(home / "times.json")], env)
    return home


def paper_rehearsal(env: dict) -> dict:
    """Every chapter with ``profile=paper`` on the planted ``bert-base-uncased`` and the planted MNLI/QQP/QNLI
    files, sizes overridden (:data:`planted.REHEARSAL_SIZES`)."""
    from planted import REHEARSAL_SIZES, plant_data

    tmp = _folder("paper", env)
    home = tmp / "project"
    home.mkdir()
    _copy_project(home, book=False)
    real = env.get("ATTNBOOK_DATA")
    assert real and os.path.isdir(real), "set ATTNBOOK_DATA to the data directory (CI: ../shared/data)"
    data = plant_data(tmp / "data", Path(real))
    plant = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); from planted import plant_bert; "
             f"print(plant_bert({str(tmp / 'hub')!r}, n_layers=4, n_heads=4, hidden=32))")
    planted = run([sys.executable, "-c", plant], env=env)
    assert planted.returncode == 0, f"planting the model failed:\n{planted.stderr[-3000:]}"
    snapshot = Path(planted.stdout.strip().splitlines()[-1])
    env = dict(env, **ONE_THREAD, ATTNBOOK_HOME=str(home), ATTNBOOK_RESULTS=str(home / "book" / "results"),
               ATTNBOOK_DATA=str(data), ATTNBOOK_CACHE=str(tmp / "cache"), HF_HUB_CACHE=str(tmp / "hub"),
               HF_HUB_OFFLINE="1")
    for chapter, sizes in REHEARSAL_SIZES.items():
        args = ["run", chapter[:2], "--profile", "paper"]
        for key, value in sizes.items():
            args += ["-p", f"{key}={json.dumps(value)}"]
        cli(args, env)
    return {"home": home, "snapshot": snapshot, "results": home / "book" / "results"}


#: fixture name -> the run it waits for
RUNS: dict[str, Callable[[dict], Any]] = {"smoke_book": smoke_book, "paper_run": paper_rehearsal,
                                          "smoke_book_dask": smoke_book_dask}
