"""Offline chart rendering, the results files and the results overview page."""
from __future__ import annotations

import json

import altair as alt
import numpy as np
import pytest

from attnbook import charts as plots
from attnbook.chapters.frontmatter import results_markdown
from attnbook.core.heads import all_head_labels, head_label, parse_head_label
from attnbook.chapters.results import ChapterResults, load_results


def test_head_labels_are_one_based():
    assert head_label(7, 9) == "8-10"
    assert parse_head_label("8-10") == (7, 9)
    assert all_head_labels(2, 2) == ["1-1", "1-2", "2-1", "2-2"]
    with pytest.raises(ValueError):
        parse_head_label("0-1")
    with pytest.raises(ValueError):
        head_label(-1, 0)


def test_renderer_embeds_static_svg_and_interactive_spec():
    chart = plots.head_heatmap(np.arange(6.0).reshape(2, 3), title="t")
    bundle = plots.attnbook_renderer(chart.to_dict())
    html = bundle["text/html"]
    assert bundle["image/svg+xml"].lstrip().startswith("<svg")
    assert "<svg" in html and "vegaEmbed" in html and "attnbook-static" in html
    assert "2-3" in bundle["image/svg+xml"] or "layer" in bundle["image/svg+xml"]
    assert "cdn" not in html.lower()  # nothing loaded from the network
    again = plots.attnbook_renderer(chart.to_dict())["text/html"]
    assert html == again  # deterministic ids: re-running a chapter gives the same page


def test_line_view_params_are_unique_and_concat_renders():
    toks = ["[CLS]", "a", "b", "[SEP]"]
    attn = np.random.default_rng(0).dirichlet(np.ones(4), size=(2, 2, 4))
    a = plots.line_view(toks, attn, title="one")
    b = plots.line_view(toks, attn, title="two")
    plots.chart_to_svg((a | b).to_dict())  # duplicate parameter names would fail here
    df = plots.line_view_frame(toks, attn, threshold=0.0)
    assert len(df) == 2 * 2 * 4 * 4 and set(df["label"]) == {"1-1", "1-2", "2-1", "2-2"}


def test_enable_registers_renderer():
    plots.enable()
    assert alt.renderers.active == "attnbook"


def test_results_files_are_deterministic(tmp_path):
    from attnbook import verdict
    from attnbook.stats import Estimate

    def make():
        res = ChapterResults("01_test", {"profile": "smoke", "seed": 0}, {"name": "m", "fingerprint": "f"})
        res.add("x", np.float32(0.1234567891))
        res.add("arr", np.arange(3))
        res.compare(verdict.row("§1", "q", paper=1.0, ours=0.98765, rule=verdict.Within(0.05, 0.1), note="n"))
        res.compare(verdict.row("§2", "r", paper=0.5, ours=Estimate(0.67, 0.64, 0.7, 400, "examples"),
                                  rule=verdict.Within(0.05, 0.1)))
        return res

    timed = make()
    timed.add_timing("fit", 12.34)  # timings differ between runs: they go to the provenance only
    p1 = timed.save(tmp_path / "a")
    other = make()
    other.add_timing("fit", 99.0)
    p2 = other.save(tmp_path / "b")
    assert p1.read_bytes() == p2.read_bytes()
    data = json.loads(p1.read_text())
    assert data["numbers"]["arr"] == [0, 1, 2] and data["comparisons"][0]["ours"] == 0.9877
    second = data["comparisons"][1]
    assert second["low"] == 0.64 and second["high"] == 0.7 and second["n"] == 400 and second["verdict"] == "disagrees"
    assert second["rule"].startswith("whole 95% interval within ±0.05 of the paper's value agrees")
    prov = json.loads((tmp_path / "a" / "01_test.provenance.json").read_text())
    assert prov["seed"] == 0 and "torch" in prov["packages"] and prov["timings"] == {"fit": 12.3}
    with pytest.raises(ValueError, match="verdict"):
        verdict.Comparison("§1", "q", 1, 2, "maybe", rule="r")
    with pytest.raises(ValueError, match="rule"):  # an outcome must come with its rule
        verdict.Comparison("§1", "q", 1, 2, "agrees")
    with pytest.raises(TypeError, match="verdict.row"):  # rows are typed: a dict is refused
        make().compare({"experiment": "§1", "quantity": "q", "verdict": "agrees", "rule": "r"})
    assert "01_test" in load_results(tmp_path / "a")
    md = results_markdown(tmp_path / "a")
    assert "| 01_test | 1 | 0 | 1 | 0 | 0 | 2 | 100% |" in md  # outcome counts per chapter, share decided
    assert ('| 01_test §2: r | 0.5 | 0.67 [0.64, 0.7] | '
            '<span class="attnbook-outcome attnbook-outcome-disagrees">disagrees</span> |') in md


def test_provenance_refuses_a_missing_data_file(tmp_path):
    """Regression (issue 17, defect 7): a data file that vanished was recorded with sha256 null."""
    from attnbook.core.errors import MissingDataError

    res = ChapterResults("01_test", {"profile": "smoke", "seed": 0}, {"name": "m", "fingerprint": "f"})
    res.use_data(tmp_path / "gone.tsv")
    with pytest.raises(MissingDataError, match="gone.tsv"):
        res.save(tmp_path / "out")


def test_a_stored_outcome_is_its_rule_on_the_numbers_the_file_keeps(tmp_path):
    """Issue 32: compare() rounds a row's numbers to four decimals for the table and the file; the outcome is now
    the rule's on the rounded numbers, so a reader recomputing it from the file gets the stored one (old: an interval
    whose low end 0.00003 made a gain "agree" was stored as [0, ...] with "agrees", which its rule does not give)."""
    from attnbook import verdict
    from attnbook.stats import Estimate

    res = ChapterResults("01_test", {"profile": "smoke", "seed": 0}, {"name": "m", "fingerprint": "f"})
    row = verdict.row("§1", "gain", paper="> 0", ours=Estimate(0.5, 0.00003, 1.0, 100), rule=verdict.Beyond(0.0))
    assert row.verdict == verdict.AGREES
    res.compare(row)
    stored = json.loads(res.save(tmp_path).read_text())["comparisons"][0]
    assert stored["low"] == 0.0 and stored["verdict"] == verdict.INCONCLUSIVE and "on 100 units" in stored["detectable"]
    assert verdict.Comparison.from_dict(stored).rejudged() == stored["verdict"]
