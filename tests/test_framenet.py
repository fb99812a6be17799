"""Kovaleva §4.2 FrameNet heads: reading full-text XML, the paper's filter, scoring heads."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attnbook.studies.kovaleva import framenet as FN
from attnbook.core.errors import MalformedInputError, ParameterError
from attnbook.engine.extract import make_batches

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
    inst = FN.load_fulltext(files=[fn_dir / "fulltext" / "Test__doc.xml"], frame_dir=fn_dir / "frame")
    assert [i.sentence_id for i in inst] == ["1", "2", "3", "4", "6"]
    first = inst[0]
    assert first.words == ["He", "was", "very", "agitated", "today"]
    assert first.target == [3]
    assert first.core == {"Experiencer": [0]}  # Time is peripheral; the rank-2 FE layer is ignored
    assert first.other_elements == {"Time": [4]}
    assert first.distance(first.core["Experiencer"]) == 3
    assert inst[2].core == {"Experiencer": [0, 1, 2, 3]}
    assert inst[4].words == ["Clearly", "he", "is", "agitated"] and inst[4].core == {"Experiencer": [1]}


def test_filter_follows_the_paper(fn_dir):
    inst = FN.load_fulltext(files=[fn_dir / "fulltext" / "Test__doc.xml"], frame_dir=fn_dir / "frame")
    kept, counts = FN.FrameFilter().apply(inst)
    assert [k.sentence_id for k in kept] == ["1", "6"]
    assert counts == {"total": 5, "too_long": 1, "long_element": 1, "close_link": 1, "kept": 2}
    kept, counts = FN.FrameFilter(drop="link").apply(inst)
    assert [k.sentence_id for k in kept] == ["1", "4", "6"]
    assert kept[1].core == {"Stimulus": [5]}  # the adjacent "she" link is dropped, the far one kept
    kept, _ = FN.FrameFilter(max_words=14, max_element_words=4).apply(inst)
    assert [k.sentence_id for k in kept] == ["1", "2", "3", "6"]
    with pytest.raises(ParameterError):
        FN.FrameFilter(drop="sentence")


def test_malformed_xml_names_file_and_line(fn_dir):
    bad = fn_dir / "fulltext" / "Bad.xml"
    bad.write_text(f'<?xml version="1.0"?>\n<fullTextAnnotation {NS}>\n<sentence ID="1"><text>a</text>\n</fullTextAnnotation>\n')
    with pytest.raises(MalformedInputError) as exc:
        FN.parse_fulltext(bad, FN.frame_dir_core_types(fn_dir / "frame"))
    assert exc.value.path == bad and exc.value.line == 4
    (fn_dir / "frame" / "Broken.xml").write_text(f'<frame name="Broken" {NS}>\n<FE coreType="Core" name="A">\n</frame>')
    with pytest.raises(MalformedInputError) as exc:
        FN.read_frame_core_types(fn_dir / "frame" / "Broken.xml")
    assert exc.value.line == 3
    missing = fn_dir / "fulltext" / "Missing.xml"
    missing.write_text(f'<fullTextAnnotation {NS}>' + _sentence(1, "He was very agitated", "agitated",
                                                                [("Experiencer", "He")]).replace(
        "Emotion_directed", "No_such_frame") + "</fullTextAnnotation>")
    with pytest.raises(MalformedInputError, match="No_such_frame"):
        FN.parse_fulltext(missing, FN.frame_dir_core_types(fn_dir / "frame"))
    noint = fn_dir / "fulltext" / "NoInt.xml"
    noint.write_text(f'<fullTextAnnotation {NS}>' + _sentence(1, "He was very agitated", "agitated",
                                                              [("Experiencer", "He")]).replace('start="0"', 'start="x"', 1)
                     + "</fullTextAnnotation>")
    with pytest.raises(MalformedInputError, match="integer"):
        FN.parse_fulltext(noint, FN.frame_dir_core_types(fn_dir / "frame"))


def _instance(words, target, core, other=None):
    return FN.FrameInstance("doc", "1", words, "F", "lu", target, core, other or {})


def test_link_scores_on_hand_built_maps(tokenizer):
    # every word is one word piece, so word-level maps equal token-level maps
    words = ["he", "was", "very", "agitated", "today"]
    inst = _instance(words, [3], {"Experiencer": [0]}, {"Time": [4]})
    enc = FN.encode_instances(tokenizer, [inst])
    assert enc[0].tokens == ["[CLS]", *words, "[SEP]"]
    n = len(enc[0].tokens)
    attn = torch.full((1, 2, 1, n, n), 1.0 / n)
    # head (layer 0): "agitated" (pos 4) -> "he" (pos 1) gets 0.6; "he" -> "agitated" 0.3
    a = attn[0, 0, 0]
    a[4] = 0.4 / (n - 1)
    a[4, 1] = 0.6
    a[1] = 0.7 / (n - 1)
    a[1, 4] = 0.3
    # layer 1: "agitated" -> "was" (pos 2, not an element, distance 2 from the target) 0.9
    b = attn[0, 1, 0]
    b[4] = 0.1 / (n - 1)
    b[4, 2] = 0.9
    batch = next(make_batches(enc, 1))
    results = {}
    for direction in FN.DIRECTIONS:
        red = FN.FrameLinkScores([inst], direction)
        red.update(attn, batch)
        results[direction] = red.result()
    assert results["both"]["scores"][0, 0, 0] == pytest.approx(0.6)
    assert results["target_to_element"]["scores"][0, 0, 0] == pytest.approx(0.6)
    assert results["element_to_target"]["scores"][0, 0, 0] == pytest.approx(0.3)
    # control: target vs words that are neither target nor element and >= 2 away: only "was" (today is an element)
    assert results["target_to_element"]["control"][0, 1, 0] == pytest.approx(0.9)
    assert results["target_to_element"]["scores"][0, 1, 0] == pytest.approx(0.1 / (n - 1))


def test_frame_heads_percentiles():
    rng = np.random.default_rng(0)
    scores = rng.uniform(0.0, 0.1, size=(30, 12, 12))
    scores[:, 3, 4] += 0.3
    scores[:, 7, 0] += 0.25
    control = np.full_like(scores, 0.05)
    control[::2] = np.nan  # half the instances have no control word
    out = FN.frame_heads(scores, 99.0, control)
    assert [(l, h) for l, h, _ in out["heads"]] == [(3, 4), (7, 0)]
    assert out["threshold"] == pytest.approx(np.percentile(scores.mean(0), 99))
    assert out["n_with_control"] == 15
    np.testing.assert_allclose(out["lift"], scores[1::2].mean(0) / 0.05, rtol=1e-6)


def test_frame_link_scores_with_a_tiny_bert(tiny_bert):
    insts = [_instance(["he", "was", "agitated"], [2], {"Experiencer": [0]}),
             _instance(["she", "sold", "the", "very", "old", "car"], [1], {"Goods": [4, 5]})]
    res = FN.frame_link_scores(tiny_bert, insts, batch_size=2)
    assert res["scores"].shape == (2, tiny_bert.n_layers, tiny_bert.n_heads)
    assert ((res["scores"] > 0) & (res["scores"] <= 1)).all()
    assert np.isnan(res["control"][0]).all()  # "he was agitated": "was" is next to the target, no control word
    assert not np.isnan(res["control"][1]).any()  # "very" is two words from "sold" and not an element
