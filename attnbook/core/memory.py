"""The heap behaviour the engine needs: memory that stays flat however many batches stream through.

glibc's ``malloc`` serves large blocks (above the *mmap threshold*) with ``mmap`` and gives them back to the system
when freed. By default the threshold is dynamic: each freed mmapped block raises it to that block's size, so after
the first batches every activation tensor of a forward pass (a few MB each) is carved from the heap instead, and the
heap grows with fragmentation and keeps its high-water mark. Streaming 1,000 segments then peaked at 2.26x the RSS of
100 segments (``make bench``), although the engine keeps no per-segment data. Fixing the threshold at glibc's own
starting value (128 KiB), which also turns the dynamic adjustment off, keeps large tensors in mmapped blocks that
return to the system when freed; the peak then no longer grows with the number of segments.

:func:`fix_heap` does that through ``mallopt`` once per process; :mod:`attnbook.engine` calls it on import, so the
chapters, the command line, the benchmarks and anyone using :mod:`attnbook.heads` run with it. ``ATTNBOOK_HEAP=default``
keeps glibc's default behaviour (to measure the difference); on a C library other than glibc nothing changes.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os

#: ``M_MMAP_THRESHOLD`` of glibc's ``<malloc.h>``
M_MMAP_THRESHOLD = -3
#: glibc's initial mmap threshold (``DEFAULT_MMAP_THRESHOLD_MIN``): blocks from this size on are mmapped
THRESHOLD = 128 * 1024

_state: dict[str, object] = {"fixed": None}


def fix_heap(threshold: int = THRESHOLD) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes for this process (idempotent); ``True`` when it is set.

    ``False`` when ``ATTNBOOK_HEAP=default`` asks for glibc's default, or the C library has no ``mallopt``."""
    if _state["fixed"] is not None:
        return bool(_state["fixed"])
    if os.environ.get("ATTNBOOK_HEAP", "fixed") == "default":
        _state["fixed"] = False
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        _state["fixed"] = False
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    _state["fixed"] = bool(mallopt(M_MMAP_THRESHOLD, int(threshold)))
    return bool(_state["fixed"])


def heap_fixed() -> bool | None:
    """Whether :func:`fix_heap` set the threshold in this process (``None``: not asked yet)."""
    return None if _state["fixed"] is None else bool(_state["fixed"])
