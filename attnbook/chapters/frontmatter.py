"""Pages generated from the chapters' results files when the book is built.

``book/results.md`` gathers every chapter's "paper vs this run" rows in three lists (the papers' claims, counted per
chapter; the book's own questions; what was not reproduced), with the model and profile each chapter ran with, each
row linked to its chapter's table.
"""
from __future__ import annotations

from pathlib import Path

from attnbook.chapters.results import comparisons_of, load_results
from attnbook.chapters.toc import CHAPTERS
from attnbook.core.io import atomic_write_text
from attnbook.verdict import (
    AGREES,
    CLAIM,
    DISAGREES,
    INCONCLUSIVE,
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    OUTCOMES,
    OWN,
    PARTLY,
    Comparison,
    expected_by_chance,
)

#: chapter id -> the heading of its section on the results overview page
CHAPTER_TITLES = {c.id: c.heading for c in CHAPTERS}


def _cell(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return "—" if value != value else f"{value:.4g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _ours(row: Comparison) -> str:
    ours = _cell(row.ours)
    if row.low is None or row.high is None or "[" in ours:
        return ours
    return f"{ours} [{row.low:.4g}, {row.high:.4g}]"


#: the anchor of a chapter page's "Paper vs this run" section (Sphinx's id for that heading)
TABLE_ANCHOR = "paper-vs-this-run"

#: the class of the container that holds the overview's tables (book/_static/attnbook.css lays them out to fit)
TABLES_CLASS = "attnbook-results"


def outcome_counts(results: dict[str, dict]) -> dict[str, dict[str, int]]:
    """chapter -> outcome -> number of the papers' claims (rows of kind :data:`attnbook.verdict.CLAIM`) with that
    outcome (every outcome of :data:`attnbook.verdict.OUTCOMES`); the book's own questions and what was not
    reproduced are not counted."""
    return {ch: {o: sum(r.verdict == o and r.kind == CLAIM for r in comparisons_of(data)) for o in OUTCOMES}
            for ch, data in results.items()}


def chapter_link(chapter: str) -> str:
    """``<a href="04_kovaleva_taxonomy.html#paper-vs-this-run">4</a>``: the chapter's number, linked to the "Paper vs
    this run" section of its page (the overview and the chapters are pages of one folder). Raw HTML, because MyST
    resolves a Markdown link to a heading of another page only with heading anchors, which the book does not enable
    (the link would be a build warning, and the book builds with warnings as errors)."""
    number = CHAPTER_TITLES.get(chapter, chapter).split(".")[0]
    return f'<a href="{chapter}.html#{TABLE_ANCHOR}">{number}</a>' if chapter in CHAPTER_TITLES else number


def _decided(counts: dict[str, int]) -> str:
    """The share of claims decided (agrees, partly agrees or disagrees), ``"—"`` without claims."""
    n = sum(counts.values())
    return f"{sum(counts[o] for o in (AGREES, PARTLY, DISAGREES)) / n:.0%}" if n else "—"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table inside the overview's container (:data:`TABLES_CLASS`), so it fits the column."""
    return ([f":::{{container}} {TABLES_CLASS}", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(r) + " |" for r in rows] + [":::", ""])


INTRO = (
    "Every chapter ends with a *paper vs this run* table. This page gathers all of their rows, read from the "
    "chapters' results files (`book/results/<chapter>.json`) when the book was built, in three lists: **the papers' "
    "claims**, each judged by the one rule stated in its chapter's table (`attnbook.verdict`): *agrees*, *partly "
    "agrees* or *disagrees* when the comparison could decide, *inconclusive* when this run's 95% interval is too wide "
    "to tell (the row then says what its sample could detect), *not comparable* when the model or data cannot answer "
    "the claim (the row says why); **the book's own questions**, which no paper asked or measured, with their own "
    "outcome (*supported*, *not supported*, *undecided*); and **what was not reproduced**, with the reason. The "
    "counts are over the papers' claims only. Intervals are in brackets; a chapter's number links to its table.")


def results_markdown(results_folder: Path | None = None) -> str:
    """Markdown of the results overview page: the papers' claims counted per chapter and listed (the undecided and
    not comparable ones with what their sample could detect or why), then the book's own questions, then what was
    not reproduced. Each row links to its chapter's "Paper vs this run" section."""
    results = load_results(results_folder)
    lines = ["# Results overview", "", INTRO, ""]
    if not results:
        lines.append("*No chapter has written results yet: run `make book`.*")
        return "\n".join(lines) + "\n"
    counts = outcome_counts(results)
    rows = {ch: comparisons_of(data) for ch, data in results.items()}
    lines += ["## The papers' claims, counted by chapter", ""]
    table = []
    for chapter, data in results.items():
        c = counts[chapter]
        n = sum(c.values())
        model = f"{str(data.get('model', {}).get('name', '?')).split(' (')[0]}, `{data.get('profile')}`"
        table.append([CHAPTER_TITLES.get(chapter, chapter), model, *(str(c[o]) for o in OUTCOMES), str(n),
                      _decided(c)])
    total = {o: sum(c[o] for c in counts.values()) for o in OUTCOMES}
    table.append(["**all chapters**", "", *(f"**{total[o]}**" for o in OUTCOMES), f"**{sum(total.values())}**",
                  f"**{_decided(total)}**"])
    lines += _table(["chapter", "model, profile", *OUTCOMES, "claims", "decided"], table)
    judged, chance = expected_by_chance([r for rs in rows.values() for r in rs if r.kind == CLAIM])
    per_chapter = "; ".join(f"{CHAPTER_TITLES.get(ch, ch).split('.')[0]}: {x:.1f}" for ch, rs in rows.items()
                            if (x := expected_by_chance([r for r in rs if r.kind == CLAIM])[1]))
    if judged:
        lines += [f"Each judged claim is decided at 95%: were every claim true, about {chance:.1f} of the {judged} "
                  f"judged ones would still come out against the paper by chance alone (by chapter, {per_chapter}), "
                  f"against {total[DISAGREES]} that disagree here.", ""]
    others = []
    for kind, words in ((OWN, "the book's own questions"), (NOT_REPRODUCED, "experiments not reproduced")):
        per = {CHAPTER_TITLES.get(ch, ch).split(".")[0]: sum(r.kind == kind for r in rs) for ch, rs in rows.items()}
        if any(per.values()):
            others.append(f"{sum(per.values())} {words} (chapter " + ", ".join(
                f"{ch}: {k}" for ch, k in per.items() if k) + ")")
    lines += ["*decided*: agrees, partly agrees or disagrees. "
              + ("Not counted above, and listed below: " + "; ".join(others) + "." if others else
                 "Every row of this build is one of the papers' claims."), "",
              "## The papers' claims", ""]
    lines += _table(["ch.", "experiment", "claim", "paper", "this run [95% interval]", "outcome"],
                    [[chapter_link(ch), _cell(r.experiment), _cell(r.quantity), _cell(r.paper), _ours(r),
                      _cell(r.verdict)] for ch, rs in rows.items() for r in rs if r.kind == CLAIM])
    open_ = [(ch, r) for ch, rs in rows.items() for r in rs if r.kind == CLAIM
             and r.verdict in (INCONCLUSIVE, NOT_COMPARABLE)]
    if open_:
        lines += ["### The claims left open, and why", ""]
        lines += [f"- {chapter_link(ch)} · {_cell(r.experiment)}, {_cell(r.quantity)}: *{r.verdict}*, "
                  + (_cell(r.detectable) or "no interval to judge" if r.verdict == INCONCLUSIVE else _cell(r.reason))
                  for ch, r in open_] + [""]
    own = [(ch, r) for ch, rs in rows.items() for r in rs if r.kind == OWN]
    if own:
        lines += ["## The book's own questions", "",
                  "No paper measured these: the book asks them (chapter 8; chapter 9, which asks which of the papers' "
                  "findings hold in every model here; and rows of other chapters that go beyond their paper), each "
                  "with its own test.", ""]
        lines += _table(["ch.", "experiment", "question", "this run [95% interval]", "outcome"],
                        [[chapter_link(ch), _cell(r.experiment), _cell(r.quantity), _ours(r), _cell(r.outcome_words)]
                         for ch, r in own])
    gone = [(ch, r) for ch, rs in rows.items() for r in rs if r.kind == NOT_REPRODUCED]
    if gone:
        lines += ["## Not reproduced", "", "Experiments of the papers the data or models here cannot run.", ""]
        lines += _table(["ch.", "paper section", "what", "paper", "why not"],
                        [[chapter_link(ch), _cell(r.experiment), _cell(r.quantity), _cell(r.paper), _cell(r.reason)]
                         for ch, r in gone])
    return "\n".join(lines).rstrip() + "\n"


def what_ran_markdown(results_folder: Path | None = None) -> str:
    """Which profile and model each chapter of this build ran with (the introduction includes it)."""
    results = load_results(results_folder)
    if not results:
        return "*No chapter has run yet: this build has no results.*\n"
    groups: dict[tuple, list[str]] = {}
    for chapter, data in results.items():
        m = data.get("model", {})
        shape = f", {m['n_layers']} layers x {m['n_heads']} heads" if m.get("n_layers") else ""
        groups.setdefault((data.get("profile"), f"{m.get('name', '?')}{shape}"), []).append(
            CHAPTER_TITLES.get(chapter, chapter).split(".")[0])
    lines = [f"- profile `{profile}`, model {model}: chapters {', '.join(numbers)}"
             for (profile, model), numbers in groups.items()]
    return "\n".join(lines) + "\n"


def write_generated_pages(book: Path) -> None:
    """Write the generated pages into ``book`` (atomically): the results overview and what this build ran."""
    atomic_write_text(Path(book) / "results.md", results_markdown(Path(book) / "results"))
    atomic_write_text(Path(book) / "_generated" / "what_ran.md", what_ran_markdown(Path(book) / "results"))
