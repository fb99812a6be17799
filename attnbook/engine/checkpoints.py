"""Fine-tuned checkpoints on disk: written atomically, verified when read.

A checkpoint is a folder ``cache_dir()/finetune/<key>/`` (weights, config, ``meta.json``). It is written into
a temporary sibling folder and renamed into place only when complete; its ``COMPLETE`` file, written last,
records the SHA-256 of every other file. So an interrupted write never loads, and a checkpoint that fails
its checksums is trained again with a :class:`CheckpointCorruptWarning`.

**Compact checkpoints** (``save_checkpoint(..., reference=...)``, what fine-tuning writes): a fine-tuned
classifier is stored as what rebuilds it, in half the bytes. Every floating-point tensor the classifier shares
with the encoder it was initialised from (``reference``, that encoder's state dict) is stored as its change
since that encoder, ``float16(w - w_encoder)``; the others (the head, and every tensor of a random-init run) as
``float16(w)``. Fine-tuning moves weights by far less than their size, so the stored change loses about 1/2,000
of a change, not of a weight. Each write then checks the rebuilt classifier against the trained one on fixed
probe inputs (:data:`PROBE_SHAPE`): its largest logit difference must stay within :data:`COMPACT_TOLERANCE`,
else the checkpoint is written exactly (float32) and says so; the difference and the rebuilt model's probe
logits are stored (``stored.json``), and every load rebuilds the classifier and checks those logits again
(:data:`RELOAD_TOLERANCE`), so a changed encoder or rebuild never passes silently. Chapters 4-8 read the
rebuilt classifiers; ``benchmarks/precision.py`` shows per use that their numbers and verdicts equal the
float32 ones' (``benchmarks/README.md``).
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any, Mapping

import torch

from attnbook.core import cache
from attnbook.core.cache_admin import CHECKPOINTS_FOLDER, COMPLETE_FILE, WEIGHTS_FILE
from attnbook.core.io import atomic_write_json, sha256_file, temp_prefix, writer_alive
from attnbook.core.paths import cache_dir
from attnbook.engine.models import prepare_model

#: how a compact checkpoint was stored and checked (probe logits, the measured difference)
STORED_FILE = "stored.json"

#: largest |logit difference| allowed between a trained classifier and its compact rebuild on the probe inputs
COMPACT_TOLERANCE = 1e-2

#: largest |logit difference| allowed between a reload's probe logits and those stored at writing (the same
#: computation: only floating-point summation order may differ)
RELOAD_TOLERANCE = 1e-4

#: the probe inputs: (sequences, tokens) of ids drawn with seed 0 from the upper nine tenths of the vocabulary
PROBE_SHAPE = (4, 24)


class CheckpointCorruptWarning(UserWarning):
    """A cached checkpoint is incomplete or fails its checksum; it is trained again."""


def checkpoints_root() -> Path:
    """``cache_dir()/finetune``: one folder per checkpoint key."""
    path = cache_dir() / CHECKPOINTS_FOLDER
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


def probe_logits(model: torch.nn.Module) -> torch.Tensor:
    """``model``'s logits (float32) on the fixed probe inputs (:data:`PROBE_SHAPE`), in evaluation mode."""
    vocab = int(model.config.vocab_size)
    ids = torch.randint(vocab // 10, vocab, PROBE_SHAPE, generator=torch.Generator().manual_seed(0))
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            out = model(input_ids=ids.to(device), attention_mask=torch.ones_like(ids).to(device))
    finally:
        model.train(was_training)
    return out.logits.detach().float().cpu()


def _reference_of(model: torch.nn.Module, reference: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``reference`` (an encoder's state dict) under the classifier's names (``<base_model_prefix>.<name>``)."""
    prefix = getattr(model, "base_model_prefix", "")
    return {(f"{prefix}.{k}" if prefix else k): v for k, v in reference.items()}


def compact_state(state: Mapping[str, torch.Tensor], reference: Mapping[str, torch.Tensor]
                  ) -> tuple[dict[str, torch.Tensor], list[str]]:
    """The compact form of a classifier's ``state``: float16 changes against ``reference`` (classifier names)
    where it has the tensor, float16 values for the other floating-point tensors, the rest as they are; and the
    names stored as changes."""
    stored, deltas = {}, []
    for name, w in state.items():
        w = w.detach().cpu()
        ref = reference.get(name)
        if not w.is_floating_point():
            stored[name] = w.contiguous().clone()
        elif ref is not None and ref.shape == w.shape and ref.is_floating_point():
            stored[name] = (w.float() - ref.detach().cpu().float()).to(torch.float16).contiguous()
            deltas.append(name)
        else:
            stored[name] = w.to(torch.float16).contiguous()
    if not all(torch.isfinite(t).all() for t in stored.values() if t.is_floating_point()):
        raise OverflowError("a tensor does not fit float16")
    return stored, sorted(deltas)


def rebuild_state(stored: Mapping[str, torch.Tensor], deltas: list[str], reference: Mapping[str, torch.Tensor],
                  dtypes: Mapping[str, torch.dtype]) -> dict[str, torch.Tensor]:
    """The weights a compact checkpoint stands for: ``reference + change`` for the names in ``deltas``, the stored
    values for the rest, each in the model's own dtype (``dtypes``)."""
    out = {}
    for name, t in stored.items():
        dtype = dtypes.get(name, t.dtype)
        if name in deltas:
            out[name] = (reference[name].detach().cpu().float() + t.float()).to(dtype)
        else:
            out[name] = t.to(dtype) if t.is_floating_point() else t
    return out


def save_checkpoint(model: torch.nn.Module, key: str, meta: Mapping[str, Any], root: Path | None = None, *,
                    reference: Mapping[str, torch.Tensor] | None = None) -> Path:
    """Write ``model`` (weights + config) and ``meta`` under ``root/key``; returns the folder.

    With ``reference`` (the state dict of the encoder the classifier was initialised from; ``{}`` for a
    random-init one) the weights are stored compact (see the module's notes) when the rebuild passes
    :data:`COMPACT_TOLERANCE`, exactly otherwise; without it, exactly.

    Everything goes to a temporary sibling folder first; ``COMPLETE`` (SHA-256 of
    every other file) is written last and the folder is renamed into place, so a
    crash at any moment leaves either nothing under ``key`` or a complete checkpoint.
    """
    from safetensors.torch import save_file

    root = Path(root) if root else checkpoints_root()
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(key), dir=root))
    final = root / key
    try:
        state = {k: v.detach().cpu().contiguous().clone() for k, v in model.state_dict().items()}
        header = {"key": key, "format": "exact"}
        if reference is not None:
            record = _compact_record(model, state, _reference_of(model, reference))
            if record["format"] == "compact":
                state = record.pop("stored")
                header = {"key": key, "format": "compact", "deltas": json.dumps(record["deltas"])}
            atomic_write_json(tmp / STORED_FILE, {k: v for k, v in record.items() if k != "stored"})
        save_file(state, str(tmp / WEIGHTS_FILE), metadata=header)
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
    cache.note_use(CHECKPOINTS_FOLDER, key)
    return final


def _compact_record(model: torch.nn.Module, state: dict[str, torch.Tensor], reference: dict[str, torch.Tensor]
                    ) -> dict[str, Any]:
    """The compact form of ``model`` if its rebuild passes :data:`COMPACT_TOLERANCE` on the probe inputs: a record
    with ``format`` (``"compact"`` or ``"exact"``), the measured ``max_abs_logit_difference``, the rebuilt (or
    exact) model's ``probe_logits``, and for a compact one ``stored`` (the tensors) and ``deltas``."""
    import copy

    trained = probe_logits(model)
    try:
        stored, deltas = compact_state(state, reference)
    except OverflowError as exc:
        return {"format": "exact", "why": str(exc), "probe_logits": trained.tolist()}
    dtypes = {k: v.dtype for k, v in state.items()}
    rebuilt = copy.deepcopy(model)
    rebuilt.load_state_dict(rebuild_state(stored, deltas, reference, dtypes), strict=True)
    logits = probe_logits(rebuilt)
    diff = float((logits - trained).abs().max())
    if not diff <= COMPACT_TOLERANCE:
        return {"format": "exact", "why": f"the float16 rebuild's logits differ by {diff:.2g} > {COMPACT_TOLERANCE}",
                "max_abs_logit_difference": diff, "probe_logits": trained.tolist()}
    return {"format": "compact", "stored": stored, "deltas": deltas, "max_abs_logit_difference": diff,
            "tolerance": COMPACT_TOLERANCE, "probe_logits": logits.tolist()}


def _remove_stale_tmp(root: Path, key: str) -> None:
    """Delete temporary folders of ``key`` left by writers of this machine that no longer run (:func:`writer_alive`;
    another machine's are its work in flight on a shared cache)."""
    for tmp in root.glob(f".{key}.tmp-*"):
        if tmp.name.startswith(temp_prefix(key)) or not writer_alive(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


def read_complete(folder: Path) -> dict | None:
    """The ``COMPLETE`` record of a checkpoint folder if every file matches its checksum, else ``None``."""
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


def load_checkpoint(key: str, root: Path | None = None, *, reference: Mapping[str, torch.Tensor] | None = None
                    ) -> tuple[torch.nn.Module, dict] | None:
    """The checkpoint stored under ``key`` as ``(model, meta)``, or ``None`` when absent.

    A compact checkpoint is rebuilt on ``reference`` (the encoder's state dict it was written with) and its probe
    logits checked against the stored ones (:data:`RELOAD_TOLERANCE`). An incomplete or corrupt checkpoint, a
    compact one without its reference or whose rebuild fails the check also gives ``None``, with a
    :class:`CheckpointCorruptWarning` (the caller trains it again).
    """
    from safetensors import safe_open
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
        state = load_file(str(folder / WEIGHTS_FILE))
        with safe_open(str(folder / WEIGHTS_FILE), framework="pt") as fh:
            header = fh.metadata() or {}
        if header.get("format") == "compact":
            if reference is None:
                raise ValueError("a compact checkpoint needs the encoder it was written with (reference=)")
            dtypes = {k: v.dtype for k, v in model.state_dict().items()}
            state = rebuild_state(state, json.loads(header["deltas"]), _reference_of(model, reference), dtypes)
        model.load_state_dict(state, strict=True)
        if (folder / STORED_FILE).exists():
            expected = torch.tensor(json.loads((folder / STORED_FILE).read_text())["probe_logits"])
            diff = float((probe_logits(model) - expected).abs().max())
            if not diff <= RELOAD_TOLERANCE:
                raise ValueError(f"its rebuild's probe logits differ from the stored ones by {diff:.2g}")
        meta = json.loads((folder / "meta.json").read_text())
    except Exception as exc:  # a checkpoint from an incompatible version of the code
        warnings.warn(f"checkpoint {folder} could not be loaded ({exc}); training it again",
                      CheckpointCorruptWarning, stacklevel=3)
        return None
    model.eval()
    cache.note_use(CHECKPOINTS_FOLDER, key)
    return prepare_model(model), meta
