"""The heap behaviour the engine needs: memory that stays flat however many batches stream through, at full speed.

glibc's ``malloc`` serves large blocks (above the *mmap threshold*) with ``mmap`` and gives them back to the system
when freed. By default the threshold is dynamic: each freed mmapped block raises it to that block's size, so after
the first batches every activation tensor of a forward pass (a few MB each) is carved from the heap instead, and the
heap grows with fragmentation and keeps its high-water mark. Streaming 1,000 segments then peaked at 2.26x the RSS of
100 segments (``make bench``), although the engine keeps no per-segment data.

Fixing the threshold at glibc's starting value (128 KiB) keeps those tensors in mmapped blocks that return to the
system when freed, and the peak stays flat (1.03x). But every such allocation is then a fresh mapping whose pages the
kernel faults in and zeroes, and from 26 to 27 November 2026 the engine fixed it for the whole process: every forward
pass and every training step paid for it. Measured on one machine in one session (2026-11-27, the embedded model): a
forward pass ran at 72-77 GFLOP/s instead of 120-130, bfloat16 training at 107-111 instead of 164-198, and
fine-tuning on 2,000 SST-2 examples took 30.5-30.9 s instead of 20.4-21.7 s.

So the threshold is now fixed only while the engine streams batches through reducers (:func:`streaming`, used by
:func:`attnbook.engine.extract.stream_attention` and :func:`~attnbook.engine.extract.stream_batches`), where the
flat peak is what matters; everywhere else it sits at glibc's largest value (:data:`LARGE`, the most the dynamic
threshold can rise to), so training, sweeps and importance scores run at close to glibc's own speed (fine-tuning on
the same 2,000 examples: 21.7-21.8 s, against 19.4-21.7 s with glibc untouched and 29.7-30.9 s fixed).

``ATTNBOOK_HEAP`` chooses: ``scoped`` (default: as above), ``fixed`` (128 KiB everywhere, the behaviour before) or
``default`` (glibc's dynamic threshold, untouched). :func:`configure_heap` applies it once per process
(:mod:`attnbook.engine` calls it on import); on a C library other than glibc nothing changes. ``make bench``
measures the memory ratio of each.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
from typing import Iterator

from attnbook.core.errors import ParameterError

#: ``M_MMAP_THRESHOLD`` of glibc's ``<malloc.h>``
M_MMAP_THRESHOLD = -3
#: glibc's initial mmap threshold (``DEFAULT_MMAP_THRESHOLD_MIN``): blocks from this size on are mmapped
THRESHOLD = 128 * 1024
#: glibc's largest mmap threshold on 64-bit systems (``DEFAULT_MMAP_THRESHOLD_MAX``), the most its dynamic threshold
#: can rise to: outside the streaming the engine runs with it
LARGE = 32 * 1024 * 1024
#: the heap modes ``ATTNBOOK_HEAP`` may name
MODES = ("scoped", "fixed", "default")

_state: dict[str, object] = {"mode": None, "mallopt": None, "depth": 0}


def heap_mode() -> str:
    """``$ATTNBOOK_HEAP`` (default ``scoped``); an error naming the choices for anything else."""
    mode = os.environ.get("ATTNBOOK_HEAP", "scoped").strip() or "scoped"
    if mode not in MODES:
        raise ParameterError(f"ATTNBOOK_HEAP={mode!r}: choose one of {', '.join(MODES)} (unset: scoped)")
    return mode


def _mallopt():
    if _state["mallopt"] is None:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            fn = libc.mallopt
            fn.argtypes, fn.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
            _state["mallopt"] = fn
        except (OSError, AttributeError):  # not glibc
            _state["mallopt"] = False
    return _state["mallopt"] or None


def _threshold(value: int) -> bool:
    fn = _mallopt()
    return bool(fn is not None and fn(M_MMAP_THRESHOLD, int(value)))


def configure_heap() -> str:
    """Apply ``$ATTNBOOK_HEAP`` to this process once (idempotent) and return the mode in force: ``scoped`` sets the
    threshold to :data:`LARGE` (:func:`streaming` lowers it while batches stream), ``fixed`` to :data:`THRESHOLD`,
    ``default`` leaves glibc alone (also the mode returned when the C library is not glibc)."""
    if _state["mode"] is not None:
        return str(_state["mode"])
    mode = heap_mode()
    if mode != "default" and not _threshold(LARGE if mode == "scoped" else THRESHOLD):
        mode = "default"
    _state["mode"] = mode
    return mode


@contextlib.contextmanager
def streaming() -> Iterator[None]:
    """While batches stream through reducers: the mmap threshold at :data:`THRESHOLD`, so each batch's large tensors
    go back to the system when freed and the peak stays flat; back to :data:`LARGE` on leaving (``scoped`` mode; the
    other modes change nothing). Nested uses keep the low threshold until the outermost one ends."""
    scoped = configure_heap() == "scoped"
    if scoped and _state["depth"] == 0:
        _threshold(THRESHOLD)
    _state["depth"] = int(_state["depth"]) + 1
    try:
        yield
    finally:
        _state["depth"] = int(_state["depth"]) - 1
        if scoped and _state["depth"] == 0:
            _threshold(LARGE)


def heap_fixed() -> bool | None:
    """Whether the mmap threshold is low in this process right now (``None``: the heap was not configured yet)."""
    if _state["mode"] is None:
        return None
    return _state["mode"] == "fixed" or (_state["mode"] == "scoped" and int(_state["depth"]) > 0)
