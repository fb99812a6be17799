"""A row's link lands on the section of its page that measures it (attnbook.chapters.anchors)."""
from __future__ import annotations

import pytest

from attnbook.chapters.anchors import experiment_anchor, place_targets


def _nb(*markdown: str) -> dict:
    return {"cells": [{"cell_type": "markdown", "metadata": {}, "source": m} for m in markdown]}


def test_anchor_ids_are_sphinx_ids_and_differ_between_chapters():
    from docutils.nodes import make_id

    a = experiment_anchor("02_clark_probing", "§4.2 heads as parsers")
    b = experiment_anchor("04_kovaleva_taxonomy", "§4.2 FrameNet")
    assert a == "ch02-row-s4-2-heads-as-parsers"
    assert make_id(a) == a and make_id(b) == b  # Sphinx keeps the id as written
    assert experiment_anchor("04_kovaleva_taxonomy", "§4.2 heads as parsers") != a
    with pytest.raises(ValueError, match="two-digit"):
        experiment_anchor("clark", "§4.2")


def test_targets_go_above_the_heading_of_the_named_section_else_the_table():
    nb = _nb("# 1. Title (§3)", "## 3.1 Relative position\n\ntext", "## 3.2 Separators\n\n### Gradients\n\nmore",
             "## Clusters", "## Paper vs this run")
    where = place_targets(nb, "01_x", ["§3.1 relative position", "§3.2 gradients", "§6 clusters", "§9 nothing"])
    assert where == {"§3.1 relative position": "3.1 Relative position", "§3.2 gradients": "Gradients",
                     "§6 clusters": "Clusters", "§9 nothing": "Paper vs this run"}
    src = [c["source"] for c in nb["cells"]]
    assert src[1].startswith("(ch01-row-s3-1-relative-position)=\n## 3.1")
    assert "(ch01-row-s3-2-gradients)=\n### Gradients" in src[2]
    assert src[4].startswith("(ch01-row-s9-nothing)=\n## Paper vs this run")
    # a second tidy of the same notebook replaces its targets instead of repeating them
    place_targets(nb, "01_x", ["§3.1 relative position"])
    assert [c["source"].count(")=") for c in nb["cells"]] == [0, 1, 0, 0, 0]
