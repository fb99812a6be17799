"""Module-level job functions for tests/test_executor.py (a Dask worker imports a job's function by name)."""
from __future__ import annotations

import os
from pathlib import Path

from attnbook.core.errors import ParameterError


def square(job: dict) -> tuple[int, int]:
    """The job's number squared, and the process that computed it."""
    return job["x"] ** 2, os.getpid()


def dies_once(job: dict) -> int:
    """Ends its worker process the first time it runs (a marker file says it did), then computes."""
    marker = Path(job["marker"])
    if job["x"] == 1 and not marker.exists():
        marker.write_text(str(os.getpid()))
        os._exit(1)  # the worker dies mid-job, as when killed or out of memory
    return job["x"] * 10


def bad_input(job: dict) -> None:
    """A job whose input is wrong: it fails the same way wherever it runs; counts its calls in a folder."""
    Path(job["calls"], f"{os.getpid()}-{len(os.listdir(job['calls']))}").write_text("called")
    raise ParameterError(f"task {job['task']!r} is not a GLUE task; give one of SST-2, MRPC")


def train_dies_once(job: dict):
    """A fine-tuning job (:func:`attnbook.engine.finetune._train_job`) whose worker dies the first time, while the
    classifier is being written (a temporary checkpoint folder exists) or just after its first snapshot is complete."""
    import threading
    import time

    from attnbook.engine import finetune
    from attnbook.engine.checkpoints import checkpoints_root

    marker = Path(job["marker"])
    if not marker.exists():
        marker.write_text(str(os.getpid()))
        root = checkpoints_root()

        def kill_when_writing() -> None:
            while True:
                if root.exists() and (any(root.glob(".*.tmp-*")) or any(root.glob("*/COMPLETE"))):
                    os._exit(1)
                time.sleep(0.001)

        threading.Thread(target=kill_when_writing, daemon=True).start()
    return finetune._train_job({k: v for k, v in job.items() if k != "marker"})
