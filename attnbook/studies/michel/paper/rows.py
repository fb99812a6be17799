"""Michel, Levy & Neubig (2019) beside this run: chapter 6's "paper vs this run" rows, the estimates they judge and
the tables that put this run's numbers beside the paper's.

Three kinds of row (:data:`attnbook.verdict.KINDS`): the paper's BERT claims; its machine-translation claims
(:data:`~attnbook.studies.michel.paper.claims.PAPER_MT`), ``not reproduced`` (:func:`mt_row`); and the book's own
questions (seeds, tasks, disabling against masking, §6 asked of fine-tuning checkpoints), each with its own test. An
undecided row says what its sample could detect (:func:`attnbook.verdict.detectable_effect`; for a claim judged head
by head or layer by layer, :func:`heads_detectable`).

The measurements are :mod:`attnbook.studies.michel.importance` (§3.2–§4.1), :mod:`attnbook.studies.michel.pruning`
(§4.2–§4.3) and :mod:`attnbook.studies.michel.dynamics` (§6); the paper's numbers are in
:mod:`attnbook.studies.michel.paper.claims`. Every row's outcome comes from :mod:`attnbook.verdict`; the conditions
each rule checks are in the docstring of the function that makes the row, their thresholds in :data:`THRESHOLDS`.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from attnbook import verdict
from attnbook.stats import Estimate, percentile_interval
from attnbook.studies.heads_off.effects import resolution
from attnbook.studies.michel.paper.claims import MT_REASON, PAPER, PAPER_MT
from attnbook.studies.michel.pruning import (
    BY_ABLATION,
    BY_IMPORTANCE,
    RANDOM,
    difference,
)
from attnbook.studies.michel.runs import across_seeds, with_floor
from attnbook.verdict import Comparison

#: The thresholds of the rules (see each ``*_rows`` function for the rule they enter).
THRESHOLDS: dict[str, Any] = {
    "most": 0.5,  # "most heads": more than this share
    "prunable_steps": (1, 2),  # §4.2: safe share within [0] of the paper's pruning steps agrees, within [1] partly
    "one_head_loss": 5.0,  # §3.3/§4.2: a loss beyond this many tolerances agrees fully (beyond one: partly)
    "speed_gain": 5.0,  # §4.3: gain in % beyond this agrees fully (above 0: partly)
    "top_k": 10,  # heads counted as "the top heads" when seeds are compared
}


def paper_r_low(r: float = PAPER["ablation_pearson_across"], n: int = PAPER["ablation_pearson_heads"]) -> float:
    """The lower end of the 95% interval of the paper's own Pearson r over its ``n`` heads (Fisher z, standard error
    ``1/sqrt(n - 3)``): §3.4's r = 0.68 over bert-base's 144 heads is known to about this much."""
    return float(np.tanh(np.arctanh(r) - 1.959964 / np.sqrt(n - 3)))


def paper_prunable_share(task: str | None) -> tuple[float, str]:
    """The paper's prunable share for ``task`` and where it is from: App. B's number for SST-2, CoLA and MRPC, §4.2's
    40% (BERT on MNLI) otherwise."""
    by_task = PAPER["prunable_share_by_task"]
    if task in by_task:
        return by_task[task], f"App. B, {task}"
    return PAPER["prunable_share"], "§4.2, MNLI"


def prunable_rule() -> verdict.Within:
    """§4.2's safe share judged two-sided, its tolerance the paper's pruning grid: it prunes 10% of the heads per
    step, so its share is known to one step (agrees within ``THRESHOLDS["prunable_steps"][0]`` steps, partly within
    ``[1]``)."""
    step = PAPER["pruning_step"]
    a, b = THRESHOLDS["prunable_steps"]
    return verdict.Within(a * step, b * step, unit="of the heads",
                          source=f"the paper prunes {step:.0%} of the heads per step in §4.2, so its share is known "
                                 f"to one step; partly: {b} steps")


def _est(delta: float, low: float, high: float, n: int, unit: str = "dev examples (paired)") -> Estimate:
    return Estimate(float(delta), float(low), float(high), int(n), unit)


def _not_learned(analysable: bool) -> str | None:
    return None if analysable else "no fine-tuning seed learned the task (dev score not above its constant predictor)"


def rank_interval(rho: float, n: int, unit: str = "heads") -> Estimate:
    """Spearman ρ over ``n`` units with its 95% Fisher-z interval (Bonett and Wright's standard error,
    ``sqrt((1 + ρ²/2) / (n - 3))``); heads of one model are not independent units, so the interval is, if anything,
    too narrow. No interval below 4 units or for an undefined ρ."""
    if not np.isfinite(rho) or n < 4:
        return Estimate(float(rho), None, None, int(n), unit)
    z, se = np.arctanh(np.clip(rho, -0.999999, 0.999999)), np.sqrt((1 + rho ** 2 / 2) / (n - 3))
    return Estimate(float(rho), float(np.tanh(z - 1.959964 * se)), float(np.tanh(z + 1.959964 * se)), int(n), unit)


def _in_points(row: Comparison, est: Estimate) -> Comparison:
    """``row`` whose ``detectable`` (an undecided row's) states its effects in points."""
    if row.verdict != verdict.INCONCLUSIVE or not row.rule_spec:
        return row
    return row.replace(detectable=verdict.detectable_effect(est, verdict.rule_from_spec(row.rule_spec), None,
                                                            units=" points"))


def mt_row(key: str, note: str = "") -> Comparison:
    """A claim of the paper's machine-translation half (:data:`PAPER_MT`): ``not reproduced``, with the reason."""
    quantity, paper = PAPER_MT[key]
    return verdict.row(key, quantity, paper=paper, ours="n/a", estimate=Estimate(float("nan")),
                       rule=verdict.NotComparable(MT_REASON), kind=verdict.NOT_REPRODUCED, note=note)


def heads_detectable(tables: Sequence[pd.DataFrame], tolerance: float, what: str = "heads") -> str:
    """What a claim judged head by head (or layer by layer, ``what``) by :class:`~attnbook.verdict.NoEffect`
    (``tolerance`` points) could detect: the undecided ones' paired 95% intervals (median half-width, on their dev
    examples) and the dev examples that would decide the median undecided one with 80% power were it to have no
    effect at all (:func:`attnbook.verdict.deciding_sample`, planned for the rule's tolerance, not for this run's
    estimate). ``""`` when none is undecided."""
    rule = verdict.NoEffect(tolerance)
    halves, needs, n = [], [], 0
    for t in tables:
        for r in t.itertuples():
            est = _est(r.delta, r.low, r.high, r.n)
            if verdict.judge(rule, 0.0, est) == verdict.INCONCLUSIVE:
                halves.append((r.high - r.low) / 2)
                needs.append(verdict.deciding_sample(est, rule))
                n = int(r.n)
    if not halves:
        return ""
    text = (f"{len(halves)} undecided {what}: their paired 95% intervals are ±{np.median(halves):.2g} points (median)"
            f" on {n:,} dev examples, so no effect within ±{tolerance:g} shows only for {what} whose interval is "
            "narrower than that")
    finite = [x for x in needs if x is not None and np.isfinite(x)]
    if finite:
        one = what[:-1] if what.endswith("s") else what
        text += (f"; were the median undecided {one} to have no effect at all, about "
                 f"{verdict.rounded_count(np.median(finite))} dev examples would decide it with 80% power")
    return text


# ---------------------------------------------------------------------------------------------
# rows
# ---------------------------------------------------------------------------------------------
def no_effect_counts(effects: pd.DataFrame, effect: float) -> tuple[int, int, int]:
    """How many rows of an :func:`~attnbook.studies.heads_off.effects.effect_intervals` table
    :class:`~attnbook.verdict.NoEffect` (``effect`` points) judges ``agrees`` and ``inconclusive``, of how many."""
    rule = verdict.NoEffect(effect)
    out = [verdict.judge(rule, 0.0, _est(r.delta, r.low, r.high, r.n)) for r in effects.itertuples()]
    return out.count(verdict.AGREES), out.count(verdict.INCONCLUSIVE), len(out)


def mean_head_effect(run: Any) -> Estimate:
    """The change from removing one head drawn at random (the mean Δ over heads), paired over the dev examples, its
    interval never narrower than :func:`~attnbook.studies.heads_off.effects.resolution` around it."""
    draws = run.effect_draws.reshape(len(run.effect_draws), -1).mean(1)
    value = float(np.mean(run.ablation.delta))
    lo, hi = percentile_interval(draws)
    n = len(run.ablation.gold)
    return with_floor(_est(value, lo, hi, n), resolution(n))


def ablation_rows(runs: Sequence[Any], tolerance: float, analysable: bool = True) -> list[Comparison]:
    """§3.2, one head removed (BERT), judged over every analysed fine-tuning seed:

    * a head drawn at random changes the score by less than ``tolerance`` points: :class:`~attnbook.verdict.
      NoEffect` on the mean Δ over heads (paired interval over the dev examples, combined over seeds by the book's seed rule);
    * "most heads" change nothing: each head is judged by :class:`~attnbook.verdict.NoEffect` on its own paired
      interval; the share of heads that surely have no effect (lowest over seeds) and the share that may have none
      (sure + undecided, highest over seeds) bound the share, and :class:`~attnbook.verdict.Beyond` asks whether
      it is above ``THRESHOLDS["most"]``. On a small dev sample every head is undecided and the row is
      inconclusive, whatever the point estimates.
    * heads whose removal changes (raises) the score: stated by the paper for its WMT model (Table 1), ``not
      reproduced`` (:func:`mt_row`; this run's BERT count in the note).

    An undecided share row says what the heads' intervals could detect (:func:`heads_detectable`).
    """
    reason = _not_learned(analysable)
    sure, could, raises = [], [], []
    for r in runs:
        a, u, n = no_effect_counts(r.effects, tolerance)
        sure.append(a / n)
        could.append((a + u) / n)
        raises.append(int((r.effects["low"] > 0).sum()))
    n_heads = int(runs[0].ablation.scores.size)
    share = Estimate(min(sure), min(sure), max(could), n_heads,
                     "heads judged one by one (sure share, lowest over seeds; possible share, highest)")
    mean = across_seeds([mean_head_effect(r) for r in runs])
    seeds = ", ".join(str(r.seed) for r in runs)
    return [
        _in_points(verdict.row("§3.2", "mean change when one head (any) is masked, points",
                               paper=PAPER["one_head_bert"], ours=mean,
                               rule=verdict.NotComparable(reason) if reason else verdict.NoEffect(tolerance),
                               note=f"no effect: within ±{tolerance:g} point(s) (the chapter's tolerance); seeds "
                                    f"{seeds}"), mean),
        verdict.row("§3.2", "share of heads whose removal surely changes the score by less than the tolerance",
                    paper=PAPER["one_head_bert"], ours=f"{min(sure):.0%} sure, up to {max(could):.0%}", estimate=share,
                    rule=verdict.NotComparable(reason) if reason else
                    verdict.Beyond(THRESHOLDS["most"], above=True, what="share of heads without effect"),
                    detectable=heads_detectable([r.effects for r in runs], tolerance),
                    note=f"each head: no effect within ±{tolerance:g} point(s) by its paired interval (NoEffect); "
                         f"undecided heads widen the range; seeds {seeds}"),
        mt_row("§3.2 Table 1 (WMT)", note="here, on BERT, heads whose removal surely raises the score (paired "
                                          f"interval above 0, no correction over heads), per seed: "
                                          f"{', '.join(map(str, raises))}"),
    ]


def one_head_rows(chosen: pd.DataFrame, tolerance: float, seed: int, analysable: bool = True) -> list[Comparison]:
    """§3.3 with Table 3 (BERT) and App. A: no layer changes significantly when reduced to its best head. Each layer
    (best head chosen on dev half A) is judged on half B by :class:`~attnbook.verdict.NoEffect` (``tolerance``
    points); :class:`~attnbook.verdict.Cases` counts the layers (undecided layers make it inconclusive)."""
    reason = _not_learned(analysable)
    a, u, n = no_effect_counts(chosen, tolerance)
    return [verdict.row("§3.3, Table 3", "layers reduced to one head (chosen on other data) with no effect",
                        paper=f"no layer changes significantly ({PAPER['layers_one_head_significant'][1]} layers)",
                        ours=f"{a} of {n} surely, {u} undecided",
                        estimate=Estimate(float(a), float(a), float(a + u), n, "layers (each by its paired interval)"),
                        rule=verdict.NotComparable(reason) if reason else verdict.Cases(partly=0.5),
                        detectable=heads_detectable([chosen], tolerance, "layers"),
                        note=f"chosen on dev half A, judged on half B (NoEffect ±{tolerance:g} point(s)); seed {seed}")]


def one_head_all_rows(effect: Estimate, tolerance: float, seed: int, analysable: bool = True) -> list[Comparison]:
    """§3.3/§4.2: one head per layer in every layer at once loses much: :class:`~attnbook.verdict.Beyond` below
    ``-tolerance`` (partly) and below ``-THRESHOLDS["one_head_loss"] x tolerance`` (fully), paired interval."""
    reason = _not_learned(analysable)
    big = THRESHOLDS["one_head_loss"] * tolerance
    return [verdict.row("§3.3/§4.2", "one head per layer everywhere at once: change, points",
                        paper="large loss (Fig. 3: accuracy collapses as the last heads go)", ours=effect,
                        rule=verdict.NotComparable(reason) if reason else
                        verdict.Beyond(-tolerance, above=False, strong=-big, what="change"),
                        note=f"seed {seed}")]


def across_rows(across: Sequence[Estimate], between: str, out_of_domain: bool,
                task_pairs: Sequence[tuple[str, str, float]], analysable: bool = True,
                n_heads: int | None = None) -> list[Comparison]:
    """§3.4: do the heads that matter on one dataset matter on another? Pearson r of the single-head Δ measured on the
    two sets that ``between`` names (a bootstrap interval per seed, combined over seeds by the book's seed rule).

    * With the paper's out-of-domain set (``out_of_domain``: MNLI-matched vs mismatched) it is the paper's claim
      (r = 0.68): :class:`~attnbook.verdict.Beyond` 0, fully beyond the lower end of the paper's own 95% interval
      over its 144 heads (:func:`paper_r_low`).
    * Otherwise it is two halves of one dev sample: the book's own question (kind :data:`~attnbook.verdict.OWN`:
      are the single-head Δ reproducible on other examples of the same set?), judged above 0; the paper's 0.68 is
      across two datasets, a different quantity, and the row says so rather than compare them.

    The book's own question (kind :data:`~attnbook.verdict.OWN`): do the same heads matter across tasks? ρ of I_h
    across tasks (``task_pairs`` from :func:`attnbook.studies.michel.importance.task_agreement`, mean over pairs)
    above 0, its interval over the ``n_heads`` heads (:func:`rank_interval`); not testable without ``n_heads``."""
    reason = _not_learned(analysable)
    mean_rho = float(np.mean([rho for _, _, rho in task_pairs])) if task_pairs else float("nan")
    tasks = rank_interval(mean_rho, n_heads or 0)
    own = verdict.Beyond(0.0, above=True, what="Spearman ρ (the same heads matter across tasks)")
    r = across_seeds(list(across), bounds=(-1.0, 1.0))
    paper_r = PAPER["ablation_pearson_across"]
    if out_of_domain:
        first = verdict.row("§3.4", "Pearson r of single-head Δ across datasets", paper=paper_r, ours=r, fmt=".2f",
                            rule=verdict.NotComparable(reason) if reason else verdict.Beyond(
                                0.0, above=True, strong=round(paper_r_low(), 2), what="Pearson r",
                                source=f"the paper's r = {paper_r} over {PAPER['ablation_pearson_heads']} heads is "
                                       f"known down to {paper_r_low():.2f} at 95% by Fisher's z"),
                            note=between)
    else:
        first = verdict.row(
            "§3.4 (book)", "Pearson r of single-head Δ between two halves of one dev sample",
            paper=f"not reported (the paper's {paper_r} is across MNLI-matched and mismatched: a different quantity)",
            ours=r, fmt=".2f", kind=verdict.OWN,
            rule=verdict.NotComparable(reason) if reason else verdict.Beyond(
                0.0, above=True, what="Pearson r (the same heads matter on other examples)"),
            note=f"{between}: two halves of one dev sample, not an out-of-domain set; the paper's r is between two "
                 "datasets and is not compared with this one")
    return [
        first,
        verdict.row("§3.4 (book)", "Spearman ρ of I_h across tasks (mean over pairs)", paper="not reported",
                    ours=tasks if tasks.has_interval else (round(mean_rho, 2) if task_pairs else "n/a"),
                    estimate=tasks, fmt=".2f", kind=verdict.OWN,
                    rule=own if tasks.has_interval else verdict.NotComparable(
                        "fewer than two tasks learned, or no interval over heads"),
                    note=", ".join(f"{a}/{b} {rho:.2f}" for a, b, rho in task_pairs)
                    + ("; interval: Fisher z over the heads (optimistic: heads are not independent)"
                       if tasks.has_interval else "")),
    ]


def pruning_rows(runs: Sequence[Any], tolerance: float, analysable: bool = True, *, task: str | None = None,
                 step: float | None = None) -> list[Comparison]:
    """§4.2, Fig. 3, over every analysed seed (intervals over the dev examples, combined over seeds by the book's seed
    rule, each run's resolution floor kept):

    * the share of heads that go with little loss: the safe share by I_h (within ``tolerance`` points), judged
      two-sided against the paper's share for ``task`` (:func:`paper_prunable_share`: App. B's for SST-2, CoLA and
      MRPC, §4.2's 40% otherwise) by :func:`prunable_rule`; each run's interval is never narrower than half of this
      run's pruning ``step`` either side (the grid the share is read on);
    * I_h orders heads about as well as the single-head Δ (the oracle): I_h's mean accuracy up to 90% pruned is not
      more than ``tolerance`` points below the oracle's (paired);
    * I_h orders heads better than random orders (paired difference of mean accuracy above 0).

    The two differences keep each run's resolution floor (:func:`~attnbook.studies.heads_off.effects.resolution` of
    its dev examples).
    """
    reason = _not_learned(analysable)
    paper_share, where = paper_prunable_share(task)
    safe = across_seeds([r.curve_stats[BY_IMPORTANCE]["safe"] for r in runs], floor=step / 2 if step else None,
                        bounds=(0.0, 1.0))

    def minus(other: str) -> Estimate:  # I_h's mean accuracy minus ``other``'s, paired, each run with its floor
        ests = [difference(r.curve_stats, BY_IMPORTANCE, other) for r in runs]
        return across_seeds([with_floor(e, resolution(int(e.n))) if e.n else e for e in ests])

    vs_oracle, vs_random = minus(BY_ABLATION), minus(RANDOM)
    nc = verdict.NotComparable(reason) if reason else None
    also = "" if where.startswith("§4.2") else f"; §4.2 gives {PAPER['prunable_share']:.0%} for MNLI"
    return [
        verdict.row("§4.2", "share of heads prunable by I_h with little loss", paper=f"{paper_share:.0%} ({where})",
                    paper_value=paper_share, ours=safe, fmt=".0%", rule=nc or prunable_rule(),
                    note=f"little loss: within {tolerance:g} point(s) of the unpruned score at every step{also}"
                         + (f"; each seed's interval at least ±{step / 2:.0%} (half a pruning step)" if step else "")),
        _in_points(verdict.row("§4.2 Fig. 3", "I_h minus ablation-Δ ordering, mean accuracy up to 90% pruned (points)",
                               paper="about as good", ours=vs_oracle, fmt=".2f",
                               rule=nc or verdict.Beyond(-tolerance, above=True, what="difference",
                                                         source="the chapter's tolerance for little loss"),
                               note="the oracle's Δ was measured on the same dev examples (optimistic); each seed's "
                                    "interval at least its resolution floor"), vs_oracle),
        _in_points(verdict.row("§4.2 Fig. 3", "I_h minus random orderings, mean accuracy up to 90% pruned (points)",
                               paper="better (implied)", ours=vs_random, fmt=".2f",
                               rule=nc or verdict.Beyond(0.0, above=True, what="difference"),
                               note="each seed's interval at least its resolution floor"), vs_random),
    ]


def seed_rows(agreement: Mapping[str, Any], analysable: bool = True) -> list[Comparison]:
    """The book's own questions across fine-tuning seeds (the paper reports one fine-tuning run; kind
    :data:`~attnbook.verdict.OWN`): do seeds rank the heads alike (Spearman ρ of I_h and of the single-head Δ
    between seeds above 0) and share their top heads (overlap above chance)? Each by
    :class:`~attnbook.verdict.Beyond` on the mean over seed pairs with its t-interval over the pairs
    (:func:`attnbook.studies.michel.runs.seed_agreement`; the pairs share seeds, so it is only indicative). Not
    testable when no seed's classifier learned the task (``analysable`` false)."""
    if agreement.get("rho_importance") is None:
        return []
    k, chance = agreement["k"], agreement["chance"]
    reason = _not_learned(analysable)
    rows = []
    for key, what in (("rho_importance", "Spearman ρ of I_h between fine-tuning seeds"),
                      ("rho_ablation", "Spearman ρ of single-head Δ between fine-tuning seeds"),
                      ("top_importance", f"top-{k} heads by I_h shared between seeds"),
                      ("top_ablation", f"top-{k} heads by cost of removal shared between seeds")):
        est = agreement[key] if agreement[key] is not None else Estimate(float("nan"))
        top = key.startswith("top")
        rule = verdict.Beyond(chance if top else 0.0, above=True,
                              what="overlap (above chance)" if top else "Spearman ρ (seeds agree)")
        rows.append(verdict.row("book (seeds)", what, paper="not reported (one run)", ours=est, fmt=".2f",
                                rule=verdict.NotComparable(reason) if reason else rule,
                                kind=verdict.OWN,
                                note=f"mean over {len(agreement['pairs'])} seed pair(s)"
                                     + (f"; chance overlap {chance:.2f}" if top else "")))
    return rows


def speed_share(safe_share: float) -> float:
    """The share of heads removed for the speed test: the largest share found safe, else the paper's half."""
    return safe_share if safe_share > 0 else PAPER["table4_share"]


def speed_rows(summary: pd.DataFrame, share: float) -> list[Comparison]:
    """§4.3, Table 4: removing heads speeds up inference. The gain at the largest batch size with its interval over
    the timing pairs (:func:`attnbook.studies.michel.pruning.speed_summary`): :class:`~attnbook.verdict.Beyond` 0,
    fully beyond ``THRESHOLDS["speed_gain"]`` %; too few pairs for an interval (fewer than 6) leave the row not
    comparable rather than judged on one number. The paper's is a GPU, this run's a CPU."""
    last = summary.iloc[-1]
    best = max(g for _, _, g in PAPER["table4"].values())
    gain = last["gain"] if "gain" in last else Estimate(float(last["gain_pct"]))
    rule = (verdict.Beyond(0.0, above=True, strong=THRESHOLDS["speed_gain"], what="gain") if gain.has_interval else
            verdict.NotComparable(f"{gain.n or 'too few'} timing pair(s) give no 95% interval (6 are needed)"))
    return [verdict.row("§4.3 Table 4", f"speed gain at batch {int(last['batch_size'])}, % ({share:.0%} pruned, CPU)",
                        paper=f"{best:+.1f}% ({PAPER['table4_share']:.0%} pruned, GPU)", ours=gain, fmt=".1f",
                        rule=rule, note="the median of interleaved timing pairs; a shared machine's timings are noisy")]


def dynamics_rows(stats_: Mapping[str, dict], constant: float) -> list[Comparison]:
    """§6, Fig. 5: the paper trains an IWSLT translation model from scratch (``not reproduced``, :func:`mt_row`). The
    book asks the same question of fine-tuning checkpoints as its own (kind :data:`~attnbook.verdict.OWN`): is the
    safe share lower early than at the end? :class:`~attnbook.verdict.Beyond` 0 on the paired difference (end minus
    the first checkpoint whose unpruned score is surely above the constant predictor's ``constant``); not testable
    with fewer than two such checkpoints."""
    names = list(stats_)
    learned = [c for c in names if stats_[c]["unpruned"].low is not None and stats_[c]["unpruned"].low > constant]
    quantity = "safe share at the end minus early in fine-tuning"
    paper = "lower early (the paper's §6, IWSLT)"
    rows = [mt_row("§6 Fig. 5 (IWSLT)")]
    if len(learned) < 2 or learned[-1] != names[-1]:
        return rows + [verdict.row("§6 (book)", quantity, paper=paper, ours="n/a", estimate=Estimate(float("nan")),
                                   kind=verdict.OWN, note="fewer than two checkpoints above the constant predictor",
                                   rule=verdict.NotComparable("fewer than two checkpoints above the constant predictor"))]
    d = difference(stats_, learned[-1], learned[0], "safe")
    left = [c for c in names if c not in learned]
    return rows + [verdict.row("§6 (book)", quantity, paper=paper, ours=d, fmt=".2f", kind=verdict.OWN,
                               rule=verdict.Beyond(0.0, above=True, what="safe share, end minus early"),
                               note=f"{learned[0]} vs the end" + (f"; left out, not above the constant predictor: "
                                                                  f"{', '.join(left)}" if left else ""))]


def masking_rows(disable_vs_mask: Mapping[str, float], n_heads: int | None = None,
                 analysable: bool = True) -> list[Comparison]:
    """The book's own question, not the paper's (kind :data:`~attnbook.verdict.OWN`): do Kovaleva's disabling and
    Michel's masking rank heads alike? Spearman ρ of their Δ above 0 (:class:`~attnbook.verdict.Beyond`), its
    interval over the ``n_heads`` heads (:func:`rank_interval`); not testable without ``n_heads``, or when the
    classifier learned nothing that switching heads off could destroy (``analysable`` false)."""
    rho = float(disable_vs_mask["spearman"])
    est = rank_interval(rho, n_heads or 0)
    reason = _not_learned(analysable)
    return [verdict.row("book", "Spearman ρ of disabling Δ vs masking Δ (same heads)", paper="not reported",
                        ours=est if est.has_interval else (round(rho, 2) if np.isfinite(rho) else "n/a"),
                        estimate=est, fmt=".2f", kind=verdict.OWN,
                        rule=verdict.NotComparable(reason) if reason else
                        verdict.Beyond(0.0, above=True, what="Spearman ρ (the two rank heads alike)")
                        if est.has_interval else verdict.NotComparable("no interval over heads"),
                        note="Kovaleva's uniform attention vs Michel's zero gate"
                             + ("; interval: Fisher z over the heads (optimistic: heads are not independent)"
                                if est.has_interval else ""))]


def comparisons(*, runs: Sequence[Any], analysable: bool, chosen: pd.DataFrame, one_head: Estimate,
                across: Sequence[Estimate], between: str, out_of_domain: bool,
                task_pairs: Sequence[tuple[str, str, float]], agreement: Mapping[str, Any], speed: pd.DataFrame,
                share: float, dynamics: Mapping[str, dict], constant: float, disable_vs_mask: Mapping[str, float],
                tolerance: float, task: str | None = None, step: float | None = None) -> list[Comparison]:
    """Chapter 6's "paper vs this run" rows, in the order of the paper: :func:`ablation_rows`, :func:`one_head_rows`,
    :func:`one_head_all_rows`, :func:`across_rows`, :func:`pruning_rows`, :func:`seed_rows`, :func:`speed_rows`,
    :func:`dynamics_rows`, :func:`masking_rows`, with the machine-translation claims not reproduced (:func:`mt_row`)
    in the paper's order. Each row is a :class:`~attnbook.verdict.Comparison` for
    :meth:`attnbook.chapters.results.ChapterResults.compare` made by :func:`attnbook.verdict.row`. ``runs`` are the
    analysed seeds (:func:`attnbook.studies.michel.runs.analysed`); the single-seed rows use the first. ``task`` and
    ``step`` (the main task and the pruning step) go to :func:`pruning_rows`."""
    seed, n_heads = runs[0].seed, int(np.asarray(runs[0].ablation.scores).size)
    return [*ablation_rows(runs, tolerance, analysable), *one_head_rows(chosen, tolerance, seed, analysable),
            mt_row("§3.3 Table 2 (WMT)"), *one_head_all_rows(one_head, tolerance, seed, analysable),
            *across_rows(across, between, out_of_domain, task_pairs, analysable, n_heads), mt_row("§3.4 (WMT)"),
            *pruning_rows(runs, tolerance, analysable, task=task, step=step), mt_row("§4.2 Fig. 3 (WMT)"),
            *seed_rows(agreement, analysable),
            *speed_rows(speed, share), mt_row("§5 Fig. 4 (WMT)"), *dynamics_rows(dynamics, constant),
            *masking_rows(disable_vs_mask, n_heads, analysable)]


# ---------------------------------------------------------------------------------------------
# tables: Table 4 beside this run's speeds, the pruning curves' estimates per seed
# ---------------------------------------------------------------------------------------------
def table4(speed: pd.DataFrame, share: float) -> pd.DataFrame:
    """This run's examples per second (mean ± sd over repeats) of the original and the pruned model per batch size
    (:func:`attnbook.studies.michel.pruning.speed_summary`), the gain with its interval over repeats, and the paper's
    Table 4 beside (— where it has no row)."""
    paper = PAPER["table4"]
    gains = speed["gain"] if "gain" in speed else [Estimate(g) for g in speed["gain_pct"]]
    return pd.DataFrame({
        "batch size": speed["batch_size"],
        "original (ex/s)": [f"{m:.1f} ± {s:.1f}" for m, s in zip(speed["original_mean"], speed["original_std"])],
        f"pruned {share:.0%} (ex/s)": [f"{m:.1f} ± {s:.1f}" for m, s in zip(speed["pruned_mean"], speed["pruned_std"])],
        "gain % (95% interval)": [g.text("+.1f") for g in gains],
        "paper original": [f"{paper[int(b)][0]:.1f}" if int(b) in paper else "—" for b in speed["batch_size"]],
        f"paper pruned {PAPER['table4_share']:.0%}": [
            f"{paper[int(b)][1]:.1f} ({paper[int(b)][2]:+.1f}%)" if int(b) in paper else "—" for b in speed["batch_size"]],
    })


def pruning_summary(runs: Sequence[Any], tolerance: float) -> pd.DataFrame:
    """Per analysed seed and ordering: the largest share pruned within ``tolerance`` points and the mean score up to
    90% pruned, each with its 95% interval over the dev examples."""
    rows = []
    for r in runs:
        for name, st in r.curve_stats.items():
            rows.append({"seed": r.seed, "ordering": name,
                         f"safe share ({tolerance:g} pt)": st["safe"].text(".0%"),
                         "mean score to 90% pruned": st["area"].text(".1f")})
    return pd.DataFrame(rows)
