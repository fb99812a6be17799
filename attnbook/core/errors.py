"""Errors that name their fix.

Every error a reader can hit says what went wrong *and* what to do about it:
missing data names the fetch command and the variable to set, malformed files
name the file and the line, and so on. All derive from :class:`AttnbookError`
so a caller can catch the family at once.
"""
from __future__ import annotations

from pathlib import Path


class AttnbookError(Exception):
    """Base class of every error attnbook raises on purpose."""

    def _render_traceback_(self) -> list[str]:
        """What a notebook (IPython, JupyterLab, an executed page) shows for it: the message that names the fix,
        not a traceback through the book's internals. ``ATTNBOOK_TRACEBACKS=1`` shows the full traceback."""
        import os

        if os.environ.get("ATTNBOOK_TRACEBACKS", "") not in ("", "0"):
            raise NotImplementedError  # IPython then prints its usual traceback
        return [f"\x1b[0;31m{type(self).__name__}\x1b[0m: {self}"]


class MissingDataError(AttnbookError, FileNotFoundError):
    """A data file or folder is not in the data directory."""

    def __init__(self, path: Path | str, dataset: str, data_dir: Path | str):
        self.path = Path(path)
        self.dataset = dataset
        self.data_dir = Path(data_dir)
        super().__init__(
            f"missing data: {self.path} (dataset '{dataset}').\n"
            f"  Fetch it with:   attnbook fetch {dataset}\n"
            f"  or point ATTNBOOK_DATA at a folder that has it (now: {self.data_dir})."
        )


class MalformedInputError(AttnbookError, ValueError):
    """A data file does not follow its format; names the file and line (1-based)."""

    def __init__(self, path: Path | str, line: int | None, message: str):
        self.path = Path(path)
        self.line = line
        where = f"{self.path}:{line}" if line is not None else str(self.path)
        super().__init__(f"malformed input at {where}: {message}")


class EmptyDataError(AttnbookError, ValueError):
    """Nothing is left to analyse after filtering."""


class ModelError(AttnbookError, ValueError):
    """A model cannot be loaded or cannot do what an experiment needs."""


class ParameterError(AttnbookError, ValueError):
    """An unknown profile, an unknown parameter, or a parameter value out of range."""


class ChapterExecutionError(AttnbookError, RuntimeError):
    """A chapter notebook failed; names the chapter, the cell and the error."""

    def __init__(self, chapter: str, cell: int | None, ename: str, evalue: str, log: Path | None = None):
        self.chapter, self.cell, self.ename, self.evalue, self.log = chapter, cell, ename, evalue, log
        where = f"cell {cell}" if cell is not None else "an unknown cell"
        extra = f"\n  the failed notebook is kept at {log}" if log else ""
        super().__init__(f"chapter {chapter} failed in {where}: {ename}: {evalue}{extra}")
