"""Niven & Kao (2019) in chapter 7's sentences: prose generated from this run's numbers and rows.

* what this run trained (:func:`run_markdown`, :func:`training_markdown`) and which runs the paper's degenerate-run
  filter left out (:func:`degenerate_markdown`);
* the cues in words (:func:`cue_markdown`, :func:`not_cue_markdown`, beside Table 2);
* the paper's two headline findings as this run's rows decide them (:func:`warrants_markdown`, §5;
  :func:`adversarial_markdown`, §6), and what the word baselines' architecture forces
  (:func:`word_baselines_markdown`);
* the closing summary (:func:`agreement_markdown`): :func:`attnbook.verdict.summary_markdown` counts and lists the
  rows; this module writes only its setting (:func:`setting_markdown`).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from attnbook import verdict
from attnbook.engine.precision import training_sentence
from attnbook.studies.niven_kao import cues
from attnbook.engine.pairwise import TrainConfig
from attnbook.studies.niven_kao.pairwise import INPUTS
from attnbook.studies.niven_kao.word_baselines import ARGUMENT_CANCELS
from attnbook.studies.niven_kao.paper.claims import PAPER
from attnbook.studies.niven_kao.paper.estimates import productivity_vs_chance
from attnbook.studies.niven_kao.paper.rows import (
    E_FULL,
    E_WARRANTS,
    Q_GAP,
    Q_HALVES,
    Q_MEAN,
    adversarial_experiment,
    degenerate_mask,
    probe_experiment,
)
from attnbook.verdict import Comparison

# ---- what this run trained -----------------------------------------------------------------------


def run_markdown(cfg: TrainConfig, *, n_seeds: int, n_layers: int, max_length: int, n_train: int, n_dev: int,
                 n_test: int, bf16_asked: Any = None) -> str:
    """What this run's BERT training did, beside the paper's recipe (every layer, 20 seeds); ``bf16_asked``: the
    chapter's ``bf16`` parameter (``"auto"`` is explained, :func:`attnbook.engine.precision.training_sentence`)."""
    partial = cfg.trainable_layers is not None and cfg.trainable_layers < n_layers
    trained = f"the top {cfg.trainable_layers} of {n_layers} layers" if partial else f"every layer ({n_layers})"
    text = (
        f"This run: {n_seeds} seeds, {cfg.epochs} epochs, lr {cfg.lr:g}, {cfg.batch_size} items per step, "
        f"at most {max_length} pieces per pair; fine-tuned: **{trained}** plus pooler and classifier "
        f"(paper: every layer, {PAPER['n_seeds']} seeds). {n_train} training, {n_dev} dev and {n_test} test items."
    )
    if cfg.bf16 or bf16_asked is not None:
        text += " " + training_sentence(cfg.bf16 if bf16_asked is None else bf16_asked, cfg.bf16)
    if partial:
        text += " Frozen layers run once per distinct input and are shared by all runs."
    return text


def degenerate_markdown(bert: Mapping[str, Any], n_dev: int, chance_dev: float) -> str:
    """Which BERT runs stayed at chance on dev and are left out of the means (the paper's filter, §3), per input."""
    parts = []
    for inputs, frame in bert.items():
        mask = degenerate_mask(frame["dev_accuracy"], n_dev, chance_dev)
        seeds = ", ".join(str(int(s)) for s in frame["seed"][mask])
        parts.append(f"{INPUTS[inputs]}: {int(mask.sum())} of {len(frame)}" + (f" (seeds {seeds})" if seeds else ""))
    return (f"Degenerate runs (dev accuracy whose exact 95% interval over the {n_dev} dev items does not lie above "
            f"the constant predictor's {chance_dev:.3f}), left out of the means and the comparison rows as the paper "
            "leaves out the runs that failed to train: " + "; ".join(parts) + ".")


def _trained(cfg: TrainConfig | None, n_layers: int | None) -> str:
    if cfg is None:
        return ""
    if cfg.trainable_layers is None or (n_layers is not None and cfg.trainable_layers >= n_layers):
        return "every layer"
    of = f" of {n_layers}" if n_layers else ""
    return f"only the top {cfg.trainable_layers}{of} layers (plus pooler and classifier)"


def training_markdown(cfg: TrainConfig | None, n_layers: int | None, model_name: str, n_seeds: int,
                      n_runs: int | None = None) -> str:
    """The caveat every BERT finding of this run carries, from the parameters: what was fine-tuned and how, over
    how many seeds (``n_seeds`` kept of ``n_runs`` run), beside the paper's BERT."""
    trained = _trained(cfg, n_layers)
    how = ""
    if cfg is not None:
        how = (f" for {cfg.epochs} epochs at lr {cfg.lr:g}, {cfg.batch_size} items per step"
               + (", training passes in bfloat16" if cfg.bf16 else ""))
    runs = f"{n_seeds} seeds" if n_runs in (None, n_seeds) else f"{n_seeds} non-degenerate seeds of {n_runs}"
    text = (f"This run's BERT is {model_name or 'the chapter model'}, {trained} fine-tuned{how}, over {runs} "
            f"(the paper: BERT Large, every layer, {PAPER['n_seeds']} seeds).")
    if trained.startswith("only"):
        text += (" Its BERT rows describe a model whose lower layers keep their pre-trained weights, "
                 "not BERT fine-tuned in full as in the paper.")
    elif n_layers is not None and n_layers < 24:
        text += (f" The encoder is smaller than the paper's BERT ({n_layers} layers), so its accuracies say how far "
                 "such a model gets with these cues, not what BERT Large reaches.")
    return text


# ---- the cues ----------------------------------------------------------------------------------


def cue_markdown(table: Any, *, min_applicability: int, cue: str = "not", n: int = 3) -> str:
    """What the cue scatter shows, from the numbers: the cue that applies to the most items and the bigrams with
    ``cue`` that are more productive than it (each sentence only when it holds)."""
    by_app = cues.top_cues(table, min_applicability=min_applicability, by="applicability", n=None)
    if len(by_app) < 2:
        return "Too few cues apply to enough items to say more."
    first, second = by_app.iloc[0], by_app.iloc[1]
    lines = [f'The cue that applies to the most items is "{first["cue"]}" ({int(first["applicability"])} items, '
             f'productivity {first["productivity"]:.2f}); the next is "{second["cue"]}" '
             f'({int(second["applicability"])} items, productivity {second["productivity"]:.2f}).']
    base = by_app[by_app["cue"] == cue]
    if len(base):
        pi = float(base["productivity"].iloc[0])
        words = by_app["cue"].str.split(" ")
        more = by_app[(by_app["order"] == 2) & words.apply(lambda w: cue in w) & (by_app["productivity"] > pi)]
        if len(more):
            listed = ", ".join(f'"{r.cue}" ({r.productivity:.2f} on {int(r.applicability)} items)'
                               for r in more.head(n).itertuples())
            lines.append(f'Bigrams with "{cue}" that are rarer than it but more productive than its {pi:.2f}: '
                         f"{listed}.")
        else:
            lines.append(f'No bigram with "{cue}" is more productive than "{cue}" itself ({pi:.2f}).')
    return " ".join(lines)


def not_cue_markdown(not_rows: Any) -> str:
    """Productivity of "not" per split beside Table 2, with exact 95% intervals over the items it applies to
    (:func:`~attnbook.studies.niven_kao.paper.estimates.productivity_vs_chance`: whether the cue beats a coin on such
    items; the counts themselves are a census, judged exactly in the comparison rows), and whether the test set's
    lies above chance (a sentence for each case)."""
    table = not_rows.set_index("split")
    splits = [s for s in ("train", "dev", "test") if s in table.index]
    if not splits:
        return ""
    parts = []
    for s in splits:
        e = productivity_vs_chance(table.loc[s])
        parts.append(f"{s} {e.text('.2f')} (paper: {PAPER['not_cue'][s]['productivity']:.2f})")
    text = ('Productivity of "not" in this count, with exact 95% intervals over the items it applies to: '
            + "; ".join(parts) + ".")
    if "test" in table.index:
        e = productivity_vs_chance(table.loc["test"])
        if e.has_interval and e.low > 0.5:
            text += ' On the test set, too, "not" marks the correct warrant more often than chance.'
        elif e.has_interval and e.high < 0.5:
            text += ' On the test set "not" marks the wrong warrant more often than the correct one.'
        else:
            text += (' On the test set the interval includes one half: there "not" is no longer shown to be a '
                     "useful cue.")
    return text


# ---- the findings, as the rows decide them ------------------------------------------------------


def _reason(row: Comparison) -> str:
    return str(row.rule).removeprefix("not comparable: ")


def warrants_markdown(rows: Sequence[Comparison]) -> str:
    """The §5 finding "the warrants alone carry most of it", stated as this run's gap row decides it."""
    by = {(r.experiment, r.quantity): r for r in rows}
    gap, full, w = by.get((E_WARRANTS, Q_GAP)), by.get((E_FULL, Q_MEAN)), by.get((probe_experiment("W"), Q_MEAN))
    if gap is None or full is None or w is None:
        return ""
    numbers = (f"mean test accuracy over the constant predictor {full.ours} with the full input and {w.ours} with "
               f"the warrants alone, a gap of {gap.ours} (paper: {gap.paper}, Table 3)")
    outcome = gap.verdict
    if outcome == verdict.AGREES and full.verdict == verdict.DISAGREES:  # a small gap between two weak models
        return (f"As in the paper, the warrants alone get about as far as the full input here, though the full input "
                f"itself falls short of the paper's, so the gap says little about the warrants: {numbers}.")
    if outcome == verdict.AGREES:
        return f"As in the paper, the warrants alone get about as far as the full input here: {numbers}."
    if outcome == verdict.PARTLY:
        return (f"The warrants alone come near the full input here: the gap lies within the rule's wider band around "
                f"the paper's, though not shown within its narrower one: {numbers}.")
    if outcome == verdict.DISAGREES:
        short = gap.low is not None and gap.low > float(gap.paper)
        how = "fall well short of the full input" if short else "do clearly better than the full input"
        return f"Unlike in the paper, the warrants alone {how} here: {numbers}."
    if outcome == verdict.INCONCLUSIVE:
        detect = f" What its seeds could detect: {gap.detectable}." if gap.detectable else ""
        return (f"This run cannot tell whether the warrants alone carry most of it, as in the paper: {numbers}; "
                f"the interval is too wide for the rule ({gap.rule}).{detect}")
    return f"This run cannot test whether the warrants alone carry most of it: {_reason(gap)}."


def adversarial_markdown(rows: Sequence[Comparison], inputs: str = "full") -> str:
    """The §6 finding (BERT ends at chance on the adversarial test set) as this run's rows decide it."""
    by = {(r.experiment, r.quantity): r for r in rows}
    mean, halves = by.get((adversarial_experiment(inputs), Q_MEAN)), by.get((adversarial_experiment(inputs), Q_HALVES))
    if mean is None:
        return ""
    numbers = f"mean test accuracy less the constant predictor's {mean.ours} (paper: {mean.paper}, Table 4)"
    outcome = mean.verdict
    if outcome == verdict.NOT_COMPARABLE:
        return f"The adversarial test cannot be judged here: {_reason(mean)}."
    if outcome in (verdict.AGREES, verdict.PARTLY):
        text = f"As in the paper, BERT trained for the adversarial test ends at chance there: {numbers}."
    elif outcome == verdict.DISAGREES:
        text = f"Unlike in the paper, BERT does not end at chance on the adversarial test set: {numbers}."
    else:
        text = f"On the adversarial test set the {numbers} is too uncertain to tell whether it sits at chance."
        if mean.detectable:
            text += f" What its seeds could detect: {mean.detectable}."
    if halves is not None and halves.verdict in (verdict.AGREES, verdict.PARTLY):
        text += (f" Its accuracies on the original and the negated half add up to {halves.ours}: it mostly gives "
                 "both copies of an item the same answer, so it does not use the claim.")
    elif halves is not None and halves.verdict == verdict.DISAGREES:
        text += (f" Its accuracies on the two halves add up to {halves.ours}, not about 1: it answers the two "
                 "copies of an item differently, so the claim changes its answer.")
    return text


def word_baselines_markdown(rows: Sequence[Comparison]) -> str:
    """What the BoV and BiLSTM architecture forces (:data:`~attnbook.studies.niven_kao.word_baselines.
    ARGUMENT_CANCELS`), when the rows have any of their runs; ``""`` otherwise."""
    if not any("BoV" in r.experiment or "BiLSTM" in r.experiment for r in rows):
        return ""
    return f"The BoV and BiLSTM rows carry a caveat of their own: {ARGUMENT_CANCELS}."


# ---- the closing summary -------------------------------------------------------------------------


def setting_markdown(rows: Sequence[Comparison], cfg: TrainConfig | None, *, n_layers: int | None = None,
                     model_name: str = "", n_runs: int | None = None) -> str:
    """The setting of the chapter's closing summary: what this run's BERT fine-tuned (from ``cfg``, and from the
    §3 full-input row the seeds its means are over, of ``n_runs`` run: the caveat every BERT finding carries), then
    the paper's two headline findings (§5 warrants alone, §6 adversarial test) as this run's rows decide them, and
    what the word baselines' architecture forces (:func:`word_baselines_markdown`).
    Counts nothing: :func:`attnbook.verdict.summary_markdown` does."""
    parts = []
    full = next((r for r in rows if r.experiment == E_FULL and r.quantity == Q_MEAN), None)
    if full is not None:
        n_seeds = int(full.n) if full.unit == "seeds" else (1 if full.low is not None else 0)
        parts.append(training_markdown(cfg, n_layers, model_name, n_seeds, n_runs))
    parts += [t for t in (warrants_markdown(rows), adversarial_markdown(rows), word_baselines_markdown(rows)) if t]
    return " ".join(parts)


def agreement_markdown(rows: Sequence[Comparison], cfg: TrainConfig | None, *, n_layers: int | None = None,
                       model_name: str = "", n_runs: int | None = None) -> str:
    """The chapter's closing summary: :func:`attnbook.verdict.summary_markdown` of the rows (outcomes counted per
    experiment, the rows that differ or cannot be decided listed), with :func:`setting_markdown` as its setting."""
    setting = setting_markdown(rows, cfg, n_layers=n_layers, model_name=model_name, n_runs=n_runs)
    return verdict.summary_markdown(rows, setting)
