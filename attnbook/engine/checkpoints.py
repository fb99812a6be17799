"""Fine-tuned checkpoints on disk: written atomically, verified when read.

A checkpoint is a folder ``cache_dir()/finetune/<key>/`` (weights, config, ``meta.json``). It is written into
a temporary sibling folder and renamed into place only when complete; its ``COMPLETE`` file, written last,
records the SHA-256 of every other file. So an interrupted write never loads, and a checkpoint that fails
its checksums is trained again with a :class:`CheckpointCorruptWarning`.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any, Mapping

import torch

from attnbook.core.io import atomic_write_json, sha256_file
from attnbook.core.paths import cache_dir
from attnbook.engine.models import prepare_model

WEIGHTS_FILE = "model.safetensors"


COMPLETE_FILE = "COMPLETE"


class CheckpointCorruptWarning(UserWarning):
    """A cached checkpoint is incomplete or fails its checksum; it is trained again."""


def checkpoints_root() -> Path:
    """``cache_dir()/finetune``: one folder per checkpoint key."""
    path = cache_dir() / "finetune"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def save_checkpoint(model: torch.nn.Module, key: str, meta: Mapping[str, Any], root: Path | None = None) -> Path:
    """Write ``model`` (weights + config) and ``meta`` under ``root/key``; returns the folder.

    Everything goes to a temporary sibling folder first; ``COMPLETE`` (SHA-256 of
    every other file) is written last and the folder is renamed into place, so a
    crash at any moment leaves either nothing under ``key`` or a complete checkpoint.
    """
    from safetensors.torch import save_file

    root = Path(root) if root else checkpoints_root()
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}.tmp-{os.getpid()}-", dir=root))
    final = root / key
    try:
        state = {k: v.detach().cpu().contiguous().clone() for k, v in model.state_dict().items()}
        save_file(state, str(tmp / WEIGHTS_FILE), metadata={"key": key})
        model.config.to_json_file(str(tmp / "config.json"))
        atomic_write_json(tmp / "meta.json", dict(meta))
        for name in (WEIGHTS_FILE, "config.json"):
            _fsync_file(tmp / name)
        checks = {p.name: sha256_file(p) for p in sorted(tmp.iterdir()) if p.is_file()}
        atomic_write_json(tmp / COMPLETE_FILE, {"key": key, "sha256": checks})
        _fsync_dir(tmp)
        if final.exists():  # an incomplete or corrupt earlier attempt (complete ones are never rewritten)
            shutil.rmtree(final)
        try:
            os.rename(tmp, final)
        except OSError:
            if read_complete(final) is None:  # pragma: no cover - lost a race to a broken writer
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # another process finished the same checkpoint first
        _fsync_dir(root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _remove_stale_tmp(root, key)
    return final


def _remove_stale_tmp(root: Path, key: str) -> None:
    """Delete temporary folders of ``key`` left by writers that no longer run."""
    for tmp in root.glob(f".{key}.tmp-*"):
        try:
            pid = int(tmp.name.split(".tmp-", 1)[1].split("-", 1)[0])
        except (IndexError, ValueError):
            continue
        if pid == os.getpid() or not _pid_alive(pid):
            shutil.rmtree(tmp, ignore_errors=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover
        return True
    return True


def read_complete(folder: Path) -> dict | None:
    """The ``COMPLETE`` record of a checkpoint folder if every file matches its checksum, else ``None``."""
    import json

    marker = Path(folder) / COMPLETE_FILE
    if not marker.exists():
        return None
    try:
        record = json.loads(marker.read_text())
        checks = record["sha256"]
    except (ValueError, KeyError, TypeError):
        return None
    if WEIGHTS_FILE not in checks or "config.json" not in checks:
        return None
    for name, digest in checks.items():
        path = Path(folder) / name
        if not path.is_file() or sha256_file(path) != digest:
            return None
    return record


def _no_init():
    """A context that skips the random initialisation of a model about to receive stored weights (the
    ``load_state_dict(strict=True)`` after it replaces every parameter and persistent buffer, so the model is
    the same either way): about 3x faster per classifier (``make bench``), and chapters 5, 6 and 8 load dozens."""
    import contextlib

    try:
        from transformers.initialization import no_init_weights
    except ImportError:  # an older transformers: initialise, then overwrite (same weights, slower)
        return contextlib.nullcontext()
    return no_init_weights()


def load_checkpoint(key: str, root: Path | None = None) -> tuple[torch.nn.Module, dict] | None:
    """The checkpoint stored under ``key`` as ``(model, meta)``, or ``None`` when absent.

    An incomplete or corrupt checkpoint also gives ``None``, with a
    :class:`CheckpointCorruptWarning` (the caller trains it again).
    """
    import json

    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModelForSequenceClassification

    folder = (Path(root) if root else checkpoints_root()) / key
    if not folder.exists():
        return None
    if read_complete(folder) is None:
        warnings.warn(
            f"checkpoint {folder} is incomplete or fails its checksum; training it again",
            CheckpointCorruptWarning,
            stacklevel=3,
        )
        return None
    try:
        config = AutoConfig.from_pretrained(str(folder))
        with torch.random.fork_rng(devices=[]), _no_init():  # the stored weights replace every parameter
            model = AutoModelForSequenceClassification.from_config(config, attn_implementation="eager")
        model.load_state_dict(load_file(str(folder / WEIGHTS_FILE)), strict=True)
        meta = json.loads((folder / "meta.json").read_text())
    except Exception as exc:  # a checkpoint from an incompatible version of the code
        warnings.warn(f"checkpoint {folder} could not be loaded ({exc}); training it again",
                      CheckpointCorruptWarning, stacklevel=3)
        return None
    model.eval()
    return prepare_model(model), meta
