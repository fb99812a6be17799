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
from attnbook.chapters.results import comparisons_of
from attnbook.verdict import (AGREES, CLAIM, DISAGREES, INCONCLUSIVE, NOT_REPRODUCED, OUTCOMES, OWN, OWN_WORDS, PARTLY,
    Comparison, expected_by_chance, outcome_html, shown)

PAPER_MODEL = "bert-base-uncased"
SUMMARY_TAG = "attnbook-summary"
#: the most bullets the findings box shows
MAX_FINDINGS = 5
#: the outcomes that decide a claim one way or the other (a section's finding is its first such row)
DECIDED = (AGREES, PARTLY, DISAGREES)


def _n(value: Any, unit: str = "") -> str:
    """``1000 -> '1,000'``; ``None``/``0`` (no cap) -> ``'all'``."""
    if value in (None, 0):
        return f"all {unit}".strip()
    if isinstance(value, (int, float)):
        return f"{value:,}" + (f" {unit}" if unit else "")
    return str(value)


def _caps(caps: Mapping[str, Any] | None, unit: str) -> str:
    """A per-task cap mapping as text: ``{"default": 96, "RTE": 64}`` -> ``'96 examples (RTE 64)'``."""
    if not caps:
        return f"all {unit}"
    caps = dict(caps)
    default = caps.pop("default", None)
    rest = ", ".join(f"{t} {_n(v)}" for t, v in caps.items() if v != default)
    return _n(default, unit) + (f" ({rest})" if rest else "")


def _tasks(p: Mapping[str, Any], key: str = "tasks") -> str:
    return ", ".join(p[key]) if isinstance(p.get(key), (list, tuple)) else str(p.get(key))


#: chapter -> the data and sample sizes of a run, from its parameters
SIZES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "01_clark_surface_patterns": lambda p: (
        f"{_n(p['n_segments'])} WikiText-2 segments of at most {p['max_tokens']} word pieces; attention gradients on "
        f"{_n(p['grad_segments'])} of them"),
    "02_clark_probing": lambda p: (
        f"UD English EWT {p['syntax_split']}: {_n(p['syntax_sentences'])} sentences for single heads; probes trained on "
        f"{_n(p['probe_train_sentences'])} and scored on {_n(p['probe_dev_sentences'])} sentences; GUM coreference "
        f"{p['coref_split']}: {_n(p['coref_max_docs'], 'documents')}"),
    "03_clark_clustering": lambda p: (
        f"{_n(p['n_segments'])} WikiText-2 segments; {_n(p['n_permutations'])} permutations per test; "
        f"{_n(p['syntax_sentences'])} UD EWT sentences for the behaviours"),
    "04_kovaleva_taxonomy": lambda p: (
        f"GLUE tasks {_tasks(p)}: {_n(p['n_examples'])} dev inputs per task for patterns, cosines and features; "
        f"Table 1 on {_caps(p['dev_caps'], 'dev examples')}; the book's labelled maps for the pattern classifier"),
    "05_kovaleva_disabling": lambda p: (
        f"GLUE tasks {_tasks(p)}, fine-tuning seeds {', '.join(map(str, p['seeds']))}; sweeps over "
        f"{_caps(p['dev_caps'], 'dev examples')} per task; classifiers scored on "
        f"{_caps(p['eval_caps'], 'dev examples')}"),
    "06_michel_pruning": lambda p: (
        f"{p['task']} (seeds {', '.join(map(str, p['seeds']))}): {_n(p['dev_cap'], 'dev examples')} scored after "
        f"each intervention, importance on {_n(p['importance_cap'], 'training examples')}; pruning in steps of "
        f"{p['step']:.0%}; {len(p['random_seeds'])} random pruning orders per seed"),
    "07_arct_cues": lambda p: (
        f"ARCT (original and adversarial): {_n(p['train_cap'], 'training items')}, {_n(p['eval_cap'], 'dev/test items')};"
        f" {p['n_seeds']} seeds x {p['epochs']} epochs per BERT experiment; BoV/BiLSTM with {p['word_seeds']} seeds"),
    "08_head_atlas": lambda p: (
        f"the measurements of chapters 1-6 for this profile (read from their caches); {_n(p['n_permutations'])} "
        "permutations per cross-paper test"),
    "09_across_encoders": lambda p: (
        f"models {', '.join(map(str, p['models']))}; each model's own sizes (chapters 1-4's for the model they ran "
        f"with, smaller for the others: the chapter's sizes table); {_n(p['joint_sentences'])} sentences read by every "
        "model for the joint map"),
}

#: chapter -> the main ways a run differs from the paper, besides the model (from its parameters ``p`` and the
#: numbers ``r`` of its results file)
DIFFERS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], list[str]]] = {
    "01_clark_surface_patterns": lambda p, r: [
        "WikiText-2 paragraphs instead of the paper's Wikipedia segments",
        *(["the §3.2 gradients use an MLM head fitted on the frozen encoder (the model has none of its own)"]
          if (r.get("mlm_head") or {}).get("source", "pretrained") != "pretrained" else [])],
    "02_clark_probing": lambda p, r: [
        "UD English EWT instead of the WSJ Penn Treebank with Stanford Dependencies",
        "GUM/OntoGUM instead of CoNLL-2012 for coreference",
        "GloVe 6B 50d (filtered) word vectors in the probes" if p.get("word_vectors") == "glove" else
        "no pre-trained word vectors in the probes"],
    "03_clark_clustering": lambda p, r: ["WikiText-2 paragraphs instead of the paper's Wikipedia segments",
                                      "the paper's visual claims turned into tests with intervals"],
    "04_kovaleva_taxonomy": lambda p, r: [
        "the book's own labelled maps (the paper's ~400 were not released)",
        "FrameNet 1.7 full-text annotations instead of its lexical-unit examples",
        *(["QQP and MNLI are not in the local data"] if "QQP" not in p["tasks"] else [])],
    "05_kovaleva_disabling": lambda p, r: [
        *([f"sweeps on a sample of each dev set ({_caps(p['dev_caps'], 'examples')})"] if p.get("dev_caps")
          and any(v for v in p["dev_caps"].values()) else []),
        "paired significance tests with Holm's correction, which the paper does not report"],
    "06_michel_pruning": lambda p, r: [
        *([f"{p['task']} instead of MNLI (MNLI is not in the local data)"] if p["task"] != "MNLI-m" else []),
        "the machine-translation experiments are not reproduced",
        "§6's training dynamics asked of fine-tuning checkpoints"],
    "07_arct_cues": lambda p, r: [
        *([f"{p['n_seeds']} seeds instead of 20"] if p["n_seeds"] != 20 else []),
        *([f"{p['epochs']} epochs instead of 30"] if p["epochs"] != 30 else []),
        "GloVe 6B 50d instead of 840B 300d for BoV and BiLSTM"],
    "08_head_atlas": lambda p, r: ["no paper: it joins chapters 1-6 head by head and tests what none of them measured"],
    "09_across_encoders": lambda p, r: ["no paper: it sets the papers' findings on bert-base beside every model here, "
                                        "each judged by its own chapter's rule"],
}


def _filled(template: Callable | None, *args: Any) -> Any:
    """``template(*args)``, or ``None`` when the run's parameters lack a name the template reads (a chapter run with
    another parameter table, e.g. a test's): the box then leaves that line out rather than guess it."""
    if template is None:
        return None
    try:
        return template(*args)
    except (KeyError, TypeError):
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
    chapter, p = results["chapter"], results.get("params") or {}
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
