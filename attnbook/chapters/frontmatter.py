"""Pages generated from the chapters' results files when the book is built.

``book/results.md`` gathers every chapter's "paper vs this run" rows into one
table, with the model and profile each chapter ran with.
"""
from __future__ import annotations

from pathlib import Path

from attnbook.chapters.results import comparisons_of, load_results
from attnbook.chapters.toc import CHAPTERS
from attnbook.core.io import atomic_write_text
from attnbook.verdict import OUTCOMES, Comparison

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


def outcome_counts(results: dict[str, dict]) -> dict[str, dict[str, int]]:
    """chapter -> outcome -> number of comparison rows (every outcome of :data:`attnbook.verdict.OUTCOMES`)."""
    return {ch: {o: sum(r.verdict == o for r in comparisons_of(data)) for o in OUTCOMES}
            for ch, data in results.items()}


def results_markdown(results_folder: Path | None = None) -> str:
    """Markdown of the results overview page: outcome counts per chapter, then every comparison of the book."""
    results = load_results(results_folder)
    lines = [
        "# Results overview",
        "",
        "Every chapter ends with a *paper vs this run* table. This page gathers all of their rows, read from the "
        "chapters' results files (`book/results/<chapter>.json`) when the book was built, so a reader sees at a "
        "glance what was reproduced. Each row's outcome comes from the one rule stated in its chapter's table "
        "(`attnbook.verdict`): *agrees*, *partly agrees* or *disagrees* when the comparison could decide, "
        "*inconclusive* when this run's 95% interval is too wide to tell, *not comparable* when the quantity, "
        "model or data differ so much that the comparison could not fail. Intervals are in brackets.",
        "",
    ]
    if not results:
        lines.append("*No chapter has written results yet: run `make book`.*")
        return "\n".join(lines) + "\n"
    counts = outcome_counts(results)
    header = "| chapter | model, profile | " + " | ".join(OUTCOMES) + " | rows |"
    lines += ["## Outcomes by chapter", "", header, "|" + "---|" * (len(OUTCOMES) + 3)]
    for chapter, data in results.items():
        c = counts[chapter]
        model = f"{str(data.get('model', {}).get('name', '?')).split(' (')[0]}, `{data.get('profile')}`"
        lines.append(f"| {CHAPTER_TITLES.get(chapter, chapter)} | {model} | "
                     + " | ".join(str(c[o]) for o in OUTCOMES) + f" | {sum(c.values())} |")
    total = {o: sum(c[o] for c in counts.values()) for o in OUTCOMES}
    lines.append("| **all chapters** | | " + " | ".join(f"**{total[o]}**" for o in OUTCOMES)
                 + f" | **{sum(total.values())}** |")
    lines += ["", "## Every comparison", "",
              "| chapter | experiment | quantity | paper | this run [95% interval] | outcome |",
              "|---|---|---|---|---|---|"]
    for chapter, data in results.items():
        number = CHAPTER_TITLES.get(chapter, chapter).split(".")[0]
        for row in comparisons_of(data):
            lines.append("| " + " | ".join([number, _cell(row.experiment), _cell(row.quantity), _cell(row.paper),
                                             _ours(row), _cell(row.verdict)]) + " |")
    return "\n".join(lines) + "\n"


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
