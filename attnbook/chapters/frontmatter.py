"""Pages generated from the chapters' results files when the book is built.

``book/results.md`` opens with the scorecard (:mod:`attnbook.chapters.scorecard`: the papers' main findings, one
row each, a column per model), then lists every chapter's "paper vs this run" rows in three lists (the papers'
claims, a finding repeated per task on one line; the book's own questions; what was not reproduced), each row linked
to its chapter, and ends with the outcomes counted per chapter. ``book/_generated/what_ran.md`` (the introduction)
says which profile and model each chapter ran with; ``book/_generated/chapter_times.md`` (the seminar kit) how long
each chapter took in this build, from the chapters' provenance files.
"""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

from attnbook.chapters import scorecard
from attnbook.chapters.results import comparisons_of, load_results
from attnbook.chapters.toc import CHAPTERS
from attnbook.core.io import atomic_write_text
from attnbook.core.paths import project_root, results_dir
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
TABLE_ANCHOR = scorecard.TABLE_ANCHOR

#: the class of the container that holds the overview's tables (book/_static/attnbook-overview.css lays them out:
#: every column at least as wide as its longest word)
TABLES_CLASS = "attnbook-overview"


def chapter_results(results_folder: Path | None = None) -> dict[str, dict]:
    """The chapters' results files (``<chapter>.json``) in book order; other JSON files of the folder (a build's
    times, ``_times-<profile>.json``) are not chapters."""
    results = load_results(results_folder)
    order = {ch: i for i, ch in enumerate(CHAPTER_TITLES)}
    return {ch: results[ch] for ch in sorted((c for c in results if not c.startswith("_")),
                                             key=lambda c: (order.get(c, len(order)), c))}


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


#: the CSS class suffix of a book's own question's outcome (book/_static/attnbook.css)
OWN_SLUGS = {AGREES: "supported", PARTLY: "partly", DISAGREES: "not-supported", INCONCLUSIVE: "undecided",
             NOT_COMPARABLE: "not-comparable"}


def outcome_span(row: Comparison | str) -> str:
    """A row's outcome as the book colours it: ``<span class="attnbook-outcome attnbook-outcome-agrees">agrees</span>``
    (a paper's claim, or an outcome), ``...-undecided">undecided</span>`` (one of the book's own questions)."""
    if isinstance(row, str):
        slug, words = scorecard.SLUGS[row], row
    else:
        slug = OWN_SLUGS[row.verdict] if row.kind == OWN else scorecard.SLUGS[row.verdict]
        words = row.outcome_words
    return f'<span class="attnbook-outcome attnbook-outcome-{slug}">{html.escape(words)}</span>'


def _decided(counts: dict[str, int]) -> str:
    """The share of claims decided (agrees, partly agrees or disagrees), ``"—"`` without claims."""
    n = sum(counts.values())
    return f"{sum(counts[o] for o in (AGREES, PARTLY, DISAGREES)) / n:.0%}" if n else "—"


def _table(header: list[str], rows: list[list[str]], extra: str = "") -> list[str]:
    """A Markdown table inside the overview's container (:data:`TABLES_CLASS`, and the class ``extra``)."""
    return ([f":::{{container}} {TABLES_CLASS}{' ' + extra if extra else ''}", "| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)]
            + ["| " + " | ".join(r) + " |" for r in rows] + [":::", ""])


#: a quantity repeated per task: "MRPC: Heterogeneous share" (a task's name starts with a capital letter)
_PER_TASK = re.compile(r"(?P<task>[A-Z][A-Za-z0-9.-]*): (?P<rest>.+)")


def grouped_claims(rows: list[tuple[str, Comparison]]) -> list[tuple[str, str, list[tuple[str, Comparison]]]]:
    """The papers' claims with a finding repeated per task on one line: ``(chapter, claim, [(task, row), ...])``,
    in the rows' order (a row that repeats no other keeps its quantity and an empty task)."""
    groups: dict[tuple[str, str, str], list[tuple[str, Comparison]]] = {}
    for ch, r in rows:
        m = _PER_TASK.fullmatch(r.quantity)
        key = (ch, r.experiment, m.group("rest")) if m else (ch, r.experiment, r.quantity)
        groups.setdefault(key, []).append((m.group("task") if m else "", r))
    out = []
    for (ch, experiment, rest), members in groups.items():
        if len(members) == 1:
            out.append((ch, f"{experiment}: {members[0][1].quantity}", [("", members[0][1])]))
        else:
            out.append((ch, f"{experiment}: {rest}", members))
    return out


def _claim_cells(ch: str, claim: str, members: list[tuple[str, Comparison]]) -> list[str]:
    link = chapter_link(ch)
    if len(members) == 1:
        r = members[0][1]
        return [f"{link} {_cell(claim)}", _cell(r.paper), _ours(r), outcome_span(r)]
    papers = {str(r.paper) for _, r in members}
    paper = _cell(members[0][1].paper) if len(papers) == 1 else "; ".join(f"{t} {_cell(r.paper)}" for t, r in members)
    ours = "; ".join(f"{t} {_ours(r)}" for t, r in members)
    by: dict[str, list[str]] = {}
    for t, r in members:
        by.setdefault(r.verdict, []).append(t)
    outcome = "; ".join(f"{outcome_span(v)} ({', '.join(ts)})" for v, ts in by.items())
    return [f"{link} {_cell(claim)}", paper, ours, outcome]


LEAD = ("The papers' main findings, each judged in every model the book ran. Hover a number for its interval or "
        "its rows; *where* links to the section that measures it.")

MAPPING = (
    "The first model is the one chapters 1–7 ran with; the others come from chapter 9, which runs chapters 1–4's "
    "analyses of the pre-trained models (the findings that need fine-tuning are not run there). "
    "A cell reads its rows' outcomes: *holds* where they {term}`agree <agrees>`, *holds differently* where they "
    "{term}`partly agree <partly agrees>`, *fails* where they {term}`disagree <disagrees>`, *cannot tell* where they "
    "are {term}`inconclusive` or {term}`not comparable`. A finding tested once per task (or in two ways) holds when "
    "every row that decided agrees, fails when every one disagrees, and holds differently otherwise; its number then "
    "counts the rows that agree or partly agree among those that could be compared. *not run*: the model did not "
    "run that chapter; *no row*: the chapter ran with sizes too small to make the finding's row.")

LISTS = (
    "Every chapter ends with a *paper vs this run* table; the lists below gather all of their rows, read from the "
    "chapters' results files (`book/results/<chapter>.json`) when the book was built: **the papers' claims**, each "
    "judged by the one rule stated in its chapter's table (`attnbook.verdict`), a finding the paper states for "
    "several tasks on one line; **the book's own questions**, which no paper asked or measured, with their own "
    "outcome (*supported*, *not supported*, *undecided*); and **what was not reproduced**, with the reason. "
    "Intervals are in brackets; a chapter's number links to its table.")


def _counts_section(results: dict[str, dict], rows: dict[str, list[Comparison]]) -> list[str]:
    counts = outcome_counts(results)
    total = {o: sum(c[o] for c in counts.values()) for o in OUTCOMES}
    lines = ["## The outcomes counted by chapter", "",
             "These counts add up outcomes of different rules (a share within a tolerance, a margin's size class, "
             "a count of tasks), of rows that weigh very differently (one per task for some findings, one for "
             "the whole paper for others), so read them as a map of where the decisions are, not as a score. "
             "The papers' claims only; *decided*: agrees, partly agrees or disagrees.", ""]
    table, ran = [], {}
    for chapter, data in results.items():
        c = counts[chapter]
        model = f"{str(data.get('model', {}).get('name', '?')).split(' (')[0]}, profile `{data.get('profile')}`"
        ran.setdefault(model, []).append(CHAPTER_TITLES.get(chapter, chapter).split(".")[0])
        table.append([CHAPTER_TITLES.get(chapter, chapter), *(str(c[o]) for o in OUTCOMES), str(sum(c.values())),
                      _decided(c)])
    table.append(["**all chapters**", *(f"**{total[o]}**" for o in OUTCOMES), f"**{sum(total.values())}**",
                  f"**{_decided(total)}**"])
    lines += ["Models: " + "; ".join(f"{m} (chapter{'s' if len(chs) > 1 else ''} {', '.join(chs)})"
                                     for m, chs in ran.items()) + ".", ""]
    lines += _table(["chapter", *OUTCOMES, "claims", "decided"], table)
    judged, chance = expected_by_chance([r for rs in rows.values() for r in rs if r.kind == CLAIM])
    per_chapter = "; ".join(f"{CHAPTER_TITLES.get(ch, ch).split('.')[0]}: {x:.1f}" for ch, rs in rows.items()
                            if (x := expected_by_chance([r for r in rs if r.kind == CLAIM])[1]))
    if judged:
        lines += [f"Each judged claim is decided at 95%: were every claim true, about {chance:.1f} of the {judged} "
                  f"judged ones would still come out against the paper by chance alone (by chapter, {per_chapter}), "
                  f"against {total[DISAGREES]} that disagree here.", ""]
    return lines


def results_markdown(results_folder: Path | None = None) -> str:
    """Markdown of the results overview page: the scorecard (:func:`attnbook.chapters.scorecard.scorecard_html`),
    then the papers' claims (per-task repeats on one line; the undecided and not comparable ones with what their
    sample could detect or why), the book's own questions and what was not reproduced, each row linked to its
    chapter's "Paper vs this run" section, and last the outcomes counted per chapter."""
    results = chapter_results(results_folder)
    lines = ["# Results overview", ""]
    if not results:
        lines.append("*No chapter has written results yet: run `make book`.*")
        return "\n".join(lines) + "\n"
    rows = {ch: comparisons_of(data) for ch, data in results.items()}
    lines += [LEAD, "", scorecard.scorecard_html(results, rows), "", MAPPING, "",
              "## The papers' claims", "", LISTS, ""]
    claims = [(ch, r) for ch, rs in rows.items() for r in rs if r.kind == CLAIM]
    lines += _table(["claim", "paper", "this run [95% interval]", "outcome"],
                    [_claim_cells(ch, claim, members) for ch, claim, members in grouped_claims(claims)])
    open_ = [(ch, r) for ch, r in claims if r.verdict in (INCONCLUSIVE, NOT_COMPARABLE)]
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
        lines += _table(["question", "this run [95% interval]", "outcome"],
                        [[f"{chapter_link(ch)} {_cell(r.experiment)}: {_cell(r.quantity)}", _ours(r),
                          outcome_span(r)] for ch, r in own])
    gone = [(ch, r) for ch, rs in rows.items() for r in rs if r.kind == NOT_REPRODUCED]
    if gone:
        lines += ["## Not reproduced", "", "Experiments of the papers the data or models here cannot run.", ""]
        lines += _table(["paper section: what", "paper", "why not"],
                        [[f"{chapter_link(ch)} {_cell(r.experiment)}: {_cell(r.quantity)}", _cell(r.paper),
                          _cell(r.reason)] for ch, r in gone])
    lines += _counts_section(results, rows)
    return "\n".join(lines).rstrip() + "\n"


def what_ran_markdown(results_folder: Path | None = None) -> str:
    """Which profile and model each chapter of this build ran with (the introduction includes it)."""
    results = chapter_results(results_folder)
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


def chapter_times(results_folder: Path | None = None) -> dict[str, dict]:
    """chapter -> ``{"seconds", "machine", "finished", "profile"}`` from each chapter's provenance file (how long the
    chapter ran in the build that wrote it), in book order."""
    folder = Path(results_folder) if results_folder else results_dir()
    out = {}
    for ch in CHAPTER_TITLES:
        p = folder / f"{ch}.provenance.json"
        if p.exists():
            prov = json.loads(p.read_text())
            out[ch] = {"seconds": prov.get("run_seconds"), "machine": prov.get("machine", "?"),
                       "finished": prov.get("finished", "?"), "profile": prov.get("profile", "?")}
    return out


def _duration(seconds) -> str:
    if not isinstance(seconds, (int, float)):
        return "—"
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def times_markdown(results_folder: Path | None = None) -> str:
    """The seminar kit's table of how long each chapter ran in this build (profile, machine and date included)."""
    times = chapter_times(results_folder)
    if not times:
        return "*This build ran no chapter, so it has no times to show.*\n"
    machines = sorted({t["machine"] for t in times.values()})
    dates = sorted(t["finished"] for t in times.values())
    profiles = sorted({str(t["profile"]) for t in times.values()})
    lines = [f"How long each chapter ran in the build of this book (profile {', '.join(f'`{p}`' for p in profiles)}, "
             f"on {' and '.join(machines)}, finished between {dates[0]} and {dates[-1]}). The build may have read "
             "some results from its cache; a first run on a participant's laptop can take longer.", "",
             "| chapter | run time |", "|---|---|"]
    lines += [f"| {{doc}}`{CHAPTER_TITLES[ch]} <{ch}>` | {_duration(t['seconds'])} |" for ch, t in times.items()]
    total = sum(t["seconds"] for t in times.values() if isinstance(t["seconds"], (int, float)))
    lines += [f"| all chapters | {_duration(total)} |"]
    return "\n".join(lines) + "\n"


def write_generated_pages(book: Path) -> None:
    """Write the generated pages into ``book`` (atomically): the results overview, what this build ran and how
    long each chapter took."""
    atomic_write_text(Path(book) / "results.md", results_markdown(Path(book) / "results"))
    atomic_write_text(Path(book) / "_generated" / "what_ran.md", what_ran_markdown(Path(book) / "results"))
    atomic_write_text(Path(book) / "_generated" / "chapter_times.md", times_markdown(Path(book) / "results"))
    atomic_write_text(Path(book) / "_generated" / "cluster_plan.md", cluster_plan_markdown())


def bench_report() -> Path:
    """``make bench``'s report (``benchmarks/results/latest.json``)."""
    return project_root() / "benchmarks" / "results" / "latest.json"


def cluster_plan_markdown(report: Path | None = None) -> str:
    """The page "Beyond one machine"'s numbers: ``attnbook plan``'s wall time with 1, 2, 8 and 64 workers for the
    quick and paper profiles and the smoke book serial against a two-worker local cluster, as ``make bench`` measured
    them (its report names the machine and the date); a sentence saying so when the report has none."""
    path = Path(report) if report else bench_report()
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    plans = {k: v for k, v in (data.get("plan") or {}).items() if isinstance(v, dict) and v.get("workers")}
    if not plans:
        return ("*`make bench` has not priced the profiles on workers yet: `attnbook plan --profile paper --workers 1 2 "
                "8 64` prints the table for your machine.*\n")
    m = data.get("machine", {})
    # a partial `make bench` (--only plan,...) keeps the first run's date and lists its own
    dates = [u["date"] for u in data.get("partial_updates", []) if "plan" in u.get("parts", [])]
    when = dates[-1] if dates else data.get("date", "?")
    counts = [r["workers"] for r in next(iter(plans.values()))["workers"]]
    lines = [f"`attnbook plan` on {m.get('cpu', '?')} ({m.get('cores', '?')} cores), in `make bench` of "
             f"{when}: the wall time from an empty cache with one-thread workers, and what sets it: *work*, the "
             "total work over the workers, or *chain*, the chapters that read each other's results (named below the "
             "table).", "",
             "| profile (model) | " + " | ".join(f"{n} worker{'s' if n > 1 else ''}" for n in counts) + " |",
             "|---|" + "---|" * len(counts)]
    for profile, p in plans.items():
        cells = [f"{r['wall time']} ({'chain' if r['set by'].endswith('chapters') else 'work'})"
                 for r in p["workers"]]
        lines.append(f"| `{profile}` ({p.get('model', '?')}) | " + " | ".join(cells) + " |")
    for profile, p in plans.items():
        bound = [r for r in p["workers"] if r["set by"].endswith("chapters")]
        if bound:
            lines += ["", f"From {bound[0]['workers']} workers on, the `{profile}` profile's time is set by the chain "
                          f"{bound[0]['chain']} ({bound[0]['chain time']}): work of those chapters that more workers "
                          f"do not share, however many there are."]
    c = data.get("cluster") or {}
    if "seconds" in c.get("default", {}) and "seconds" in c.get("local2", {}):
        lines += ["", f"Measured in the same run: the smoke book from an empty cache took "
                      f"{c['default']['seconds'] / 60:.1f} min built serially and {c['local2']['seconds'] / 60:.1f} min "
                      f"on a local cluster of two one-thread workers (`--scheduler local:2`)."]
    return "\n".join(lines) + "\n"
