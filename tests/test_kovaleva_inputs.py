"""The GLUE dev inputs of the Kovaleva measurements: texts, encoding and seeded samples."""
from __future__ import annotations

import pytest

from attnbook.core.errors import ParameterError
from attnbook.studies.kovaleva import inputs as I
from attnbook.studies.kovaleva import labels as L

from test_pattern_labels import glue_dir  # noqa: F401  (the fixture: three RTE dev rows)


@pytest.mark.usefixtures("glue_dir")
def test_glue_examples_are_seeded_samples(tokenizer):
    a = I.glue_examples(tokenizer, "RTE", 2, seed=4)
    b = I.glue_examples(tokenizer, "RTE", 2, seed=4)
    assert [e.meta["row"] for e in a] == [e.meta["row"] for e in b]
    assert len(I.glue_examples(tokenizer, "RTE")) == 3
    ids = L.sample_label_ids(["RTE"], rows_per_task=2, heads_per_row=3, n_layers=2, n_heads=4, seed=0)
    assert len(ids) == 6 and len(set(ids)) == 6
    assert all(0 <= r < 3 and 0 <= l < 2 and 0 <= h < 4 for _, r, l, h in ids)


def test_sample_rows_seeded_sorted_and_capped():
    a = I.sample_rows(100, 10, seed=3)
    assert a == sorted(a) and len(set(a)) == 10 and a == I.sample_rows(100, 10, seed=3)
    assert a != I.sample_rows(100, 10, seed=4)
    assert I.sample_rows(5, 10, seed=0) == [0, 1, 2, 3, 4]
    with pytest.raises(ParameterError):
        I.sample_rows(5, 0, seed=0)
