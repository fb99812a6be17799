"""One rule combines fine-tuning seeds everywhere (:data:`attnbook.stats.SEED_POLICY`), and the pages state it."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import t as student

from attnbook.core.errors import EmptyDataError
from attnbook.stats import SEED_POLICY, Estimate, over_seeds
from attnbook.studies.kovaleva import table1
from attnbook.studies.michel.runs import across_seeds
from attnbook.studies.niven_kao.paper import combined_estimate, run_estimate, seed_estimate

ROOT = Path(__file__).resolve().parents[1]


def own(value, low, high):
    return Estimate(value, low, high, 400, "dev examples")


def test_several_seeds_get_students_t_over_their_values():
    values = [0.80, 0.84, 0.82]
    half = student.ppf(0.975, 2) * np.std(values, ddof=1) / np.sqrt(3)
    est = over_seeds([own(v, v - 0.01, v + 0.01) for v in values], bounds=(0.0, 0.835))
    assert est.value == pytest.approx(0.82) and est.unit == "seeds" and est.n == 3
    assert (est.low, est.high) == (pytest.approx(0.82 - half), 0.835)


def test_one_seed_keeps_its_own_interval():
    one = own(0.7, 0.6, 0.8)
    assert over_seeds([one]) is one
    with pytest.raises(EmptyDataError):
        over_seeds([])


def test_michel_combines_seeds_by_the_rule_not_by_the_union_of_intervals():
    """Regression: chapter 6 joined the seeds' intervals (lowest low, highest high), a second policy beside chapter
    4's and 7's t over seeds. Two seeds with narrow intervals far apart: the union is [0.1, 0.9]; the rule's
    interval is t over the two values."""
    runs = [own(0.2, 0.1, 0.3), own(0.8, 0.7, 0.9)]
    got = across_seeds(runs)
    assert got == over_seeds(runs)
    assert (got.low, got.high) != (0.1, 0.9)


def test_every_chapter_that_combines_seeds_calls_the_rule():
    assert seed_estimate([0.6, 0.7, 0.65], 444) == over_seeds([run_estimate(v, 444) for v in (0.6, 0.7, 0.65)],
                                                              bounds=(0.0, 1.0))
    a, b = np.array([0.5, 0.6]), np.array([0.4, 0.45])
    assert combined_estimate(a, b, 444, 444, sign=-1) == over_seeds([own(x, None, None) for x in a - b],
                                                                     bounds=(-1.0, 1.0))
    source = Path(table1.__file__).read_text()
    assert "over_seeds(" in source and "mean_interval(" not in source
    # no other module takes a t-interval over seeds by itself
    calls = [p for p in (ROOT / "attnbook").rglob("*.py") if p.name != "stats.py"
             and re.search(r"mean_interval\([^)]*unit=\"seeds\"", p.read_text())]
    assert calls == []


@pytest.mark.parametrize("chapter", ["04_kovaleva_taxonomy", "06_michel_pruning", "07_arct_cues"])
def test_the_pages_that_combine_seeds_state_the_rule(chapter):
    cells = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text())["cells"]
    prose = " ".join("".join(c["source"]).replace("\n", " ") for c in cells if c["cell_type"] == "markdown")
    assert SEED_POLICY in prose
