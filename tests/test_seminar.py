"""The seminar kit (book/seminar.md) covers every chapter: a meeting with learning goals, preparation questions and
an activity for the room, and a folded answer key for that meeting (issue 32: chapter 8 had none)."""
from __future__ import annotations

import re
from pathlib import Path

from attnbook.chapters.toc import CHAPTERS

ROOT = Path(__file__).resolve().parents[1]
KIT = ROOT / "book" / "seminar.md"


def test_every_chapter_has_a_meeting_with_goals_an_activity_and_answers():
    text = KIT.read_text()
    meetings = re.split(r"\n## (?=Meeting )", text)[1:]
    meetings[-1] = meetings[-1].split("\n## ")[0]
    keys = dict(re.findall(r":::\{dropdown\} (Meeting [a-z]+): [^\n]*\n(.*?)\n:::\n", text, flags=re.S))
    covered = set()
    for m in meetings:
        name = m.split(":")[0]
        assert "**Learning goals.**" in m and "**Preparation questions.**" in m and "**In the room" in m, name
        assert re.search(r"^\| \d+ min \|", m, flags=re.M), f"{name}: no activity with its time"
        assert name in keys and "**Q1.**" in keys[name], f"{name}: no answer key"
        covered |= set(re.findall(r"\{doc\}`(\d\d_[a-z_]+)`", m))
    table = text.split("## How participants meet a chapter")[0]
    # chapters 1-8; chapter 9 (across encoders) is being written: its meeting follows when its content settles
    for chapter in [c for c in CHAPTERS if c.number <= 8]:
        assert chapter.id in covered or f"<{chapter.id}>" in table, f"{chapter.id}: no meeting in the seminar kit"
    assert "08_head_atlas" in covered and "Meeting seven" in keys
