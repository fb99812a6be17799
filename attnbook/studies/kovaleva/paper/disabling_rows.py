"""Kovaleva et al. §4.6 (Fig. 8-9) and §5 beside this run: chapter 5's "paper vs this run" rows.

:func:`disabling_comparisons` turns chapter 5's sweeps into rows made by :func:`attnbook.verdict.row`, with the rules of
:mod:`~attnbook.studies.kovaleva.paper.rows` (:data:`GAIN_POSITIVE`, :func:`layer_one_rule`, :data:`LAYER_DROP_RULE`,
:data:`MATCH_RULE`). Every row is one of the paper's claims; a gain found on several fine-tuning seeds is judged over
the seeds (:class:`~attnbook.verdict.Cases`), and when undecided says what each undecided seed's sample could detect.

A row that reports the best of many configurations (the best head, the best layer, the task where a layer helps or
hurts most) never judges the pick where it was picked: it judges the pick on held-out dev examples where the sweep left
some out, and otherwise the **cross-fitted** gain (:func:`attnbook.studies.kovaleva.crossfit.cross_fitted`: chosen
on one half of the swept examples and scored on the other, both ways, averaged; the interval re-does the choice in
every resample). The note says which.
"""
from __future__ import annotations

from typing import Any, Mapping

from attnbook import verdict
from attnbook.stats import Estimate
from attnbook.studies.kovaleva.crossfit import cross_fitted
from attnbook.studies.kovaleva.paper.claims import PAPER_DISABLING
from attnbook.studies.kovaleva.paper.rows import (GAIN_POSITIVE, LAYER_DROP_RULE, MATCH_RULE, layer_one_rule,
                                                  not_run_row)

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


def cross_fit_words(n: Any) -> str:
    """How a cross-fitted gain was measured, in the row's note (``n``: the swept dev examples)."""
    return (f"chosen on one half of the {n} swept dev examples and scored on the other, both ways, averaged; "
            "interval re-does the choice in every resample")


def _cross_fit_tasks(effects: Mapping[str, Mapping[str, Any]], tasks) -> str:
    """:func:`cross_fit_words` for a choice across ``tasks``, each halved on its own."""
    sizes = ", ".join(f"{t} {effects[t]['layer_split'].n}" for t in tasks)
    return (f"chosen on one half of each task's swept dev examples ({sizes}) and scored on the other, both ways, "
            "averaged; interval re-does the choice in every resample")


def _n(e: Mapping[str, Any]) -> Any:
    return e.get("n") or (e["best"].n if isinstance(e.get("best"), Estimate) else "")


def _choice(e: Mapping[str, Any], key: str = "best_choice") -> str:
    """The configurations the two halves chose (:meth:`~attnbook.studies.kovaleva.crossfit.CrossFit.chosen_text`)."""
    c = e.get(key)
    return c.chosen_text() if c is not None else ""


def _holm_words(e: Mapping[str, Any]) -> str:
    return (f"head {e['best_head']}, chosen on all swept examples, "
            + ("survives Holm" if e.get("survives") else "is not significant after Holm"))


def _same_data_words(per: Mapping[int, Mapping[str, Any]]) -> str:
    """The seeds' best heads chosen and scored on all swept examples (biased upwards), when the effects have them."""
    same = {s: x["best_same_data"] for s, x in per.items() if x.get("best_same_data") is not None}
    if not same:
        return ""
    return ("; chosen and scored on all swept examples (biased upwards): "
            + _seed_note(same, {s: per[s]["best_head"] for s in same}))


#: why a row chosen across tasks cannot be judged without the sweeps' halves
NO_HALVES = ("no cross-fitted estimate: the layer sweeps' changes on two halves of the dev examples were not given, "
             "and a pick scored where it was made is biased upwards")


def _largest_layer_gain(effects, judged, held_out, P) -> Comparison:
    """§4.6 / Fig. 9: some task gains from disabling a layer. The (task, layer) with the largest change on all
    swept examples is judged on its held-out test when its run has one for that layer; otherwise the choice among
    every judged task's layers is cross-fitted (each task halved and resampled on its own); ``not comparable`` when
    neither is available (effects without ``layer_split``, not made by
    :func:`~attnbook.studies.kovaleva.disabling.sweep_effects`)."""
    cells = [(t, i) for t in judged for i in range(len(effects[t]["layers"]))]
    t, layer = max(cells, key=lambda x: effects[x[0]]["layers"][x[1]].value)
    h = next(iter(held_out.get(t, {}).values()), None)  # the task's first seed: the run ``effects`` has
    swept = effects[t]["layers"][layer].text("+.2f")
    among = f"{len(judged)} task(s) x layers"
    if h is not None and h.layer == layer:
        return verdict.row("§4.6 Fig. 9", "largest gain from disabling a layer (points)", paper=P["layer_gain"],
                           ours=h.layer_gain, rule=GAIN_POSITIVE, fmt=".2f",
                           note=f"{t}, layer {layer + 1}; chosen among {among} on {h.n_chosen} swept dev examples "
                                f"({swept}, biased upwards), tested on {h.n_tested} others")
    if not all(effects[u].get("layer_split") is not None for u in judged):
        return not_run_row("§4.6 Fig. 9", "largest gain from disabling a layer (points)", P["layer_gain"],
                           NO_HALVES)
    fit = cross_fitted([effects[u]["layer_split"].labelled(f"{u} ") for u in judged])
    words = cross_fit_words(effects[t]["layer_split"].n) if len(judged) == 1 else _cross_fit_tasks(effects, judged)
    return verdict.row(
        "§4.6 Fig. 9", "largest gain from disabling a layer (points)", paper=P["layer_gain"], ours=fit.estimate,
        rule=GAIN_POSITIVE, fmt=".2f",
        note=f"{fit.chosen_text()}, among {among}: " + words
             + f"; on all swept examples the largest is {t} layer {layer + 1}, {swept} (biased upwards)")


def _layer_one_drop(effects, judged, P) -> Comparison:
    """Fig. 9: disabling the *first* layer costs little where it costs anything (the paper: drops of up to 0.2
    points on QNLI and MNLI). The quantity is layer 1's change on the task where it is lowest: with one task that
    task's change; with several, the task is chosen by cross-fitting (lowest on one half, scored on the other, both
    ways), so the pick is not the largest of several noisy drops; ``not comparable`` without the halves."""
    q = "largest drop from disabling layer 1 (points)"
    if len(judged) == 1:
        t = judged[0]
        return verdict.row("§4.6 Fig. 9", q, paper=P["largest_layer_drop"], ours=effects[t]["layers"][0],
                           rule=LAYER_DROP_RULE, fmt=".2f",
                           note=f"{t}: layer 1's change, paired over the swept dev examples; the paper's -0.2 is layer "
                                "1 on QNLI and MNLI (RTE gains 3.2)")
    if not all(effects[u].get("layer_split") is not None for u in judged):
        return not_run_row("§4.6 Fig. 9", q, P["largest_layer_drop"], NO_HALVES)
    fit = cross_fitted([effects[u]["layer_split"].select([0]).labelled(f"{u} ") for u in judged], largest=False)
    worst = min(judged, key=lambda u: effects[u]["layers"][0].value)
    return verdict.row(
        "§4.6 Fig. 9", q, paper=P["largest_layer_drop"], ours=fit.estimate, rule=LAYER_DROP_RULE, fmt=".2f",
        note=f"layer 1 of the task where it is lowest ({fit.chosen_text()}), among {len(judged)} tasks: "
             + _cross_fit_tasks(effects, judged) + f"; on all swept examples the lowest is {worst}, "
             f"{effects[worst]['layers'][0].text('+.2f')}; the paper's -0.2 is layer 1 on QNLI and MNLI "
             "(RTE gains 3.2)")


def disabling_comparisons(effects: Mapping[str, Mapping[str, Any]], learned: Mapping[str, str],
                          matches: Mapping[str, Mapping[str, Any]], top_k: int, profile: str,
                          shared: Estimate | None = None, shared_note: str = "",
                          seed_effects: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None,
                          agreement: Mapping[str, Mapping[str, float]] | None = None,
                          held_out: Mapping[str, Mapping[int, Any]] | None = None) -> list[Comparison]:
    """Rows for Kovaleva §4.6 (Fig. 8-9) and §5, from chapter 5's sweeps.

    ``effects[task]`` (:func:`attnbook.studies.kovaleva.disabling.sweep_effects`, the task's first analysed seed):
    ``best`` (the best single head's gain, cross-fitted, with ``best_choice`` the heads the halves chose),
    ``best_head`` and ``best_same_data`` (the head chosen on all swept examples and its gain there, biased upwards:
    notes only), ``mean`` (the mean change of a random head, paired), ``layers`` (one paired estimate per disabled
    layer), ``layer_split`` (every layer's changes on the halves, for the choices across tasks), ``survives``
    (whether the head chosen on all examples survives Holm), ``n``; ``learned[task]``: ``""`` or why no
    fine-tuning seed of the task gave a classifier better than its constant predictor (then every row of the task
    is ``not comparable``; a task in ``learned`` without ``effects`` gets one such row); ``matches[task]``:
    ``mean_percentile`` (an Estimate) and ``percentiles`` of the ``top_k`` heads that hurt most (§5); ``shared``:
    the share of resamples in which the two match tasks share at least the paper's two heads among their ``top_k``
    most harmful (:class:`~attnbook.verdict.Holds`). ``seed_effects[task][seed]``: the same as ``effects`` for
    every analysed seed; with two or more, the best-head and random-head rows are judged over the seeds
    (:class:`~attnbook.verdict.Cases`: a seed agrees when its interval lies above 0) and ``agreement[task]``
    (:func:`attnbook.studies.kovaleva.disabling.agreement_summary`) goes into the note.

    ``held_out[task][seed]`` (:class:`~attnbook.studies.kovaleva.disabling.HeldOut`): that run's best head and best
    layer, chosen on the swept sample, tested on other dev examples. Where a task has it for every seed judged, the
    best-head row judges the held-out gains, and the largest-layer-gain row the held-out gain of the layer it names.
    Without it (a sweep of the whole dev set, as in the paper profile) those rows judge the cross-fitted gains.
    Either way the gain where the pick was made is only quoted in the note (biased upwards: the largest of many
    noisy changes), and so is the Holm result (the paper reports no test).

    Rules: the paper's gains are positive (:data:`GAIN_POSITIVE` on the 95% interval); RTE's layer 1 is judged on
    the paper's size, +3.2 points (:func:`layer_one_rule`); the largest drop from disabling layer 1 on the paper's
    0.2 points (:data:`LAYER_DROP_RULE`).
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
        holm = "; " + _holm_words(e)
        tested = held_out.get(t, {})
        seeds = list(per) if len(per) > 1 else list(tested)[:1]
        rule = nc(t) if learned.get(t) else verdict.Cases(partly=0.5)
        if seeds and all(s in tested for s in seeds):
            gains = {s: tested[s].head_gain for s in seeds}
            heads = {s: tested[s].head for s in seeds}
            est = _over_seeds(gains)
            h = tested[seeds[0]]
            swept = _same_data_words({s: per.get(s, e) for s in seeds})
            rows.append(verdict.row(
                "§4.6 Fig. 8", f"{t}: best single-head gain (points)", paper=paper,
                ours=f"above 0 on {int(est.value)} of {est.n} seed{'s' if est.n > 1 else ''}, held out", estimate=est,
                rule=rule, detectable=_seeds_detectable(gains),
                note=f"each seed's best head, chosen on {h.n_chosen} swept dev examples and tested on {h.n_tested} "
                     "others: " + _seed_note(gains, heads) + swept + holm + agr_note))
        elif len(per) > 1:
            best = {s: x["best"] for s, x in per.items()}
            chosen = {s: _choice(x) for s, x in per.items()}
            est = _over_seeds(best)
            rows.append(verdict.row(
                "§4.6 Fig. 8", f"{t}: best single-head gain (points)", paper=paper,
                ours=f"above 0 on {int(est.value)} of {est.n} seeds", estimate=est, rule=rule,
                detectable=_seeds_detectable(best),
                note="each seed's best head, " + cross_fit_words(_n(e)) + ": "
                     + _seed_note(best, chosen if all(chosen.values()) else None) + _same_data_words(per) + holm
                     + agr_note))
        else:
            chosen = _choice(e)
            same = e.get("best_same_data")
            rows.append(verdict.row(
                "§4.6 Fig. 8", f"{t}: best single-head gain (points)", paper=paper,
                ours=e["best"], rule=nc(t) if learned.get(t) else GAIN_POSITIVE, fmt=".2f",
                note=(f"head {chosen}, " if chosen else "") + cross_fit_words(_n(e))
                     + (f"; chosen and scored on all swept examples (biased upwards): head {e['best_head']} "
                        f"{same.text('+.2f')}" if same is not None else "") + holm + agr_note))
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
        one = layer_one_rule()
        rows.append(verdict.row("§4.6 Fig. 9", "RTE: disabling layer 1 (points)", paper=P["rte_layer1"],
                                ours=effects["RTE"]["layers"][0], rule=nc("RTE") if learned.get("RTE") else one,
                                fmt=".2f", note="layer 1 is named by the paper, not chosen here: paired over the "
                                                "swept dev examples, judged on the paper's size"))
    judged = [t for t in effects if not learned.get(t)]
    if judged:
        rows += [_largest_layer_gain(effects, judged, held_out, P), _layer_one_drop(effects, judged, P)]
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
