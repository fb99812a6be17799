"""What it would take to decide the papers' claims a build left undecided, priced by the plan.

A claim the data leave ``inconclusive`` (judged again from its stored numbers by today's rules,
:meth:`attnbook.verdict.Comparison.rejudged`) has, where its rule is planned for an effect (:func:`attnbook.verdict.
planned_sample`: the paper's value, or no effect), the sample that would decide it with 80% power. This module reads
a build's results files, finds for every such claim the chapter parameter that sets its sample (the numeric
parameter whose value is the row's ``n``: segments, sentences, dev examples per task, seeds), and chooses the
cheapest claims until the expected decided share reaches a target: each chosen claim decides with 80% power, so a
claim counts 0.8. :func:`price` costs the chosen parameters with :func:`attnbook.chapters.plan.make_plan` against
the profile as it is, so a reader sees the minutes before starting (``attnbook plan --decide``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from attnbook.chapters.params import chapter_params, from_record
from attnbook.core.errors import AttnbookError
from attnbook.core.parameters import Parameters
from attnbook.chapters.results import comparisons_of
from attnbook.stats import Estimate
from attnbook.verdict import CLAIM, INCONCLUSIVE, NOT_COMPARABLE, Comparison, planned_sample, rule_from_spec

#: the power each planned sample decides its claim with
POWER = 0.8


@dataclass(frozen=True)
class Need:
    """One undecided claim and the sample planned to decide it: ``planned`` units of the row's kind (``unit``; a
    range over seeds), set by the chapter parameter ``param`` (``key`` inside it for a per-task cap), today ``n``."""

    chapter: str
    experiment: str
    quantity: str
    unit: str
    n: int
    planned: tuple[float, float]
    param: str | None
    key: str | None = None

    @property
    def factor(self) -> float:
        """How many times today's sample the plan asks for (the upper end over seeds)."""
        return self.planned[1] / self.n if self.n else math.inf

    @property
    def target(self) -> int:
        """The parameter's value that gives the planned sample (the upper end over seeds), at least today's."""
        return max(self.n, math.ceil(self.planned[1])) if math.isfinite(self.planned[1]) else -1


def _estimate(r: Comparison) -> Estimate:
    num = lambda x: float(x) if isinstance(x, str) else x  # noqa: E731 - "nan"/"inf" as JSON writes them
    return Estimate(float(num(r.value)), num(r.low), num(r.high), r.n, r.unit)


def _param_for(n: int, quantity: str, unit: str, params: Parameters,
               experiment: str = "") -> tuple[str | None, str | None]:
    """The chapter parameter whose value is ``n`` (a count), or the per-task cap in a dict parameter (``dev_caps``) for
    the task the quantity names; over seeds (``unit``), only a ``seeds`` list's length or an ``n_seeds``-like count.
    Where several parameters hold ``n``, the one whose first word (its stem) the experiment names comes first (``probe_*`` for
    "§5 probing classifiers")."""
    seeds = "seed" in unit
    said = experiment.lower()
    ordered = sorted(params.as_dict().items(), key=lambda kv: kv[0].split("_")[0][:4] not in said)  # "prob" in "probing"
    for name, value in ordered:
        if isinstance(value, bool) or name in ("seed", "batch_size", "max_tokens", "max_length") \
                or seeds != name.endswith("seeds") or "epoch" in name:
            continue
        if isinstance(value, int) and value == n:
            return name, None
        if isinstance(value, (list, tuple)) and name.endswith("seeds") and len(value) == n and value \
                and all(isinstance(v, int) for v in value):
            return name, None
        if isinstance(value, dict):
            for key, cap in value.items():
                if cap == n and key != "default" and key in quantity:
                    return name, key
    return None, None


def needs(results: Mapping[str, Mapping[str, Any]], profile: str = "quick") -> list[Need]:
    """Every undecided claim of ``results`` (chapter -> results file) with the sample planned to decide it; claims
    whose rule plans for no size (a direction without the paper's number) are left out."""
    out = []
    for chapter, data in results.items():
        try:
            params = from_record(chapter, {**(data.get("params") or {}), "profile": profile})
        except AttnbookError:  # a results file from another version: plan with the profile as it is
            params = chapter_params(chapter, profile)
        for r in comparisons_of(data):
            if r.kind != CLAIM or r.rejudged() != INCONCLUSIVE or not r.rule_spec or not r.n:
                continue
            got = planned_sample(_estimate(r), rule_from_spec(r.rule_spec),
                                 r.paper if r.paper_value is None else r.paper_value)
            if got is None:
                continue
            param, key = _param_for(int(r.n), r.quantity, r.unit, params, r.experiment)
            out.append(Need(chapter, r.experiment, r.quantity, r.unit, int(r.n), got, param, key))
    return out


def choose(results: Mapping[str, Mapping[str, Any]], found: Sequence[Need], target: float = 0.8
           ) -> tuple[list[Need], dict[str, float]]:
    """The cheapest undecided claims (smallest factor first, among those a parameter sets and a finite sample decides)
    whose planned samples bring the expected decided share of the claims to ``target``, and the shares: ``now``,
    ``expected`` with the chosen ones, ``best`` with every decidable one."""
    claims = [r for d in results.values() for r in comparisons_of(d) if r.kind == CLAIM]
    outcomes = [r.rejudged() for r in claims]
    decided = sum(o not in (INCONCLUSIVE, NOT_COMPARABLE) for o in outcomes)
    total = max(len(claims), 1)
    usable = sorted((x for x in found if x.param and math.isfinite(x.factor)), key=lambda x: x.factor)
    chosen: list[Need] = []
    for x in usable:
        if decided + POWER * len(chosen) >= target * total:
            break
        chosen.append(x)
    return chosen, {"now": decided / total, "expected": (decided + POWER * len(chosen)) / total,
                    "best": (decided + POWER * len(usable)) / total, "claims": float(len(claims))}


def overrides(chosen: Sequence[Need], profile: str = "quick") -> dict[str, dict[str, Any]]:
    """The parameter values the chosen claims ask for, per chapter (the largest wins; seeds become ``range(k)``)."""
    out: dict[str, dict[str, Any]] = {}
    for x in chosen:
        base = chapter_params(x.chapter, profile)
        cur = out.setdefault(x.chapter, {})
        value = cur.get(x.param, getattr(base, x.param))
        if x.key is not None:
            caps = dict(value)
            caps[x.key] = max(int(caps.get(x.key) or 0), x.target)
            cur[x.param] = caps
        elif isinstance(value, (list, tuple)):
            cur[x.param] = list(range(max(len(value), x.target)))
        else:
            cur[x.param] = max(int(value), x.target)
    return out


def price(chosen: Sequence[Need], profile: str = "quick", seconds: float = 1.5) -> dict[str, dict[str, float]]:
    """Minutes per chapter from an empty cache, the profile as it is against the profile with the chosen samples
    (:func:`attnbook.chapters.plan.make_plan`, rates measured here)."""
    from attnbook.chapters.plan import make_plan  # lazy: it measures this machine's rates

    extra = overrides(chosen, profile)
    base = make_plan(profile, seconds=seconds).chapter_seconds()
    more = make_plan(profile, seconds=seconds, overrides=extra).chapter_seconds()
    return {c: {"now": base[c] / 60, "decide": more.get(c, base[c]) / 60} for c in base}


def report(results: Mapping[str, Mapping[str, Any]], profile: str = "quick", target: float = 0.8,
           seconds: float = 1.5) -> str:
    """``attnbook plan --decide``: the undecided claims with their planned samples, the ones chosen to reach
    ``target``, the parameters they set and the plan's minutes before and after."""
    found = needs(results, profile)
    chosen, share = choose(results, found, target)
    lines = [f"Undecided claims with a planned sample: {len(found)} of {int(share['claims'])} claims; decided now "
             f"{share['now']:.0%}; with every planned sample that a parameter sets, about {share['best']:.0%} "
             f"(each decides with {POWER:.0%} power)."]
    for x in sorted(found, key=lambda x: x.factor):
        mark = "*" if x in chosen else " "
        lo, hi = x.planned
        need = (f"{lo:,.0f}-{hi:,.0f}" if lo != hi else f"{hi:,.0f}") if math.isfinite(hi) else "no finite sample"
        where = f"{x.param}[{x.key}]" if x.key else (x.param or "no parameter sets it")
        lines.append(f" {mark} {x.chapter} · {x.experiment}: {x.quantity[:70]} — {x.n:,} {x.unit} now, {need} "
                     f"planned ({where})")
    if share["now"] >= target:
        lines.append(f"The claims are already {share['now']:.0%} decided, at or above the target {target:.0%}.")
        return "\n".join(lines)
    if not chosen:
        lines.append(f"No choice of these samples brings the claims to {target:.0%} decided.")
        return "\n".join(lines)
    lines.append(f"Chosen (*) to reach {target:.0%}: {len(chosen)} claims, expected decided share "
                 f"{share['expected']:.0%}; parameters: {overrides(chosen, profile)}")
    cost = price(chosen, profile, seconds)
    now, then = sum(v["now"] for v in cost.values()), sum(v["decide"] for v in cost.values())
    lines += [f"  {c}: {v['now']:.1f} -> {v['decide']:.1f} min" for c, v in cost.items() if v["decide"] > v["now"]]
    lines.append(f"The profile from an empty cache: {now:.1f} min as it is, {then:.1f} min with the chosen samples.")
    return "\n".join(lines)
