"""Pages generated from the chapters' results files when the book is built.

``book/results.md`` gathers every chapter's "paper vs this run" rows into one
table, with the model and profile each chapter ran with.
"""
from __future__ import annotations

from pathlib import Path

from attnbook.chapters.toc import CHAPTERS
from attnbook.core.io import atomic_write_text
from attnbook.chapters.results import load_results

#: chapter id -> the heading of its section on the results overview page
CHAPTER_TITLES = {c.id: c.heading for c in CHAPTERS}


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def results_markdown(results_folder: Path | None = None) -> str:
    """Markdown of the results overview page."""
    results = load_results(results_folder)
    lines = [
        "# Results overview",
        "",
        "Every chapter ends with a *paper vs this run* table; this page gathers all of their rows, read "
        "from the chapters' results files (`book/results/<chapter>.json`) when the book was built. "
        "The model and profile are the ones each chapter ran with.",
        "",
    ]
    if not results:
        lines.append("*No chapter has written results yet: run `make book`.*")
        return "\n".join(lines) + "\n"
    for chapter, data in results.items():
        title = CHAPTER_TITLES.get(chapter, chapter)
        model = data.get("model", {}).get("name", "?")
        lines += [f"## {title}", "", f"Model: {model}; profile: `{data.get('profile')}`.", "",
                  "| experiment | quantity | paper | this run | agreement | note |", "|---|---|---|---|---|---|"]
        for row in data.get("comparisons", []):
            lines.append("| " + " | ".join(_cell(row.get(k, "")) for k in
                                            ("experiment", "quantity", "paper", "ours", "verdict", "note")) + " |")
        lines.append("")
    return "\n".join(lines) + "\n"


def write_generated_pages(book: Path) -> None:
    """Write the generated pages into ``book`` (atomically)."""
    atomic_write_text(Path(book) / "results.md", results_markdown(Path(book) / "results"))
