"""Kovaleva et al. §4.6 (Fig. 8-9) and §5 beside this run: chapter 5's "paper vs this run" rows.

:func:`disabling_comparisons` turns chapter 5's sweeps into rows made by :func:`attnbook.verdict.row`, with the rules of
:mod:`~attnbook.studies.kovaleva.paper.rows` (:data:`GAIN_POSITIVE`, :data:`MATCH_RULE`, :data:`LAYER_DROP_EFFECT`).
Every row is one of the paper's claims; a gain found on several fine-tuning seeds is judged over the seeds
(:class:`~attnbook.verdict.Cases`), and when undecided says what each undecided seed's sample could detect.
"""
from __future__ import annotations

from typing import Any, Mapping

from attnbook import verdict
from attnbook.stats import Estimate
from attnbook.studies.kovaleva.paper.claims import PAPER_DISABLING
from attnbook.studies.kovaleva.paper.rows import GAIN_POSITIVE, LAYER_DROP_EFFECT, MATCH_RULE, not_run_row

Comparison = verdict.Comparison


def _over_seeds(per_seed: Mapping[int, Estimate]) -> Estimate:
    """What :class:`~attnbook.verdict.Cases` judges for a gain found on several seeds: the seeds whose paired
    interval lies above 0 (``value``), those whose interval does not lie below 0 (``high``), of ``n`` seeds."""
    sure = sum(1 for e in per_seed.values() if e.low is not None and e.low > 0)
    could = sum(1 for e in per_seed.values() if e.high is None or e.high > 0)
    return Estimate(float(sure), None, float(could), len(per_seed), "seeds")


def _seeds_detectable(per_seed: Mapping[int, Estimate]) -> str:
    """What the undecided seeds of a :class:`~attnbook.verdict.Cases` row could detect, seed by seed
    (:func:`attnbook.verdict.detectable_effect` of :data:`GAIN_POSITIVE` on each seed's paired interval)."""
    return "; ".join(f"seed {s}: {text}" for s, e in per_seed.items()
                     if (text := verdict.detectable_effect(e, GAIN_POSITIVE)))


def _seed_note(per_seed: Mapping[int, Estimate], labels: Mapping[int, str] | None = None) -> str:
    return "; ".join(f"seed {s}" + (f" head {labels[s]}" if labels else "") + f": {e.text('+.2f')}"
                     for s, e in per_seed.items())


def disabling_comparisons(effects: Mapping[str, Mapping[str, Any]], learned: Mapping[str, str],
                          matches: Mapping[str, Mapping[str, Any]], top_k: int, profile: str,
                          shared: Estimate | None = None, shared_note: str = "",
                          seed_effects: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None,
                          agreement: Mapping[str, Mapping[str, float]] | None = None,
                          held_out: Mapping[str, Mapping[int, Any]] | None = None) -> list[Comparison]:
    """Rows for Kovaleva §4.6 (Fig. 8-9) and §5, from chapter 5's sweeps.

    ``effects[task]`` (:func:`attnbook.studies.kovaleva.disabling.sweep_effects`, the task's first analysed seed):
    ``best_head`` and ``best`` (its change, paired interval over dev examples), ``mean`` (the mean change of a
    random head, paired), ``layers`` (one paired estimate per disabled layer), ``survives`` (whether the best
    head's gain survives Holm); ``learned[task]``: ``""`` or why no fine-tuning seed of the task gave a classifier
    better than its constant predictor (then every row of the task is ``not comparable``; a task in ``learned``
    without ``effects`` gets one such row); ``matches[task]``: ``mean_percentile`` (an Estimate) and
    ``percentiles`` of the ``top_k`` heads that hurt most (§5); ``shared``: the share of resamples in which the two
    match tasks share at least the paper's two heads among their ``top_k`` most harmful
    (:class:`~attnbook.verdict.Holds`). ``seed_effects[task][seed]``: the same as ``effects`` for every analysed
    seed; with two or more, the best-head and random-head rows are judged over the seeds
    (:class:`~attnbook.verdict.Cases`: a seed agrees when its paired interval lies above 0) and ``agreement[task]``
    (:func:`attnbook.studies.kovaleva.disabling.agreement_summary`) goes into the note.

    ``held_out[task][seed]`` (:class:`~attnbook.studies.kovaleva.disabling.HeldOut`): that run's best head and best
    layer, chosen on the swept sample, tested on other dev examples. Where a task has it for every seed judged, the
    best-head row judges the held-out gains (a pick scored where it was chosen is biased upwards: the largest of
    many noisy changes), and the largest-layer-gain row the held-out gain of the layer it names; the swept gains go
    into the note. Without it (a sweep of the whole dev set) the rows judge the swept gains and say so.

    The paper's gains are positive: :data:`GAIN_POSITIVE` on the paired 95% interval; the paper reports no test
    and its best head is chosen on the same dev set it is scored on.
    """
    P = PAPER_DISABLING
    nc = lambda t: verdict.NotComparable(learned[t])  # noqa: E731
    seed_effects = seed_effects or {}
    agreement = agreement or {}
    held_out = held_out or {}
    rows = []
    for t in [t for t in learned if t not in effects]:
        rows.append(not_run_row("§4.6 Fig. 8", f"{t}: best single-head gain (points)",
                                P["best_gain"].get(t, "> 0 (Fig. 8)"), learned[t] or "not swept"))
    for t, e in effects.items():
        per = seed_effects.get(t, {})
        paper = P["best_gain"].get(t, f"> 0 (Fig. 8; some head on {P['tasks_improved']} tasks)")
        agr = agreement.get(t)
        agr_note = (f"; across seeds: Spearman {agr['spearman']:.2f} of the per-head changes, top-{top_k} overlap of "
                    f"the most harmful heads {agr['overlap']:.2f} (chance {agr['chance']:.2f}), mean of "
                    f"{agr['pairs']} seed pair(s)") if agr else ""
        tested = held_out.get(t, {})
        seeds = list(per) if len(per) > 1 else list(tested)[:1]
        if seeds and all(s in tested for s in seeds):
            gains = {s: tested[s].head_gain for s in seeds}
            heads = {s: tested[s].head for s in seeds}
            swept = {s: (per[s] if s in per else e)["best"] for s in seeds}
            est = _over_seeds(gains)
            h = tested[seeds[0]]
            rows.append(verdict.row(
                "§4.6 Fig. 8", f"{t}: best single-head gain (points)", paper=paper,
                ours=f"above 0 on {int(est.value)} of {est.n} seed{'s' if est.n > 1 else ''}, held out", estimate=est,
                rule=nc(t) if learned.get(t) else verdict.Cases(partly=0.5), detectable=_seeds_detectable(gains),
                note=f"each seed's best head, chosen on {h.n_chosen} swept dev examples and tested on {h.n_tested} "
                     "others: " + _seed_note(gains, heads) + "; on the examples it was chosen on (biased upwards): "
                     + _seed_note(swept) + agr_note))
        elif len(per) > 1:
            best = {s: x["best"] for s, x in per.items()}
            heads = {s: x["best_head"] for s, x in per.items()}
            est = _over_seeds(best)
            rows.append(verdict.row(
                "§4.6 Fig. 8", f"{t}: best single-head gain (points)", paper=paper,
                ours=f"above 0 on {int(est.value)} of {est.n} seeds", estimate=est,
                rule=nc(t) if learned.get(t) else verdict.Cases(partly=0.5), detectable=_seeds_detectable(best),
                note="each seed's best head, chosen on the same examples (biased upwards; no dev example was held "
                     "out): " + _seed_note(best, heads) + agr_note))
        else:
            rows.append(verdict.row(
                "§4.6 Fig. 8", f"{t}: best single-head gain (points)", paper=paper,
                ours=e["best"], rule=nc(t) if learned.get(t) else GAIN_POSITIVE, fmt=".2f",
                note=f"head {e['best_head']}, chosen on the same examples (biased upwards); "
                     + ("survives Holm" if e.get("survives") else "not significant after Holm") + agr_note))
    for t in [t for t in P["random_head_tasks"] if t in effects]:
        per = seed_effects.get(t, {})
        if len(per) > 1:
            means = {s: x["mean"] for s, x in per.items()}
            est = _over_seeds(means)
            rows.append(verdict.row("§4.6", f"{t}: mean change from disabling a random head", paper="> 0",
                                    ours=f"above 0 on {int(est.value)} of {est.n} seeds", estimate=est,
                                    rule=nc(t) if learned.get(t) else verdict.Cases(partly=0.5),
                                    detectable=_seeds_detectable(means),
                                    note="mean over all heads, paired over dev examples: " + _seed_note(means)))
        else:
            rows.append(verdict.row("§4.6", f"{t}: mean change from disabling a random head", paper="> 0",
                                    ours=effects[t]["mean"], rule=nc(t) if learned.get(t) else GAIN_POSITIVE,
                                    fmt=".3f", note="mean over all heads, paired over dev examples"))
    if "RTE" in effects:
        rows.append(verdict.row("§4.6 Fig. 9", "RTE: disabling layer 1 (points)", paper=P["rte_layer1"],
                                ours=effects["RTE"]["layers"][0], rule=nc("RTE") if learned.get("RTE") else GAIN_POSITIVE,
                                fmt=".2f"))
    judged = [t for t in effects if not learned.get(t)]
    if judged:
        t, layer = max(((t, i) for t in judged for i in range(len(effects[t]["layers"]))),
                       key=lambda x: effects[x[0]]["layers"][x[1]].value)
        h = next(iter(held_out.get(t, {}).values()), None)  # the task's first seed: the run ``effects`` has
        if h is None or h.layer != layer:
            rows.append(verdict.row("§4.6 Fig. 9", "largest gain from disabling a layer (points)",
                                    paper=P["layer_gain"], ours=effects[t]["layers"][layer], rule=GAIN_POSITIVE,
                                    fmt=".2f", note=f"{t}, layer {layer + 1}; chosen among {len(judged)} task(s) x "
                                                    "layers and scored on the same examples (biased upwards)"))
        else:
            rows.append(verdict.row("§4.6 Fig. 9", "largest gain from disabling a layer (points)",
                                    paper=P["layer_gain"], ours=h.layer_gain, rule=GAIN_POSITIVE, fmt=".2f",
                                    note=f"{t}, layer {layer + 1}; chosen among {len(judged)} task(s) x layers on "
                                         f"{h.n_chosen} swept dev examples ({effects[t]['layers'][layer].text('+.2f')}"
                                         f", biased upwards), tested on {h.n_tested} others"))
        wt, wl = min(((t, i) for t in judged for i in range(len(effects[t]["layers"]))),
                     key=lambda x: effects[x[0]]["layers"][x[1]].value)
        rows.append(verdict.row(
            "§4.6 Fig. 9", "largest drop from disabling a layer (points)", paper=P["largest_layer_drop"],
            ours=effects[wt]["layers"][wl], rule=verdict.NoEffect(LAYER_DROP_EFFECT), fmt=".2f",
            note=f"{wt}, layer {wl + 1}, the worst of {len(judged)} task(s) x layers; the paper's claim that disabling a "
                 "layer costs little is contradicted by a drop of at least the rule's bound, and only an interval "
                 "inside it agrees"))
    heads = P["match_heads"]
    for t, m in matches.items():
        rows.append(verdict.row(
            "§5", f"{t}: word-matching share of the {top_k} most harmful-to-disable heads (mean percentile)",
            paper=f"high ({', '.join(heads)}, by inspection)", ours=m["mean_percentile"],
            rule=nc(t) if learned.get(t) else MATCH_RULE, fmt=".2f",
            note=", ".join(f"{h}: {p:.0%}" for h, p in m["percentiles"].items())
            + "; interval: heads re-chosen and shares re-measured in every resample of the dev examples"))
    if shared is not None and len(matches) == 2:
        ta, tb = list(matches)
        reason = learned.get(ta) or learned.get(tb)
        rows.append(verdict.row(
            "§5", f"{ta} and {tb} share {len(heads)} of their {top_k} most harmful-to-disable heads",
            paper=f"yes ({', '.join(heads)})", ours=f"{shared_note} ({shared.value:.0%} of resamples)",
            estimate=shared, rule=verdict.NotComparable(reason) if reason else verdict.Holds(
                f"at least {len(heads)} heads are among the {top_k} most harmful for both tasks")))
    return rows
