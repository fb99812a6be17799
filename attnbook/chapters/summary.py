"""The top of every chapter page, generated from the run's own results files: the findings box and the run's facts.

After a chapter has executed, :func:`attnbook.chapters.runner.run_chapter` reads the results and provenance files
the chapter wrote and puts two boxes under the chapter's title (:func:`insert_summary`):

* :func:`findings_markdown`, the findings first: at most :data:`MAX_FINDINGS` bullets, one per section of the paper
  the chapter tests, each a row's quantity with the paper's number, this run's (with its 95% interval) and the
  outcome, linked to the section of the page that measures it (:func:`attnbook.chapters.anchors.experiment_anchor`);
* :func:`summary_markdown`, folded under a one-line title: the profile, the model and device, the data and sample
  sizes (from the parameters the chapter ran with, :data:`SIZES`), the run time, the main ways the run differs from
  the paper (:data:`DIFFERS`, plus the model when it is not the papers' bert-base), and how the "paper vs this run"
  rows came out.

Nothing in them is typed by hand: a number in a box is a number of the run.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from attnbook.chapters.anchors import experiment_anchor
from attnbook.chapters.params import from_record
from attnbook.chapters.results import comparisons_of
from attnbook.chapters.toc import CHAPTERS
from attnbook.core.errors import AttnbookError
from attnbook.verdict import (AGREES, CLAIM, DISAGREES, INCONCLUSIVE, NOT_REPRODUCED, OUTCOMES, OWN, OWN_WORDS, PARTLY,
    Comparison, expected_by_chance, outcome_html, shown)

PAPER_MODEL = "bert-base-uncased"
SUMMARY_TAG = "attnbook-summary"
#: the most bullets the findings box shows
MAX_FINDINGS = 5
#: the outcomes that decide a claim one way or the other (a section's finding is its first such row)
DECIDED = (AGREES, PARTLY, DISAGREES)


#: chapter -> the data and sample sizes of a run, from its parameters (each chapter's own sentence,
#: :attr:`attnbook.chapters.spec.Chapter.sizes`)
SIZES: dict[str, Callable[[Mapping[str, Any]], str]] = {c.id: c.sizes for c in CHAPTERS if c.sizes}

#: chapter -> the main ways a run differs from the paper, besides the model (from its parameters ``p`` and the
#: numbers ``r`` of its results file; :attr:`attnbook.chapters.spec.Chapter.differs`)
DIFFERS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], list[str]]] = {
    c.id: c.differs for c in CHAPTERS if c.differs}


def _filled(template: Callable | None, *args: Any) -> Any:
    """``template(*args)``, or ``None`` when the run's parameters lack a name the template reads (a chapter run with
    another parameter table, e.g. a test's): the box then leaves that line out rather than guess it."""
    if template is None:
        return None
    try:
        return template(*args)
    except (AttributeError, KeyError, TypeError):
        return None


def outcome_text(comparisons: list[Comparison]) -> str:
    """``'24 rows: 10 agree, 3 partly, 2 disagree, 4 inconclusive, 5 not comparable'`` (zero counts left out), counted
    over the papers' claims; the book's own questions and what was not reproduced follow apart
    (``'; 3 of the book's own questions: 2 supported, 1 undecided; 4 not reproduced'``)."""
    claims = [c for c in comparisons if c.kind == CLAIM]
    own = [c for c in comparisons if c.kind == OWN]
    gone = [c for c in comparisons if c.kind == NOT_REPRODUCED]
    counts = {o: sum(c.verdict == o for c in claims) for o in OUTCOMES}
    words = {"agrees": "agree", "disagrees": "disagree", "partly agrees": "partly agree"}
    parts = [f"{n} {words.get(o, o)}" for o, n in counts.items() if n]
    n = len(claims)
    label = "row" if not (own or gone) else "claim of the paper" if n == 1 else "claims of the paper"
    text = (f"{n} {label}{'s' if n != 1 and label == 'row' else ''}: " + ", ".join(parts) if claims else
            "no claim of the paper" if own or gone else "no rows")
    judged, chance = expected_by_chance(claims)
    if judged:
        text += (f" (each judged at 95%: about {chance:.1f} of the {judged} judged claim{'s' if judged != 1 else ''} "
                 "would come out against the paper by chance alone)")
    if own:
        said = {w: sum(c.outcome_words == w for c in own) for w in dict.fromkeys(OWN_WORDS.values())}
        text += f"; {len(own)} of the book's own questions: " + ", ".join(f"{k} {w}" for w, k in said.items() if k)
    if gone:
        text += f"; {len(gone)} not reproduced"
    return text


def summary_markdown(results: Mapping[str, Any], provenance: Mapping[str, Any], seconds: float | None = None) -> str:
    """The run's box (a MyST admonition, folded: its title names the profile, model and run time), for one chapter
    run, from its results and provenance files; ``seconds``: the whole execution's wall time when the runner measured
    it (else the provenance's, from the results' creation)."""
    chapter = results["chapter"]
    try:
        p = from_record(chapter, results.get("params") or {})
    except AttnbookError:  # a results file of another version or chapter: the box leaves the sizes out
        p = None
    model = provenance.get("model") or results.get("model") or {}
    name = model.get("name", "?")
    shape = f"{model.get('n_layers')} layers x {model.get('n_heads')} heads"
    differs = []
    if name != PAPER_MODEL:
        differs.append(f"{name}, {shape}, instead of the papers' {PAPER_MODEL}, 12 layers x 12 heads")
    if model.get("shape_note"):
        differs.append(model["shape_note"])
    differs += [d for d in _filled(DIFFERS.get(chapter), p, results.get("numbers") or {}) or [] if d]
    seconds = float(seconds if seconds is not None else provenance.get("run_seconds") or 0)
    runtime = f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"
    lines = [
        f"- **profile** `{results.get('profile')}` · **model** {name}, {shape} · **device** "
        f"`{model.get('device') or 'cpu'}` · **run time** {runtime} ({provenance.get('machine', '?')})",
    ]
    sizes = _filled(SIZES.get(chapter), p)
    if sizes:
        lines.append(f"- **data and sizes**: {sizes}")
    if differs:
        lines.append("- **differs from the paper**: " + "; ".join(differs))
    lines.append(f"- **paper vs this run** (the table at the end): {outcome_text(comparisons_of(results))}")
    title = f"This run: {results.get('profile')} profile, {name}, {runtime}"  # no backtick: it ends a fence's info
    return f"```{{admonition}} {title}\n:class: note dropdown attnbook-summary\n" + "\n".join(lines) + "\n```"


def findings(rows: Iterable[Comparison], limit: int = MAX_FINDINGS) -> tuple[list[Comparison], list[str]]:
    """The rows the findings box shows, and the sections it leaves out, by one rule on the rows alone.

    The rows are the papers' claims (kind :data:`CLAIM`); a chapter without any (the head atlas, the chapter across
    encoders) shows its own questions (:data:`OWN`) instead; rows not reproduced are never a finding. A section is an
    ``experiment`` label, in the order its first row comes (the order the chapter measures them, which is the page's).
    A section's finding is its first row that the rule decided (agrees, partly agrees, disagrees), else its first row
    the data leave undecided, else its first row. With more than ``limit`` sections, those whose finding is decided
    come before the others, and the first ``limit`` of that order are kept; they are shown in page order."""

    rows = list(rows)
    chosen = [r for r in rows if r.kind == CLAIM] or [r for r in rows if r.kind == OWN]
    sections: dict[str, list[Comparison]] = {}
    for r in chosen:
        sections.setdefault(r.experiment, []).append(r)
    first = {exp: next((r for r in rs if r.verdict in DECIDED), None)
             or next((r for r in rs if r.verdict == INCONCLUSIVE), rs[0]) for exp, rs in sections.items()}
    order = list(sections)
    ranked = sorted(order, key=lambda e: (first[e].verdict not in DECIDED, order.index(e)))
    kept = set(ranked[:limit])
    return [first[e] for e in order if e in kept], [e for e in order if e not in kept]


def findings_markdown(results: Mapping[str, Any], linked: Iterable[str] | None = None) -> str:
    """The findings box (a MyST admonition) of a chapter run, from the rows of its results file (:func:`findings`):
    each bullet the section (a link to it on the page), the row's quantity, the paper's number and this run's, and
    the outcome in its colour. ``linked``: the experiments whose section carries a target (default: all)."""
    chapter = results["chapter"]
    rows = comparisons_of(results)
    shown_rows, rest = findings(rows)
    own = bool(shown_rows) and shown_rows[0].kind == OWN
    linked = None if linked is None else set(linked)
    section = lambda e: (f"[{e}](#{experiment_anchor(chapter, e)})"  # noqa: E731
                         if linked is None or e in linked else e)
    lines = []
    for r in shown_rows:
        lines.append(f"- {outcome_html(r.outcome_words)} **{section(r.experiment)}** — {r.quantity}: "
                     f"paper {r.paper}; this run {shown(r)}")
    if not lines:
        lines.append("- No paper's claim and no question of the book is compared on this page."
                     if not any(r.kind == NOT_REPRODUCED for r in rows) else
                     "- No experiment of the paper could be run here: the table at the end says why.")
    if rest:
        n = sum(r.experiment in rest for r in rows if r.kind == (OWN if own else CLAIM))
        lines.append(f"\n{len(rest)} more section{'s' if len(rest) != 1 else ''} ({n} row{'s' if n != 1 else ''}): "
                     + ", ".join(section(e) for e in rest) + "; each in the table at the end.")
    title = "Findings: the book's own questions" if own else "Findings"
    return f"```{{admonition}} {title}\n:class: attnbook-findings\n" + "\n".join(lines) + "\n```"


def insert_summary(nb: dict, results: Mapping[str, Any], provenance: Mapping[str, Any],
                   seconds: float | None = None, linked: Iterable[str] | None = None) -> None:
    """Put the findings box and the run's box right under the chapter's title, replacing those a previous run left
    (in place). A first cell with text after its title is split, so the boxes come before the introduction.
    ``linked``: as in :func:`findings_markdown`."""
    cells = nb.setdefault("cells", [])
    cells[:] = [c for c in cells if SUMMARY_TAG not in c.get("metadata", {}).get("tags", [])]
    if cells and cells[0].get("cell_type") == "markdown":
        src = cells[0].get("source", "")
        src = "".join(src) if isinstance(src, list) else src
        title, _, rest = src.lstrip("\n").partition("\n")
        if title.startswith("# ") and rest.strip():
            cells[0]["source"] = title
            intro = {"cell_type": "markdown", "metadata": {}, "source": rest.strip("\n")}
            if "id" in cells[0]:
                intro["id"] = f"{cells[0]['id']}-intro"
            cells.insert(1, intro)
    cell = {"cell_type": "markdown", "metadata": {"tags": [SUMMARY_TAG]},
            "source": findings_markdown(results, linked) + "\n\n" + summary_markdown(results, provenance, seconds)}
    if cells and "id" in cells[0]:
        cell["id"] = SUMMARY_TAG
    cells.insert(1 if cells else 0, cell)
