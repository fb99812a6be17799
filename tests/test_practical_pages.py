"""The practical pages say what the book is: "How to run", "Heads of your own model" and the seminar kit are read
against the book's own configuration (``_toc.yml``, ``_config.yml``, the chapter list): the number of chapters, the
launch buttons, the install line, the meetings; and every glossary term a page links exists in the glossary."""
from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from attnbook.chapters.toc import CHAPTERS

ROOT = Path(__file__).resolve().parents[1]
HOW_TO_RUN = ROOT / "book" / "how_to_run.md"
SEMINAR = ROOT / "book" / "seminar.md"
GLOSSARY = ROOT / "book" / "glossary.md"
HEADS_PAGE = ROOT / "notebooks" / "pages" / "heads_of_your_own_model.ipynb"

NUMBERS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen".split())}

#: the glossary's terms, which the chapters link with {term}`...`
TERMS = {"UAS", "sink", "relative depth", "constant predictor", "detectable effect", "agrees", "partly agrees",
         "disagrees", "inconclusive", "not comparable", "cross-fitting"}


def _config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def _toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [c["file"] for part in toc["parts"] for c in part["chapters"]]


def _notebook_text(path: Path) -> str:
    return "\n".join("".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                     for c in json.loads(path.read_text())["cells"])


def _install_line() -> str:
    return f'pip install "git+{_config()["repository"]["url"]}"'


def test_the_book_has_the_chapters_the_pages_count():
    files = _toc_files()
    pages = [f for f in files if re.fullmatch(r"book/\d\d_[a-z0-9_]+", f)]
    assert pages == [f"book/{p}" for c in CHAPTERS for p in c.page_ids]  # a long chapter on several pages
    chapters = [f"book/{c.id}" for c in CHAPTERS]
    for page in (HOW_TO_RUN, SEMINAR, ROOT / "book" / "intro.md"):
        for word in re.findall(r"\b(?:all|its|book's) ([a-z]+) chapters\b", page.read_text()):
            assert NUMBERS[word] == len(chapters), f"{page.name} counts {word} chapters; the book has {len(chapters)}"


def test_how_to_run_states_the_launch_buttons_the_book_has_and_an_install_line():
    """Regression: "How to run" said the book had no Binder or Colab buttons (every chapter page has them) and that
    "all eight chapters" run in the rehearsal (the book has nine; the rehearsal runs chapters 1-8)."""
    text = HOW_TO_RUN.read_text()
    launch = _config()["launch_buttons"]
    assert launch.get("binderhub_url") and launch.get("colab_url")
    assert not re.search(r"no (?:Binder|Colab|launch)", text, flags=re.I)
    section = text.split("## One chapter anywhere")[1].split("\n## ")[0]
    assert "Binder" in section and "Colab" in section and "notebooks/<chapter>.ipynb" in section
    assert _install_line() in text
    from planted import REHEARSAL_SIZES

    rehearsed = sorted(int(c[:2]) for c in REHEARSAL_SIZES)
    assert f"chapters {rehearsed[0]}–{rehearsed[-1]} execute with `profile=paper`" in text
    assert rehearsed == list(range(rehearsed[0], rehearsed[-1] + 1))


def test_the_heads_page_installs_shows_a_fine_tuned_classifier_and_states_the_numbering():
    """Regression: no install line, no classifier, and nothing on 0-based tuples against 1-based labels."""
    text = _notebook_text(HEADS_PAGE)
    assert _install_line() in text
    assert "AutoModelForSequenceClassification.from_pretrained(encoder.path" in text
    assert re.search(r"heads\.importance\(classifier, \[batch\]\)", text), "the default (classification) loss"
    assert '"labels"' in text and "heads.masked(classifier, [top])" in text
    assert "heads.masked(classifier, [head_label(*top)])" in text
    assert "0-based `(layer, head)` tuple" in text and "1-based" in text and '`(0, 0)` and `"1-1"`' in text


def test_the_seminar_counts_its_meetings_and_chapters_as_the_book_does():
    """Regression: "seven meetings ... eight chapters" over eight meetings listed, and an overview table that
    stopped at meeting seven."""
    text = SEMINAR.read_text()
    meetings = re.findall(r"\n## Meeting ([a-z]+):", text)
    counts = dict((NUMBERS[n], kind) for n, kind in re.findall(r"\*\*([a-z]+)\s+meetings\*\*( \([^)]*\))?", text))
    assert len(meetings) in counts and 4 in counts, counts
    assert [NUMBERS[m] for m in meetings] == list(range(1, len(meetings) + 1))
    lengths = re.findall(r"\*\*In the room \((\d+) min\)\.\*\*", text)
    long_plan = re.search(r"\(([a-z]+) of 90 minutes and ([a-z]+) of 60\)", counts[len(meetings)])
    assert NUMBERS[long_plan.group(1)] == lengths.count("90") and NUMBERS[long_plan.group(2)] == lengths.count("60")
    assert len(re.findall(r"\n### Session [a-z]+: ", text)) == 4
    overview = text.split("| meeting | chapters |")[1].split("\n\n")[0]
    assert len(re.findall(r"^\| \d\. ", overview, flags=re.M)) == len(meetings)
    assert re.search(rf"from its {[w for w, i in NUMBERS.items() if i == len(CHAPTERS)][0]} chapters", text)


def test_every_glossary_term_linked_anywhere_is_in_the_glossary():
    """The glossary defines exactly the terms the book links, and every {term} of the notebooks, the book's pages and
    the package's generated text names one of them (a missing term is a build warning, an error in the build)."""
    text = GLOSSARY.read_text()
    block = text.split("```{glossary}")[1].split("```")[0]
    defined = {ln.strip() for ln in block.splitlines() if ln.strip() and not ln.startswith(" ")}
    assert defined == TERMS
    assert "book/glossary" in _toc_files()
    used: dict[str, set[str]] = {}
    sources = [*ROOT.glob("notebooks/**/*.ipynb"), *ROOT.glob("book/*.md"), *ROOT.glob("attnbook/**/*.py")]
    for path in sources:
        body = _notebook_text(path) if path.suffix == ".ipynb" else path.read_text()
        for m in re.findall(r"\{term\}`([^`]+)`", body):
            target = re.search(r"<([^>]+)>\s*$", m)
            used.setdefault((target.group(1) if target else m).strip(), set()).add(path.name)
    unknown = {t: sorted(p) for t, p in used.items() if t not in defined}
    assert not unknown, f"terms linked but not in the glossary: {unknown}"
    assert {"agrees", "inconclusive", "sink", "relative depth"} <= set(used)
