"""Reading FrameNet 1.7 full-text XML (attnbook.data.framenet): frames' core types, instances, malformed files."""
from __future__ import annotations

import pytest

from attnbook.core.errors import MalformedInputError
from attnbook.data import framenet as FD

NS = 'xmlns="http://framenet.icsi.berkeley.edu"'


FRAME = f"""<?xml version="1.0" encoding="UTF-8"?>
<frame name="Emotion_directed" ID="46" {NS}>
    <definition>An Experiencer feels something.</definition>
    <FE coreType="Core" name="Experiencer" ID="1"/>
    <FE coreType="Core" name="Stimulus" ID="2"/>
    <FE coreType="Peripheral" name="Time" ID="3"/>
</frame>
"""


def _penn(text: str) -> str:
    labels, pos = [], 0
    for w in text.split(" "):
        labels.append(f'<label start="{pos}" end="{pos + len(w) - 1}" name="nn"/>')
        pos += len(w) + 1
    return '<annotationSet ID="1" status="UNANN"><layer rank="1" name="PENN">' + "".join(labels) + "</layer></annotationSet>"


def _span(text: str, phrase: str, occurrence: int = 0) -> tuple[int, int]:
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(phrase, start + 1)
    return start, start + len(phrase) - 1


def _sentence(sid: int, text: str, target: str, fes: list[tuple[str, str | None]], penn: bool = True) -> str:
    t0, t1 = _span(text, target)
    labels = []
    for name, phrase in fes:
        if phrase is None:  # null instantiation: no offsets
            labels.append(f'<label name="{name}" itype="DNI"/>')
        else:
            s, e = _span(text, phrase)
            labels.append(f'<label start="{s}" end="{e}" name="{name}"/>')
    return (
        f'<sentence ID="{sid}"><text>{text}</text>' + (_penn(text) if penn else "")
        + f'<annotationSet ID="{100 + sid}" luName="agitated.a" frameName="Emotion_directed" status="MANUAL">'
        + f'<layer rank="1" name="Target"><label start="{t0}" end="{t1}" name="Target"/></layer>'
        + '<layer rank="1" name="FE">' + "".join(labels) + "</layer>"
        + '<layer rank="2" name="FE"><label start="0" end="1" name="Stimulus"/></layer>'
        + "</annotationSet></sentence>"
    )


SENTENCES = [
    # kept: "He" (Experiencer) is two words from "agitated"; "today" is peripheral
    (1, "He was very agitated today", "agitated", [("Experiencer", "He"), ("Time", "today")], True),
    # too long (14 words)
    (2, "He said that she was very agitated about the news of the long day", "agitated",
     [("Experiencer", "she")], True),
    # core element of 4 words
    (3, "The old grey man was quite agitated", "agitated", [("Experiencer", "The old grey man")], True),
    # adjacent core element (distance 1) next to a far one
    (4, "Now agitated she waited for noise", "agitated", [("Experiencer", "she"), ("Stimulus", "noise")], True),
    # only a null-instantiated core element and a peripheral one: no instance
    (5, "They seemed agitated today", "agitated", [("Experiencer", None), ("Time", "today")], True),
    # no PENN layer: white-space tokens
    (6, "Clearly he is agitated", "agitated", [("Experiencer", "he")], False),
]


@pytest.fixture
def fn_dir(tmp_path):
    frames = tmp_path / "frame"
    frames.mkdir()
    (frames / "Emotion_directed.xml").write_text(FRAME)
    doc = tmp_path / "fulltext"
    doc.mkdir()
    body = "".join(_sentence(*s) for s in SENTENCES)
    (doc / "Test__doc.xml").write_text(f'<?xml version="1.0"?>\n<fullTextAnnotation {NS}>{body}</fullTextAnnotation>\n')
    return tmp_path


def test_parse_fulltext(fn_dir):
    inst = FD.load_fulltext(files=[fn_dir / "fulltext" / "Test__doc.xml"], frame_dir=fn_dir / "frame")
    assert [i.sentence_id for i in inst] == ["1", "2", "3", "4", "6"]
    first = inst[0]
    assert first.words == ["He", "was", "very", "agitated", "today"]
    assert first.target == [3]
    assert first.core == {"Experiencer": [0]}  # Time is peripheral; the rank-2 FE layer is ignored
    assert first.other_elements == {"Time": [4]}
    assert first.distance(first.core["Experiencer"]) == 3
    assert inst[2].core == {"Experiencer": [0, 1, 2, 3]}
    assert inst[4].words == ["Clearly", "he", "is", "agitated"] and inst[4].core == {"Experiencer": [1]}


def test_malformed_xml_names_file_and_line(fn_dir):
    bad = fn_dir / "fulltext" / "Bad.xml"
    bad.write_text(f'<?xml version="1.0"?>\n<fullTextAnnotation {NS}>\n<sentence ID="1"><text>a</text>\n</fullTextAnnotation>\n')
    with pytest.raises(MalformedInputError) as exc:
        FD.parse_fulltext(bad, FD.frame_dir_core_types(fn_dir / "frame"))
    assert exc.value.path == bad and exc.value.line == 4
    (fn_dir / "frame" / "Broken.xml").write_text(f'<frame name="Broken" {NS}>\n<FE coreType="Core" name="A">\n</frame>')
    with pytest.raises(MalformedInputError) as exc:
        FD.read_frame_core_types(fn_dir / "frame" / "Broken.xml")
    assert exc.value.line == 3
    missing = fn_dir / "fulltext" / "Missing.xml"
    missing.write_text(f'<fullTextAnnotation {NS}>' + _sentence(1, "He was very agitated", "agitated",
                                                                [("Experiencer", "He")]).replace(
        "Emotion_directed", "No_such_frame") + "</fullTextAnnotation>")
    with pytest.raises(MalformedInputError, match="No_such_frame"):
        FD.parse_fulltext(missing, FD.frame_dir_core_types(fn_dir / "frame"))
    noint = fn_dir / "fulltext" / "NoInt.xml"
    noint.write_text(f'<fullTextAnnotation {NS}>' + _sentence(1, "He was very agitated", "agitated",
                                                              [("Experiencer", "He")]).replace('start="0"', 'start="x"', 1)
                     + "</fullTextAnnotation>")
    with pytest.raises(MalformedInputError, match="integer"):
        FD.parse_fulltext(noint, FD.frame_dir_core_types(fn_dir / "frame"))


def test_instance_links_and_distance():
    inst = FD.FrameInstance("doc", "1", ["a", "b", "c", "d", "e"], "F", "lu", [2], {"Y": [4], "X": [0, 1]})
    assert inst.links() == [("X", [0, 1]), ("Y", [4])]
    assert inst.distance([0, 1]) == 1 and inst.distance([4]) == 2 and inst.distance([2]) == 0
