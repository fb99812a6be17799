"""The summary box at the top of every chapter page, generated from the run's own results files.

After a chapter has executed, :func:`attnbook.chapters.runner.run_chapter` reads the results and provenance files
the chapter wrote and puts :func:`summary_markdown` in a box under the chapter's title
(:func:`insert_summary`): the profile, the model and device, the data and sample sizes (from the parameters the
chapter ran with, :data:`SIZES`), the run time, the main ways the run differs from the paper (:data:`DIFFERS`, plus
the model when it is not the papers' bert-base), and how the "paper vs this run" rows came out. Nothing in it is
typed by hand: a number in the box is a number of the run.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from attnbook.chapters.results import comparisons_of
from attnbook.verdict import CLAIM, NOT_REPRODUCED, OUTCOMES, OWN, OWN_WORDS, Comparison, expected_by_chance

PAPER_MODEL = "bert-base-uncased"
SUMMARY_TAG = "attnbook-summary"


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
    """The box (a MyST admonition) for one chapter run, from its results and provenance files; ``seconds``: the
    whole execution's wall time when the runner measured it (else the provenance's, from the results' creation)."""
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
    return "```{admonition} This run\n:class: note attnbook-summary\n" + "\n".join(lines) + "\n```"


def insert_summary(nb: dict, results: Mapping[str, Any], provenance: Mapping[str, Any],
                   seconds: float | None = None) -> None:
    """Put the summary box under the chapter's title (the first cell), replacing one a previous run left (in place)."""
    cells = nb.setdefault("cells", [])
    cells[:] = [c for c in cells if SUMMARY_TAG not in c.get("metadata", {}).get("tags", [])]
    cell = {"cell_type": "markdown", "metadata": {"tags": [SUMMARY_TAG]},
            "source": summary_markdown(results, provenance, seconds)}
    cells.insert(1 if cells else 0, cell)
