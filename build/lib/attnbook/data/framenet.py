"""Reading FrameNet 1.7: frames' core element types and full-text annotation (for Kovaleva et al. §4.2).

The book's data holds FrameNet 1.7's frame files (``fndata-1.7/frame/<Name>.xml``) and its 48
*full-text* documents (``fndata-1.7/fulltext/*.xml``). A full-text sentence carries one annotation
set per frame-evoking word, so one sentence can give several (target, frame) *instances*
(:class:`FrameInstance`): the target's words and the words of each overt **core** frame element
(FE types ``Core`` and ``Core-Unexpressed``, :data:`CORE_TYPES`, read from the frame files).

* Words are FrameNet's own tokens: the sentence's ``PENN`` part-of-speech layer when it has one,
  else white space (:func:`sentence_tokens`).
* Only annotation sets with a ``frameName``, a ``Target`` label and rank-1 ``FE`` labels with
  character offsets count (null-instantiated elements have none).
* Malformed XML raises :class:`~attnbook.core.errors.MalformedInputError` naming the file and the
  1-based line; a frame used by an annotation but missing from ``frame/`` names that frame.

:func:`load_fulltext` reads every document; the filter and the scoring of heads are Kovaleva's
and live in :mod:`attnbook.studies.kovaleva.framenet`.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Sequence

from attnbook.core.errors import EmptyDataError, MalformedInputError
from attnbook.data.registry import data_path

#: the FrameNet 1.7 release folder inside the ``framenet`` dataset
RELEASE = "fndata-1.7"
#: FE core types counted as *core* (Core-Unexpressed FEs are core FEs that are rarely overt)
CORE_TYPES = ("Core", "Core-Unexpressed")


def _local(tag: str) -> str:
    """``{namespace}name`` -> ``name``."""
    return tag.rsplit("}", 1)[-1]


def _parse_xml(path: Path) -> ET.Element:
    """Parse an XML file; a syntax error becomes :class:`MalformedInputError` with its 1-based line."""
    try:
        return ET.parse(path).getroot()
    except ET.ParseError as exc:
        line = exc.position[0] if getattr(exc, "position", None) else None
        raise MalformedInputError(path, line, f"not well-formed XML ({exc.msg if hasattr(exc, 'msg') else exc})") from exc


def _int_attr(el: ET.Element, name: str, path: Path, where: str) -> int:
    raw = el.get(name)
    try:
        return int(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise MalformedInputError(path, None, f"{where}: attribute {name}={raw!r} is not an integer") from None


# ---------------------------------------------------------------------------------------------
# frames
# ---------------------------------------------------------------------------------------------
def read_frame_core_types(path: Path | str) -> dict[str, str]:
    """FE name -> ``coreType`` of one ``frame/<Name>.xml`` file."""
    path = Path(path)
    root = _parse_xml(path)
    if _local(root.tag) != "frame":
        raise MalformedInputError(path, None, f"the root element is <{_local(root.tag)}>, not <frame>")
    out = {}
    for fe in root:
        if _local(fe.tag) == "FE":
            name, core = fe.get("name"), fe.get("coreType")
            if name is None or core is None:
                raise MalformedInputError(path, None, "an <FE> element lacks its name or coreType")
            out[name] = core
    return out


def frame_dir_core_types(frame_dir: Path | str) -> Callable[[str], dict[str, str]]:
    """A memoised lookup ``frame name -> {FE name: coreType}`` reading ``frame_dir/<name>.xml``."""
    frame_dir = Path(frame_dir)

    @lru_cache(maxsize=None)
    def lookup(name: str) -> dict[str, str]:
        path = frame_dir / f"{name}.xml"
        if not path.exists():
            raise MalformedInputError(path, None, f"frame {name!r} is used by an annotation but has no frame file")
        return read_frame_core_types(path)

    return lookup


# ---------------------------------------------------------------------------------------------
# full-text annotation
# ---------------------------------------------------------------------------------------------
@dataclass
class FrameInstance:
    """One frame annotation of one sentence: the target and its overt core frame elements.

    ``words`` are FrameNet's tokens; ``target`` and each element are lists of word
    indices (0-based). ``other_elements`` are the overt non-core elements (kept for
    reference, not scored).
    """

    doc: str
    sentence_id: str
    words: list[str]
    frame: str
    lexical_unit: str
    target: list[int]
    core: dict[str, list[int]]
    other_elements: dict[str, list[int]] = field(default_factory=dict)

    def links(self) -> list[tuple[str, list[int]]]:
        """The (element name, word indices) pairs linked to the target."""
        return sorted(self.core.items())

    def distance(self, element: Sequence[int]) -> int:
        """Fewest words between the target and ``element`` (1 = adjacent, 0 = overlapping)."""
        return int(min(abs(t - e) for t in self.target for e in element))


def sentence_tokens(sentence: ET.Element, text: str, path: Path | str = "<xml>") -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` (inclusive end) of the sentence's tokens.

    Taken from the ``PENN`` part-of-speech layer when the sentence has one (FrameNet's
    own tokenisation), else from white space.
    """
    for aset in sentence:
        if _local(aset.tag) != "annotationSet":
            continue
        for layer in aset:
            if _local(layer.tag) == "layer" and layer.get("name") == "PENN":
                where = f"sentence ID={sentence.get('ID', '?')}, PENN layer"
                spans = sorted((_int_attr(lab, "start", Path(path), where), _int_attr(lab, "end", Path(path), where))
                               for lab in layer if lab.get("start") is not None and lab.get("end") is not None)
                if spans:
                    return spans
    spans, pos = [], 0
    for word in text.split():
        start = text.index(word, pos)
        spans.append((start, start + len(word) - 1))
        pos = start + len(word)
    return spans


def _words_in(spans: list[tuple[int, int]], start: int, end: int) -> list[int]:
    """Indices of the tokens that overlap the character span ``[start, end]``."""
    return [i for i, (s, e) in enumerate(spans) if s <= end and e >= start]


def parse_fulltext(path: Path | str, core_types: Callable[[str], dict[str, str]]) -> list[FrameInstance]:
    """Every frame annotation with at least one overt core element in a full-text XML document.

    Only annotation sets with a ``frameName``, a ``Target`` label and rank-1 ``FE``
    labels with character offsets count (null-instantiated elements have none).
    ``core_types`` maps a frame name to ``{FE name: coreType}`` (see :func:`frame_dir_core_types`).
    """
    path = Path(path)
    root = _parse_xml(path)
    doc = path.stem
    out: list[FrameInstance] = []
    for sentence in root.iter():
        if _local(sentence.tag) != "sentence":
            continue
        sid = sentence.get("ID", "?")
        text_el = next((c for c in sentence if _local(c.tag) == "text"), None)
        if text_el is None or text_el.text is None:
            raise MalformedInputError(path, None, f"sentence ID={sid} has no <text>")
        text = text_el.text
        spans = sentence_tokens(sentence, text, path)
        if not spans:
            continue
        words = [text[s : e + 1] for s, e in spans]
        for aset in sentence:
            if _local(aset.tag) != "annotationSet" or not aset.get("frameName"):
                continue
            frame = aset.get("frameName")
            target: list[int] = []
            elements: dict[str, list[int]] = {}
            for layer in aset:
                if _local(layer.tag) != "layer":
                    continue
                name, rank = layer.get("name"), layer.get("rank", "1")
                for lab in layer:
                    if lab.get("start") is None or lab.get("end") is None:
                        continue  # null instantiation: no words
                    where = f"sentence ID={sid}, frame {frame}"
                    start, end = _int_attr(lab, "start", path, where), _int_attr(lab, "end", path, where)
                    if name == "Target":
                        target += _words_in(spans, start, end)
                    elif name == "FE" and rank == "1":
                        elements.setdefault(lab.get("name", "?"), []).extend(_words_in(spans, start, end))
            if not target:
                continue
            types = core_types(frame)
            core = {k: sorted(set(v)) for k, v in elements.items() if types.get(k) in CORE_TYPES and v}
            if not core:
                continue
            other = {k: sorted(set(v)) for k, v in elements.items() if k not in core and v}
            out.append(FrameInstance(doc, sid, words, frame, aset.get("luName", ""), sorted(set(target)), core, other))
    return out


def fulltext_files() -> list[Path]:
    """The full-text documents of the data directory, sorted by name."""
    files = sorted(data_path("framenet", RELEASE, "fulltext").glob("*.xml"))
    if not files:
        raise EmptyDataError(f"no full-text XML files in {data_path('framenet', RELEASE, 'fulltext')}")
    return files


def load_fulltext(files: Iterable[Path] | None = None, frame_dir: Path | None = None) -> list[FrameInstance]:
    """All frame instances with overt core elements in the full-text documents (document order)."""
    lookup = frame_dir_core_types(frame_dir if frame_dir is not None else data_path("framenet", RELEASE, "frame"))
    out: list[FrameInstance] = []
    for path in (list(files) if files is not None else fulltext_files()):
        out.extend(parse_fulltext(path, lookup))
    return out
