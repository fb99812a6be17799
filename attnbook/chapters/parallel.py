"""The book's chapters side by side on a Dask cluster: ``attnbook build --scheduler local:2`` (or an address,
``slurm:N``, ``pbs:N``; :mod:`attnbook.core.executor` parses them).

Each chapter is one task: the papermill run of :func:`attnbook.chapters.runner.run_chapter` on a worker, with the
environment of the build (``ATTNBOOK_HOME``, ``ATTNBOOK_DATA``, ``ATTNBOOK_CACHE``, ``ATTNBOOK_RESULTS``: the same
paths on every worker, a shared filesystem). A chapter starts when the chapters it reads
(:attr:`attnbook.chapters.spec.Chapter.after`: 5 and 6 after 4, the atlas after 1-6) have finished; the others start
at once, as many at a time as the cluster has workers: each worker offers one unit of the ``chapter`` resource
(:data:`RESOURCE`) and a chapter takes it. The jobs a chapter's kernel hands out (fine-tuning, chapter 7's seeds,
chapter 9's models) go to the same cluster. The chapter's kernel is a process of its own, so the task leaves its
worker's thread for jobs as soon as it starts (:func:`distributed.secede`; the ``chapter`` resource stays taken until
it ends): a cluster whose every worker runs a chapter still runs their jobs.

A chapter writes its page and results files as a serial build does (all or nothing, by rename), so the book is the
same whichever worker ran which chapter. A chapter whose cell raises fails once, as
:class:`~attnbook.core.errors.ChapterExecutionError` naming it; a worker that dies under a chapter has the chapter
run again elsewhere, at most :data:`~attnbook.core.executor.ALLOWED_FAILURES` times (its finished cache entries are
read back, not computed again).
"""
from __future__ import annotations

import logging
import os
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from attnbook.chapters.params import SPECS, chapter_params, load_registry
from attnbook.core.errors import AttnbookError, ChapterExecutionError, ParameterError
from attnbook.core.executor import ALLOWED_FAILURES, JobLostError, Scheduler, SCHEDULER_ENV
from attnbook.core.paths import project_root, results_dir

#: the worker resource a chapter takes: one per worker, so a worker runs one chapter's kernel at a time
RESOURCE = "chapter"
#: the build's environment a chapter's task takes to its worker (the paths the chapter reads and writes)
CARRIED = ("ATTNBOOK_HOME", "ATTNBOOK_DATA", "ATTNBOOK_CACHE", "ATTNBOOK_RESULTS", "ATTNBOOK_THREADS",
           "HF_HUB_CACHE", "HF_HUB_OFFLINE", "TQDM_DISABLE")
#: how long the build waits for a scheduler given by address to have a worker
WAIT_FOR_WORKERS = 600.0


def order(chapters: Sequence[str], after: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """For each of ``chapters`` (book order), the chapters among them it waits for. A chapter waiting for one that
    comes later in the list is a mistake in the chapters' declarations and raises."""
    out: dict[str, list[str]] = {}
    for c in chapters:
        waits = [d for d in after.get(c, ()) if d in chapters]
        late = [d for d in waits if d not in out]
        if late:
            raise ParameterError(f"chapter {c} reads {', '.join(late)}, which comes after it: list the chapters in "
                                 f"book order (attnbook.chapters.toc)")
        out[c] = waits
    return out


def priorities(waits: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """Which ready chapter a free worker takes first (higher first): the one the most chapters wait for, directly
    or not (chapter 4, read by 5, 6 and the atlas), then book order."""
    later: dict[str, set[str]] = {c: set() for c in waits}
    for c in reversed(list(waits)):
        for d in waits[c]:
            later[d] |= {c} | later[c]
    n = len(waits)
    return {c: len(later[c]) * n + (n - i) for i, c in enumerate(waits)}


def run_chapters(run: Callable[..., Any], s: Scheduler, profile: str, chapters: Sequence[str],
                 overrides: Mapping[str, Any] | None = None, output_dir: Path | None = None,
                 keep_going: bool = False) -> dict[str, float]:
    """Run ``chapters`` with ``run`` (:func:`attnbook.chapters.runner.run_chapter`, a module-level function: the
    workers import it) on the cluster ``s`` names (not the default scheduler); returns each chapter's seconds from
    its start on a worker to its end, in book order. The first chapter that fails stops the build and raises: the
    chapters not started are not, those running are stopped (their finished cache entries stay, their pages and
    results are left as they were, their temporaries are swept by the next run); with ``keep_going``, it raises after
    every other chapter ran."""
    from distributed import as_completed

    load_registry()
    for c in chapters:  # a wrong parameter fails here, before any worker starts, naming the chapter
        try:
            chapter_params(c, profile, overrides)
        except ParameterError as exc:
            exc.add_note(f"in chapter {c}")
            raise
    waits = order(chapters, {c: SPECS[c].after for c in chapters})
    first = priorities(waits)
    # as in a serial build (:func:`attnbook.chapters.runner.run_chapter`), no progress bars: the build reports each
    # chapter's cell; set before the cluster starts, so that a local cluster's workers, where the chapters' jobs
    # run, have it too and do not draw their bars in the build's terminal
    os.environ.setdefault("TQDM_DISABLE", "1")
    env = {k: os.environ[k] for k in CARRIED if k in os.environ}
    env.update(ATTNBOOK_HOME=str(project_root()), ATTNBOOK_RESULTS=str(results_dir()))
    client, close = _client(s)
    batch = uuid.uuid4().hex[:8]
    try:
        futures: dict[str, Any] = {}
        for c in chapters:
            job = {"chapter": c, "profile": profile, "overrides": dict(overrides or {}), "env": env,
                   "output_dir": str(output_dir) if output_dir else None}
            futures[c] = client.submit(_chapter_task, run, job, [futures[d] for d in waits[c]], key=f"chapter-{c}-{batch}",
                                       resources={RESOURCE: 1}, pure=False, retries=0, priority=first[c])
            print(f"[attnbook] {c} ({profile}) submitted"
                  + (f", after {', '.join(waits[c])}" if waits[c] else ""), flush=True)
        name = {f.key: c for c, f in futures.items()}
        times: dict[str, float] = {}
        errors: list[AttnbookError] = []
        for future in as_completed(list(futures.values())):
            c = name[future.key]
            try:
                outcome = _outcome(c, future)
            except AttnbookError as exc:
                errors.append(exc)
                print(f"[attnbook] FAILED {exc}", flush=True)
                if not keep_going:
                    for f in futures.values():
                        f.cancel()
                    break
                continue
            times[c] = outcome
            print(f"[attnbook] {c}: {outcome} s", flush=True)
        if errors:
            raise errors[0]
        return {c: times[c] for c in chapters}
    finally:
        close()


def _outcome(chapter: str, future: Any) -> float:
    from distributed import KilledWorker

    try:
        status, value = future.result()
    except KilledWorker:
        raise JobLostError(f"chapter {chapter}: its worker died {ALLOWED_FAILURES + 1} times while running it (killed, "
                           f"out of memory, or past its walltime); the cache keeps every job that finished, so "
                           f"building again resumes from there") from None
    except AttnbookError as exc:
        exc.add_note(f"in chapter {chapter}")
        raise
    if status == "failed":
        raise ChapterExecutionError(*value)
    return value


def _chapter_task(run: Callable[..., Any], job: dict, _waited: list) -> tuple[str, Any]:
    """One chapter on a worker: ``("ok", seconds)``, or ``("failed", (chapter, cell, ename, evalue, kept))`` when a
    cell raised (returned, not raised: a chapter's own failure is not retried). ``run`` is the runner's
    :func:`~attnbook.chapters.runner.run_chapter`; ``_waited``: the results of the chapters it waited for."""
    from distributed import get_worker, secede

    os.environ.update(job["env"])
    os.environ[SCHEDULER_ENV] = get_worker().scheduler.address  # the kernel's jobs go to this cluster
    secede()  # this worker's thread runs jobs (of this chapter or another) while the kernel waits for them
    start = time.time()
    try:
        run(job["chapter"], job["profile"], job["overrides"], Path(job["output_dir"]) if job["output_dir"] else None)
    except ChapterExecutionError as exc:
        return "failed", (exc.chapter, exc.cell, exc.ename, exc.evalue, exc.log)
    return "ok", round(time.time() - start, 1)


def _client(s: Scheduler) -> tuple[Any, Any]:
    """A client of the cluster ``s`` names whose workers offer :data:`RESOURCE`, and how to close what was started
    for the build (a scheduler given by address is left running)."""
    import dask
    from distributed import Client

    with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}):
        if s.kind == "address":
            client = Client(s.address)
            client.wait_for_workers(1, timeout=WAIT_FOR_WORKERS)
            _check_resources(client, s)
            return client, client.close
        if s.kind == "local":
            from distributed import LocalCluster

            cluster = LocalCluster(n_workers=s.workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                                   resources={RESOURCE: 1}, dashboard_address=":0", silence_logs=logging.CRITICAL)
        elif s.kind in ("slurm", "pbs"):
            try:
                import dask_jobqueue
            except ImportError:
                raise ParameterError(f"the scheduler {s.text!r} needs dask-jobqueue: "
                                     f"pip install 'attnbook[cluster]'") from None
            cls = dask_jobqueue.SLURMCluster if s.kind == "slurm" else dask_jobqueue.PBSCluster
            cluster = cls(cores=1, processes=1, worker_extra_args=["--resources", f"{RESOURCE}=1"])
            cluster.scale(s.workers or 2)
        else:
            raise ParameterError(f"chapters side by side need a cluster; the scheduler {s.text!r} is not one")
        client = Client(cluster)

    def close() -> None:
        client.close()
        cluster.close()

    return client, close


def _check_resources(client: Any, s: Scheduler) -> None:
    workers = client.scheduler_info().get("workers", {})
    if not any(w.get("resources", {}).get(RESOURCE) for w in workers.values()):
        raise ParameterError(
            f"no worker of {s.address} offers the resource {RESOURCE!r} a chapter takes (one per worker, so that a "
            f"worker runs one chapter at a time): start the workers with "
            f"`dask worker {s.address} --nthreads 1 --resources {RESOURCE}=1`")
