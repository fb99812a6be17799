"""Prose states no number that the run did not compute.

A chapter's Markdown (narrative, exercises, solutions) is written before the chapter runs and is read for every
profile, so a number in it is either the paper's — in a sentence that says so (the paper, its authors, a
citation) — or it does not belong there: numbers of this run are printed by code cells, from the results.
What does not count as a number: section, figure, table and chapter references, years, equations (``$...$``),
code (```...``` and `` `...` ``), names that contain digits (``bert-base``, ``GloVe 6B 50d``, ``L6``).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PAGES = [ROOT / "book" / name for name in ("intro.md", "how_to_run.md", "seminar.md", "on_a_cluster.md")]

#: a sentence that carries one of these attributes its numbers to a paper or a published method
ATTRIBUTION = re.compile(
    r"et al[.\u2024]|Niven (&|and) Kao|\{cite[pt]?\}|\bpaper'?s?\b|\bthe authors\b|\btheir\b|Kruskal|Kaufman|Rousseeuw|"
    r"Devlin|Wang et|Koehn|Holm|McNemar|Clopper|Efron|GLUE|SemEval|FrameNet|Table \d|Fig(ure|\.|\u2024) ?\d|§\d",
    re.IGNORECASE,
)

#: references and names that contain digits but state no measurement
NOT_NUMBERS = [
    r"`[^`]*`", r"\$\$.*?\$\$", r"\$[^$]*\$", r"\{[a-z]+\}`[^`]*`", r"https?://\S+",
    r"^:label:.*$", r"^:class:.*$", r"^#+ [\d.]+", r"§\s?\d+(\.\d+)*", r"\b(Fig|Figs|Figure|Figures|Table|Tables|Eq|"
    r"Section|Sections|chapter|chapters|Chapter|Chapters|Exercise|Exercises|exercise|exercises|App|Appendix)\.?\s"
    r"\d+([.\-–]\d+)*(,\s?\d+([.\-–]\d+)*)*", r"\b(19|20)\d\d\b", r"\b\w*[A-Za-z]\w*\d\w*\b", r"\b\d+[A-Za-z]\w*\b",
    r"\bex-\d+-\d+\b", r"[×x] ?100\b", r"\b[01]-based\b", r"\b[A-Za-z]+-\d+(\.\d+)*\b",
    # a named model's shape and the tools' versions are facts, not measurements
    r"\b\d+[ -](layers?|heads?|layer|head)\b", r"\b\d+ ?[x×] ?\d+\b", r"\bhidden( size)? \d+\b",
    r"\b(Python|PyTorch|torch|Jupyter Book|transformers) \d+(\.\d+)*\b",
    # 0, 1 and 2 as plain integers: sums to 1, zero attention, two sentences
    r"(?<![\w.])[012](?![\w%,]|\.\d)",
    # durations of a seminar plan, and list or table numbering
    r"\b\d+ ?(min|minutes|h|hours)\b", r"^\s*\d+\.\s", r"\|\s*\d+\.\s",
]
#: abbreviations that end in a full stop but do not end a sentence
ABBREVIATIONS = ("et al.", "e.g.", "i.e.", "cf.", "vs.", "Fig.", "Figs.", "Eq.", "App.", "resp.")
NUMBER = re.compile(r"(?<![\w.])\d+([.,]\d+)*%?")


def _markdown(path: Path) -> list[tuple[str, str]]:
    if path.suffix == ".md":
        return [(path.name, path.read_text())]
    cells = json.loads(path.read_text())["cells"]
    return [(f"{path.name} cell {i}", "".join(c["source"])) for i, c in enumerate(cells) if c["cell_type"] == "markdown"]


def prose_lines(text: str) -> str:
    """``text`` without code: fenced code blocks and indented code lines go, the content of MyST directives
    (exercises, solutions) stays."""
    keep, stack = [], []
    for line in text.splitlines():
        fence = line.lstrip().startswith("```")
        if fence and line.strip() == "```" and stack:
            stack.pop()
        elif fence:
            stack.append("directive" if line.strip()[3:].startswith("{") else "code")
        elif not (stack and stack[-1] == "code") and not line.startswith("    "):
            keep.append(line)
    return "\n".join(keep)


def unattributed_numbers(text: str) -> list[str]:
    """Sentences of ``text`` that hold a number and no attribution (see the module docstring)."""
    text = prose_lines(text)
    for pattern in NOT_NUMBERS:
        flags = re.MULTILINE | (re.DOTALL if pattern.startswith(r"\$\$") else 0)
        text = re.sub(pattern, " ", text, flags=flags)
    for abbreviation in ABBREVIATIONS:
        text = text.replace(abbreviation, abbreviation.replace(".", "\u2024"))
    out = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n\s*\n|\n[*-] ", text):
        if NUMBER.search(sentence) and not ATTRIBUTION.search(sentence):
            out.append(" ".join(sentence.split())[:160])
    return out


def test_the_checker_catches_a_run_number_and_lets_paper_numbers_through():
    assert unattributed_numbers("In the quick run head 3-9 gets 57.5% of subjects.")
    assert unattributed_numbers("Half the segments give nearly the same distances, r > 0.99999.")
    assert not unattributed_numbers("Clark et al. find four heads in layers 2, 4, 7, 8.")
    assert not unattributed_numbers("The paper reports F1 0.86 (§4.1).")
    assert not unattributed_numbers("See Table 1 and §3.2; the model is bert-base with GloVe 6B 50d vectors.")
    assert not unattributed_numbers("The entropy $H = \\log n$ and `stats['prev'][0, 1]`.")
    assert unattributed_numbers("```{solution} ex-2-1\n:class: dropdown\nHead 3-9 gets 57.5%.\n```")
    assert not unattributed_numbers("```python\nx = 57.5\n```\nNothing here.\n\n    y = 12.5")


@pytest.mark.parametrize("path", NOTEBOOKS + PAGES, ids=lambda p: p.name)
def test_prose_numbers_are_the_papers(path):
    problems = [f"{where}: {s}" for where, text in _markdown(path) for s in unattributed_numbers(text)]
    assert not problems, "numbers in prose that are not the paper's (generate them in a code cell, or drop them):\n" \
        + "\n".join(problems)
