"""The heap mode (attnbook.core.memory): the low mmap threshold only while batches stream (issue 30's flat memory
without its cost to every other computation)."""
from __future__ import annotations

import pytest

from attnbook.core import memory
from attnbook.core.errors import ParameterError


@pytest.fixture
def fresh(monkeypatch):
    """A heap not configured yet, whose threshold changes are recorded instead of made."""
    calls: list[int] = []
    monkeypatch.setitem(memory._state, "mode", None)
    monkeypatch.setitem(memory._state, "depth", 0)
    monkeypatch.setattr(memory, "_threshold", lambda value: calls.append(value) or True)
    return calls


def test_the_threshold_is_low_only_while_batches_stream(fresh, monkeypatch):
    """Regression (2026-11-27): the engine fixed the 128 KiB threshold for the whole process on import, and every
    forward pass and training step paid for fresh mappings (fine-tuning 1.45x slower). Now it is low only inside
    :func:`memory.streaming`, nested uses included, and back at glibc's largest value after."""
    monkeypatch.delenv("ATTNBOOK_HEAP", raising=False)
    assert memory.configure_heap() == "scoped" and fresh == [memory.LARGE]
    assert memory.heap_fixed() is False
    with memory.streaming():
        assert memory.heap_fixed() is True and fresh[-1] == memory.THRESHOLD
        with memory.streaming():
            assert memory.heap_fixed() is True
        assert memory.heap_fixed() is True and fresh[-1] == memory.THRESHOLD  # the inner one did not restore
    assert memory.heap_fixed() is False and fresh == [memory.LARGE, memory.THRESHOLD, memory.LARGE]
    with pytest.raises(RuntimeError), memory.streaming():
        raise RuntimeError("a reducer failed")
    assert fresh[-1] == memory.LARGE and memory._state["depth"] == 0  # restored on an error too


@pytest.mark.parametrize("mode, first", [("fixed", [memory.THRESHOLD]), ("default", [])])
def test_the_other_modes_leave_the_threshold_alone_while_streaming(fresh, monkeypatch, mode, first):
    monkeypatch.setenv("ATTNBOOK_HEAP", mode)
    assert memory.configure_heap() == mode and fresh == first
    with memory.streaming():
        pass
    assert fresh == first and memory.heap_fixed() is (mode == "fixed")


def test_an_unknown_heap_mode_names_the_choices(fresh, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_HEAP", "huge")
    with pytest.raises(ParameterError, match="choose one of scoped, fixed, default"):
        memory.configure_heap()


def test_streaming_extraction_runs_with_the_low_threshold(fresh, monkeypatch, tiny_bert):
    """The engine's streaming loop is where the threshold drops: a reducer sees it low, the caller after it high."""
    from attnbook.engine.extract import stream_attention
    from attnbook.engine.inputs import encode_words

    monkeypatch.delenv("ATTNBOOK_HEAP", raising=False)
    memory.configure_heap()
    seen = []

    class Probe:
        def update(self, attn, batch):
            seen.append(memory.heap_fixed())

        def result(self):
            return len(seen)

    examples = [encode_words(tiny_bert.tokenizer, t.split()) for t in ("the cat sat", "a dog barked at it")]
    assert stream_attention(tiny_bert, examples, [Probe()], batch_size=1, progress=False) == [2]
    assert seen == [True, True] and memory.heap_fixed() is False
