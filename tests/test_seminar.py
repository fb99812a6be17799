"""The seminar kit (book/seminar.md) covers every chapter: a meeting with learning goals, preparation questions and
an activity for the room, and a folded answer key for that meeting; its room plans add up to the meeting's length;
beside the eight meetings, a four-meeting plan covers all nine chapters; a set-up checklist includes the chapters'
run times of the build, and a way to take part without installing anything."""
from __future__ import annotations

import re
from pathlib import Path

from attnbook.chapters.toc import CHAPTERS

ROOT = Path(__file__).resolve().parents[1]
KIT = ROOT / "book" / "seminar.md"


def _sections(text: str, level: str, name: str) -> list[str]:
    """The sections whose heading (``level`` hashes) starts with ``name``, each up to the next heading of its level
    or above."""
    parts = re.split(rf"\n{level} (?={name})", text)[1:]
    stop = re.compile(rf"\n#{{1,{len(level)}}} ")
    return [stop.split(p)[0] for p in parts]


def _minutes(section: str) -> int:
    return sum(int(m) for m in re.findall(r"^\| (\d+) min \|", section, flags=re.M))


def test_every_chapter_has_a_meeting_with_goals_an_activity_and_answers():
    text = KIT.read_text()
    meetings = _sections(text, "##", "Meeting ")
    keys = dict(re.findall(r":::\{dropdown\} (Meeting [a-z]+): [^\n]*\n(.*?)\n:::\n", text, flags=re.S))
    covered = set()
    for m in meetings:
        name = m.split(":")[0]
        assert "**Learning goals.**" in m and "**Preparation questions.**" in m and "**In the room" in m, name
        assert re.search(r"^\| \d+ min \|", m, flags=re.M), f"{name}: no activity with its time"
        assert name in keys and "**Q1.**" in keys[name], f"{name}: no answer key"
        covered |= set(re.findall(r"\{doc\}`(\d\d_[a-z_]+)`", m))
    table = text.split("## How participants meet a chapter")[1].split("\n## ")[0]
    for chapter in CHAPTERS:
        assert chapter.id in covered or f"<{chapter.id}>" in table, f"{chapter.id}: no meeting in the seminar kit"
    assert "09_across_encoders" in covered and "Meeting eight" in keys


def test_each_room_plan_adds_up_to_its_meeting():
    """Regression: the kit said "seven meetings of 90 minutes" and listed eight, the eighth of 60; every plan for the
    room now adds up to the length its heading states."""
    text = KIT.read_text()
    for m in _sections(text, "##", "Meeting "):
        length = int(re.search(r"\*\*In the room \((\d+) min\)\.\*\*", m).group(1))
        assert _minutes(m) == length, m.split(":")[0]
    sessions = _sections(text, "###", "Session ")
    assert len(sessions) == 4
    for s in sessions:
        assert _minutes(s) == 90, s.splitlines()[0]


def test_the_four_meeting_plan_covers_every_chapter_once():
    """Regression: there was no plan for the common four-meeting format."""
    text = KIT.read_text()
    plan = _sections(text, "##", "Four meetings")[0]
    overview = [ln for ln in plan.splitlines() if re.match(r"\| \d\. ", ln)]
    assert [ln.split("|")[1].strip()[0] for ln in overview] == ["1", "2", "3", "4"]
    chapters = [c for ln in overview for c in re.findall(r"<(\d\d_[a-z_]+)>", ln)]
    assert sorted(chapters) == sorted(c.id for c in CHAPTERS), "each chapter in exactly one session"


def test_the_checklist_includes_the_builds_times_and_a_fallback_without_install():
    """Regression: no set-up checklist, no times, nothing for participants who cannot install."""
    text = KIT.read_text()
    checklist = _sections(text, "##", "Before the seminar")[0]
    assert "```{include} _generated/chapter_times.md" in checklist
    assert "pip install" in checklist and "attnbook fetch" in checklist
    fallback = _sections(text, "##", "Without an install")[0]
    assert "_build/html" in fallback and "static drawing" in fallback and "*page*" in fallback
    assert text.index("## Before the seminar") < text.index("## Meeting one")
