"""Where the book's independent jobs run: in this process, on a local cluster of one-thread workers, or on a cluster.

A job is one call of a module-level function on small, picklable arguments that writes what it computes into the
shared cache (:mod:`attnbook.core.cache`) and returns something small (the entries it wrote, a row of numbers):
fine-tuning one classifier (chapters 4-6), one seed of chapter 7's runs, one model's measurements in chapter 9.
Arrays and checkpoints stay in the cache; only names and rows travel. With a scheduler, ``attnbook build`` also runs
the chapters themselves side by side on the same cluster (:mod:`attnbook.chapters.parallel`).

The scheduler is read from ``ATTNBOOK_SCHEDULER`` (``attnbook build --scheduler ...`` sets it for the chapters it
runs), in one of these forms (:func:`parse_scheduler`):

* unset or empty: the book's default. A list of jobs runs in this process one after the other, or, when the caller
  asks for ``workers`` > 1 (chapter 4 fine-tunes two classifiers side by side), on a local cluster of that many
  one-thread worker processes started for the call.
* ``local`` or ``local:N``: a Dask ``LocalCluster`` of ``N`` one-thread worker processes (default: the machine's
  cores), started once per process and used for every job list.
* a scheduler address, ``tcp://host:8786`` (or ``tls://``, ``ws://``): that running Dask cluster. Its workers must
  see the same data folder (``ATTNBOOK_DATA``) and cache (``ATTNBOOK_CACHE``) at the same paths: a shared POSIX
  filesystem on which a rename within a folder is atomic (NFS, Lustre, GPFS, CephFS; not an object store).
* ``slurm`` / ``slurm:N``, ``pbs`` / ``pbs:N``: a ``dask-jobqueue`` cluster of ``N`` one-core batch jobs (default 2),
  its queue, account, walltime and memory from Dask's configuration (``jobqueue.slurm.*``, ``jobqueue.pbs.*``);
  ``pip install 'attnbook[cluster]'``.

A worker that dies while it runs a job (killed, out of memory, past its walltime) has the job run again on another
worker, at most :data:`ALLOWED_FAILURES` times, after which :class:`JobLostError` names the job; a job that raises
fails once, as :class:`JobFailedError` naming the job and its error. A job's cache writes are atomic (temporary file,
then rename), so a lost job leaves nothing half-written.
"""
from __future__ import annotations

import atexit
import logging
import os
import uuid
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

from attnbook.core.errors import AttnbookError, ParameterError

R = TypeVar("R")

#: the environment variable that names the scheduler (see the module docstring for its forms)
SCHEDULER_ENV = "ATTNBOOK_SCHEDULER"
#: how many times a job may lose its worker before it fails (Dask's ``distributed.scheduler.allowed-failures``)
ALLOWED_FAILURES = 2
#: the forms a scheduler may take, for messages
FORMS = "'' (the default), 'local', 'local:N', a scheduler address such as tcp://host:8786, 'slurm[:N]' or 'pbs[:N]'"


class JobFailedError(AttnbookError):
    """A job raised: its name and its error (not retried: the same input would fail again)."""


class JobLostError(AttnbookError):
    """A job lost its worker more than :data:`ALLOWED_FAILURES` times."""


@dataclass(frozen=True)
class Scheduler:
    """A parsed scheduler: ``kind`` is ``"default"``, ``"local"``, ``"address"``, ``"slurm"`` or ``"pbs"``;
    ``workers`` the worker count it asks for (``None``: the kind's default); ``address`` a scheduler's address."""

    kind: str
    workers: int | None = None
    address: str | None = None

    @property
    def text(self) -> str:
        if self.kind == "address":
            return str(self.address)
        return self.kind if self.workers is None else f"{self.kind}:{self.workers}"


def parse_scheduler(text: str | None) -> Scheduler:
    """The scheduler ``text`` names (see the module docstring); anything else raises :class:`ParameterError`
    naming the forms."""
    text = (text or "").strip()
    if not text:
        return Scheduler("default")
    if "://" in text:
        return Scheduler("address", address=text)
    kind, _, count = text.partition(":")
    if kind in ("local", "slurm", "pbs"):
        if not count:
            return Scheduler(kind)
        if count.isdigit() and int(count) > 0:
            return Scheduler(kind, int(count))
    raise ParameterError(f"unknown scheduler {text!r} ({SCHEDULER_ENV} or --scheduler); give one of {FORMS}")


def scheduler() -> Scheduler:
    """The scheduler this process uses (:data:`SCHEDULER_ENV`)."""
    return parse_scheduler(os.environ.get(SCHEDULER_ENV))


_CLIENTS: dict[str, Any] = {}


def _cluster(s: Scheduler, workers: int) -> Any:
    """A new cluster for ``s`` (not an address): local one-thread workers, or one-core batch jobs."""
    if s.kind in ("default", "local"):
        from distributed import LocalCluster

        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                            silence_logs=logging.CRITICAL)
    try:
        import dask_jobqueue
    except ImportError:
        raise ParameterError(f"the scheduler {s.text!r} needs dask-jobqueue: pip install 'attnbook[cluster]'") from None
    cls = dask_jobqueue.SLURMCluster if s.kind == "slurm" else dask_jobqueue.PBSCluster
    cluster = cls(cores=1, processes=1)  # queue, account, walltime, memory: Dask's jobqueue configuration
    cluster.scale(workers)
    return cluster


def _shared_client(s: Scheduler) -> Any:
    """The client of a scheduler that lives as long as this process (``local``, an address, a batch cluster)."""
    if s.text not in _CLIENTS:
        import dask
        from distributed import Client

        with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}):
            if s.kind == "address":
                client = Client(s.address)
            else:
                default = (os.cpu_count() or 1) if s.kind == "local" else 2
                client = Client(_cluster(s, s.workers or default))
        _CLIENTS[s.text] = client
        atexit.register(_close, s.text)
    return _CLIENTS[s.text]


def _close(text: str) -> None:
    client = _CLIENTS.pop(text, None)
    if client is not None:
        cluster = client.cluster
        client.close()
        if cluster is not None:
            cluster.close()


def in_worker() -> bool:
    """Whether this code runs as a job on a Dask worker (where a job keeps to one thread)."""
    try:
        from distributed import get_worker

        get_worker()
    except (ImportError, ValueError):
        return False
    return True


def run_jobs(fn: Callable[[Any], R], jobs: Sequence[Any], *, names: Sequence[str], workers: int = 1) -> list[R]:
    """``[fn(job) for job in jobs]``, run where the scheduler says (see the module docstring), results in the order
    of ``jobs``. ``names`` say what each job is in errors ("chapter 4: fine-tuning SST-2, seed 1"); ``workers`` is
    the caller's parallelism for the default scheduler (ignored by the others, which have their own workers).
    ``fn`` must be defined at module level (workers import it by name)."""
    if len(names) != len(jobs):
        raise ValueError(f"{len(jobs)} jobs but {len(names)} names")
    s = scheduler()
    if s.kind == "default":
        if workers <= 1 or len(jobs) <= 1:
            return [_named(fn, job, name) for job, name in zip(jobs, names)]
        try:
            import dask
            from distributed import Client

            with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}), \
                    _cluster(s, min(workers, len(jobs))) as cluster, Client(cluster) as client:
                return _submitted(client, fn, jobs, names)
        except AttnbookError:
            raise
        except (OSError, TimeoutError) as exc:  # the worker processes could not start (no spawn, no ports): run here
            warnings.warn(f"could not start {workers} worker processes ({exc!r}); running the jobs one after the "
                          f"other in this process", RuntimeWarning, stacklevel=2)
            return [_named(fn, job, name) for job, name in zip(jobs, names)]
    return _submitted(_shared_client(s), fn, jobs, names)


def _named(fn: Callable[[Any], R], job: Any, name: str) -> R:
    try:
        return fn(job)
    except AttnbookError as exc:  # the book's own error names the fix: kept, with the job named
        exc.add_note(f"in the job: {name}")
        raise
    except Exception as exc:  # noqa: BLE001 - any other error, named
        raise JobFailedError(f"{name}: {type(exc).__name__}: {exc}") from exc


def _submitted(client: Any, fn: Callable[[Any], R], jobs: Sequence[Any], names: Sequence[str]) -> list[R]:
    from distributed import KilledWorker

    batch = uuid.uuid4().hex[:8]  # a key of its own per call: a cancelled future's key is not reused
    futures = [client.submit(fn, job, key=f"{_key(name)}-{batch}-{i}", pure=False, retries=0)
               for i, (job, name) in enumerate(zip(jobs, names))]
    out = []
    try:
        for future, name in zip(futures, names):
            try:
                out.append(future.result())
            except KilledWorker as exc:
                raise JobLostError(f"{name}: its worker died {ALLOWED_FAILURES + 1} times while running it (killed, "
                                   f"out of memory, or past its walltime); the cache keeps every job that finished, "
                                   f"so running the build again resumes from there") from exc
            except AttnbookError as exc:  # the book's own error names the fix: kept, with the job named
                exc.add_note(f"in the job: {name}")
                raise
            except Exception as exc:  # noqa: BLE001 - the job's own error, named
                raise JobFailedError(f"{name}: {type(exc).__name__}: {exc}") from exc
    finally:
        for future in futures:
            future.cancel()
    return out


def _key(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name).strip("-")[:60] or "job"
