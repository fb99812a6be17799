"""The encoder a job on a worker runs: loaded there by name and checked against the one the sending chapter loaded.

A job ships a model's name and key (:attr:`attnbook.engine.models.LoadedModel.key`, its weights' fingerprint), not
its weights (:mod:`attnbook.core.executor`). Where it runs, :func:`job_encoder` loads the name and refuses weights that
differ from the sender's, naming the fix: every worker must read the same model files.
"""
from __future__ import annotations

import torch

from attnbook.core import executor
from attnbook.core.errors import ParameterError
from attnbook.engine.models import LoadedModel, load_encoder


def job_encoder(name: str, key: str) -> LoadedModel:
    """The encoder ``name`` loaded where the job runs, with the sender's weights (``key``); on a Dask worker, torch
    computes on one thread (the workers share the machine's cores)."""
    if executor.in_worker():
        torch.set_num_threads(1)
    loaded = load_encoder(name)
    if loaded.key != key:
        raise ParameterError(f"{name!r} loads other weights where this job runs ({loaded.key}) than in the run that "
                             f"sent it ({key}): give a model every worker loads alike (a folder on the shared "
                             f"filesystem, a hub name with the same revision)")
    return loaded
