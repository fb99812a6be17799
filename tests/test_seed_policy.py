"""One rule combines fine-tuning seeds everywhere (:data:`attnbook.stats.SEED_POLICY`), and the pages state it."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import t as student

from attnbook.core.errors import EmptyDataError, ParameterError
from attnbook.stats import SEED_POLICY, Estimate, over_seeds, pooled_seed_sd
from attnbook.studies.kovaleva import table1
from attnbook.studies.michel.runs import across_seeds
from attnbook.studies.niven_kao.paper import combined_estimate, run_estimate, seed_estimate

ROOT = Path(__file__).resolve().parents[1]


def own(value, low, high):
    return Estimate(value, low, high, 400, "dev examples")


def test_several_seeds_count_the_seed_spread_and_each_runs_own_error():
    """Variance components: s^2/k from the seeds plus the mean of the runs' squared standard errors (from their
    intervals), Student's t on Satterthwaite's degrees of freedom."""
    values = [0.80, 0.84, 0.82]
    se = 0.01 / 1.959963984540054
    between, item = np.var(values, ddof=1) / 3, se ** 2
    df = (between + item) ** 2 / (between ** 2 / 2 + item ** 2 / 399)
    half = student.ppf(0.975, df) * np.sqrt(between + item)
    est = over_seeds([own(v, v - 0.01, v + 0.01) for v in values], bounds=(0.0, 0.835))
    assert est.value == pytest.approx(0.82) and est.unit == "seeds" and est.n == 3
    assert (est.low, est.high) == (pytest.approx(0.82 - half), 0.835)
    assert est.df == pytest.approx(df) and est.seed_var == pytest.approx(between) and est.item_var == pytest.approx(item)


def test_seeds_that_agree_by_chance_keep_the_runs_own_error():
    """Regression: t over three seed means gave an interval narrower than one run's item error when the seeds agreed
    by chance (ARCT's 444 items: about ±4.6 points a run), and zero width for identical seeds."""
    runs = [run_estimate(0.55, 444) for _ in range(3)]  # identical seeds
    got = over_seeds(runs, bounds=(0.0, 1.0))
    one = runs[0]
    assert got.high - got.low >= 0.9 * (one.high - one.low)  # old: 0 (t over identical values)
    close = [run_estimate(v, 444) for v in (0.550, 0.552, 0.554)]
    assert over_seeds(close).high - over_seeds(close).low > 0.08  # old: about 0.010
    with pytest.raises(ParameterError, match="zero-wide"):
        over_seeds([Estimate(0.5), Estimate(0.5)])


def test_one_seed_keeps_its_own_interval_or_borrows_a_pooled_spread():
    one = own(0.7, 0.6, 0.8)
    assert over_seeds([one]) is one
    with pytest.raises(EmptyDataError):
        over_seeds([])
    pooled = pooled_seed_sd([[0.80, 0.84, 0.82], [0.60, 0.70]])
    ss = np.sum((np.array([0.80, 0.84, 0.82]) - 0.82) ** 2) + np.sum((np.array([0.60, 0.70]) - 0.65) ** 2)
    assert pooled == (pytest.approx(np.sqrt(ss / 3)), 3.0)
    wider = over_seeds([one], seed_sd=pooled)
    assert wider.low < one.low and wider.high > one.high and wider.n == 1
    assert pooled_seed_sd([[0.5], [0.6]]) is None


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
    got = combined_estimate(a, b, 444, 444, sign=-1)
    assert got.value == pytest.approx(float(np.mean(a - b))) and got.unit == "seeds" and got.item_var > 0
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


def test_identical_seeds_up_to_rounding_have_no_seed_spread():
    """Regression: seed values equal but for floating-point rounding left a between-seed variance of about 1e-33,
    so runs without intervals were not refused and got a near-zero-wide interval."""
    v = 0.1 + 0.2
    with pytest.raises(ParameterError, match="zero-wide"):
        over_seeds([Estimate(v), Estimate(0.3), Estimate(0.30000000000000004)])
