"""Reduced precision where the hardware runs it natively: the ``bf16`` parameter of the training recipes.

bfloat16 autocast speeds training up only on hardware that computes in bfloat16: a CUDA GPU that supports it, or a
CPU with AVX-512 (BF16) or AMX, which oneDNN uses. Elsewhere PyTorch emulates it, and the same autocast makes
training several times *slower* than float32 (``benchmarks/precision.py`` measures both on the machine it runs on:
on the project's AVX2-only EPYC machines bfloat16 matrix products ran about 8x slower than float32). A recipe's
``bf16`` is therefore ``True``, ``False`` or ``"auto"``: ``"auto"`` is resolved, once, to whether this machine's
device runs bfloat16 natively (:func:`native_bf16`). The resolved value is what the checkpoint cache key holds and
what the chapter states, so a book built in float32 never reads a classifier trained in bfloat16, nor the reverse;
``benchmarks/precision.py`` shows that the verdicts do not depend on it.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import torch

from attnbook.core.errors import ParameterError
from attnbook.engine import models

AUTO = "auto"


@lru_cache(maxsize=None)
def native_bf16(device: str = "cpu") -> bool:
    """Whether ``device`` (a device type: ``"cpu"``, ``"cuda"``) computes in bfloat16 natively: for a CUDA device,
    ``torch.cuda.is_bf16_supported()``; for the CPU, oneDNN's check (AVX-512 with BF16, or AMX)."""
    kind = torch.device(device).type
    if kind == "cuda":
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    if kind == "cpu":
        check = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
        try:
            return bool(check()) if check is not None else False
        except RuntimeError:  # pragma: no cover - a build without oneDNN
            return False
    return False


def resolve_bf16(value: Any, device: str | torch.device | None = None) -> bool:
    """A recipe's ``bf16`` as a bool: ``True``/``False`` as given, ``"auto"`` as :func:`native_bf16` of ``device``
    (default: the device models load on, :func:`attnbook.engine.models.resolve_device`)."""
    if isinstance(value, bool):
        return value
    if value == AUTO:
        if device is None:
            device = models.resolve_device(models._DEFAULT_DEVICE)
        return native_bf16(torch.device(device).type)
    if value in (0, 1) and not isinstance(value, str):
        return bool(value)
    raise ParameterError(f"bf16 is True, False or 'auto' (bfloat16 where the hardware runs it natively), got {value!r}")


def training_sentence(asked: Any, used: bool) -> str:
    """What a chapter says about the precision of its training passes: the precision used and, for ``"auto"``, why."""
    if used:
        why = " (`bf16=\"auto\"`: this machine runs bfloat16 natively)" if asked == AUTO else ""
        return f"Training passes run under bfloat16 autocast{why}; weights, optimiser state and evaluation in float32."
    if asked == AUTO:
        return ("Training passes run in float32: the recipe asks for bfloat16 only where the hardware runs it "
                "natively (`bf16=\"auto\"`), and this machine does not (bfloat16 would be emulated, and slower).")
    return "Training passes run in float32."
