"""Writing files so that an interrupted run never leaves one that looks complete.

Every file attnbook writes goes to a temporary name in the same folder and is
renamed into place only after it was flushed to disk (``os.replace`` is atomic
on POSIX, also on a shared filesystem such as NFS within one folder). A killed
process leaves at most a ``*.tmp-<pid>@<host>-*`` file, which no reader opens and
which only that machine removes once the process is gone (:func:`writer_alive`).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import socket
import tempfile
from pathlib import Path
from typing import Any, Iterator


@contextlib.contextmanager
def atomic_path(path: Path | str) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success rename it onto ``path``.

    On an exception the temporary file is removed and ``path`` is untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=temp_prefix(path.name), dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual permissions
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


#: this machine's name as temporary files carry it (letters, digits, dots; anything else becomes "_")
HOST = re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "host"


def temp_prefix(name: str) -> str:
    """The prefix of a temporary file or folder that becomes ``name``: ``.<name>.tmp-<pid>@<host>-``. The process
    and the machine that write it are in its name, so a sweep removes only temporaries whose writer is known to be
    gone: a process of this machine that no longer runs (:func:`writer_alive`)."""
    return f".{name}.tmp-{os.getpid()}@{HOST}-"


_WRITER = re.compile(r"\.tmp-(\d+)(?:@([A-Za-z0-9._]+))?-")


def writer_alive(tmp: Path) -> bool:
    """Whether the writer of temporary ``tmp`` may still run: a process of this machine that runs, or any process of
    another machine (a cache on a shared filesystem: this machine cannot tell, so it never removes another host's
    work in flight). A name without a host is this machine's."""
    match = _WRITER.search(Path(tmp).name)
    if not match:
        return False
    if match.group(2) not in (None, HOST):
        return True
    try:
        os.kill(int(match.group(1)), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: Path | str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(path: Path | str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path | str, obj: Any) -> None:
    """Write ``obj`` as pretty, key-sorted JSON atomically (stable bytes for equal objects)."""
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n")


def _json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot write {type(obj).__name__} as JSON")


def sha256_file(path: Path | str, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_matches(path: Path, sha256: str, size: int | None) -> bool:
    """True if ``path`` exists with this size and SHA-256 (the size is compared first, cheaply)."""
    try:
        if size is not None and path.stat().st_size != size:
            return False
    except FileNotFoundError:
        return False
    return sha256_file(path) == sha256
