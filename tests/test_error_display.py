"""An error the book raises on purpose shows, in a notebook, its message that names the fix, not a traceback."""
from __future__ import annotations

import pytest

from attnbook.core.errors import AttnbookError, MissingDataError


@pytest.fixture
def shell():
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    return start_ipython() or get_ipython()


def test_a_notebook_shows_the_fix_not_the_internals(shell, capsys, monkeypatch):
    monkeypatch.delenv("ATTNBOOK_TRACEBACKS", raising=False)
    shell.run_cell("from attnbook.core.errors import MissingDataError\n"
                   "def deep():\n    raise MissingDataError('glue/SST-2/dev.tsv', 'glue', '/nowhere')\n"
                   "deep()")
    shown = capsys.readouterr()
    text = shown.out + shown.err
    assert "MissingDataError" in text and "attnbook fetch glue" in text
    assert "Traceback" not in text and "deep()" not in text


def test_other_errors_and_the_switch_keep_the_traceback(shell, capsys, monkeypatch):
    shell.run_cell("def deep():\n    raise ValueError('a bug')\ndeep()")
    assert "deep()" in capsys.readouterr().out  # a real bug keeps its traceback
    monkeypatch.setenv("ATTNBOOK_TRACEBACKS", "1")
    with pytest.raises(NotImplementedError):
        AttnbookError("x")._render_traceback_()
    monkeypatch.setenv("ATTNBOOK_TRACEBACKS", "0")
    assert MissingDataError("a", "b", "c")._render_traceback_()[0].endswith("(now: c).")
