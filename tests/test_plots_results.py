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
    def make():
        res = ChapterResults("01_test", {"profile": "smoke", "seed": 0}, {"name": "m", "fingerprint": "f"})
        res.add("x", np.float32(0.1234567891))
        res.add("arr", np.arange(3))
        res.compare("§1", "q", 1.0, 0.98765, "agrees", "n")
        return res

    p1 = make().save(tmp_path / "a")
    p2 = make().save(tmp_path / "b")
    assert p1.read_bytes() == p2.read_bytes()
    data = json.loads(p1.read_text())
    assert data["numbers"]["arr"] == [0, 1, 2] and data["comparisons"][0]["ours"] == 0.9877
    prov = json.loads((tmp_path / "a" / "01_test.provenance.json").read_text())
    assert prov["seed"] == 0 and "torch" in prov["packages"]
    with pytest.raises(ValueError, match="verdict"):
        make().compare("§1", "q", 1, 2, "maybe")
    assert "01_test" in load_results(tmp_path / "a")
    md = results_markdown(tmp_path / "a")
    assert "| §1 | q | 1 | 0.9877 | agrees | n |" in md
