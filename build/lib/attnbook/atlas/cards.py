"""The joins: one card per head from a :class:`~attnbook.atlas.sources.Measurements`.

A card is a plain dict, the entry of ``heads`` in chapter 8's results file (the chapter documents the schema):

* ``head`` (the papers' 1-based ``layer-head`` label), ``layer`` and ``index`` (1-based);
* ``surface``: chapter 1's ``prev``, ``next``, ``self``, ``cls``, ``sep``, ``punct`` (average attention) and
  ``entropy`` (nats);
* ``syntax``: the relation this head predicts best *relative to that relation's best fixed offset*, its accuracy
  ``accuracy``, the offset baseline ``offset_baseline`` (offset ``offset``) and ``margin`` = accuracy − baseline;
* ``coref``: antecedent accuracy (all mentions) and the nearest-mention baseline;
* ``cluster``: chapter 3's cluster, the ``nearest`` heads by Jensen-Shannon distance and the ``behaviours``;
* ``pattern``: chapter 4's majority class of the head's maps in the pre-trained encoder and in each fine-tuned
  classifier, with the share of maps in it;
* ``disabling``: chapter 5, per task, ``delta`` (metric points), ``low``, ``high`` (95% interval), ``n`` and
  ``learned`` (whether that classifier beat its constant predictor; chapter 5 sweeps one that did not only when
  its profile says so);
* ``importance``: chapter 6's score on each task, the ``rank`` on the main task (1 = most important);
* ``masking``: chapter 6's masking effect on the main task with its interval (and ``learned``, as above);
* ``pruning``: the head's ``position`` in the pruning order by importance (1 = pruned first) and ``survives``:
  whether it is still present after pruning the largest share that loses at most the tolerance.

Whatever a profile did not measure is the string :data:`NOT_RUN` (never a silent default).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from attnbook.core.heads import head_label

NOT_RUN = "not run"


def _f(x: Any, digits: int = 4) -> float | None:
    x = float(x)
    return None if np.isnan(x) else round(x, digits)


def nearest_heads(distances: np.ndarray, k: int) -> list[list[int]]:
    """For every head (layer-major), the ``k`` other heads closest in ``distances`` (ties: layer-major order)."""
    d = np.asarray(distances, dtype=np.float64).copy()
    np.fill_diagonal(d, np.inf)
    return [list(np.argsort(row, kind="stable")[:k]) for row in d]


def majority_class(counts: np.ndarray, classes) -> tuple[list[list[str]], np.ndarray]:
    """``counts[layer, head, class]`` -> each head's most frequent class (first on ties) and its share of the maps."""
    counts = np.asarray(counts, dtype=np.float64)
    idx = counts.argmax(-1)
    share = np.take_along_axis(counts, idx[..., None], -1)[..., 0] / np.maximum(counts.sum(-1), 1)
    return [[classes[int(i)] for i in row] for row in idx], share


def head_cards(m, *, nearest: int = 3) -> list[dict]:
    """One card per head, layer-major (see the module docstring for the fields)."""
    L, H = m.n_layers, m.n_heads
    near = nearest_heads(m.distances, nearest) if m.distances is not None else None
    patterns = {}
    if m.patterns is not None:
        patterns = {which: majority_class(c, m.pattern_classes) for which, c in m.patterns.items()}
    rank = position = None
    if m.importance is not None and m.main_task in m.importance:
        order = np.argsort(-m.importance[m.main_task].ravel(), kind="stable")
        rank = np.empty(L * H, dtype=int)
        rank[order] = np.arange(1, L * H + 1)
    if m.pruning is not None:
        position = np.empty(L * H, dtype=int)
        for k, (l, h) in enumerate(m.pruning["order"]):
            position[l * H + h] = k + 1
    frame_set = {tuple(x) for x in m.framenet["heads"]} if m.framenet is not None else set()
    cards = []
    for l in range(L):
        for h in range(H):
            i = l * H + h
            card: dict[str, Any] = {"head": head_label(l, h), "layer": l + 1, "index": h + 1}
            card["surface"] = ({k: _f(m.surface[k][l, h]) for k in ("prev", "next", "self", "cls", "sep", "punct",
                                                                      "entropy")} if m.surface is not None else NOT_RUN)
            if m.syntax is not None and len(m.syntax["relations"]):
                margins = m.syntax["accuracy"][:, l, h] - m.syntax["baseline"]
                r = int(np.nanargmax(margins))
                card["syntax"] = {"relation": m.syntax["relations"][r], "accuracy": _f(m.syntax["accuracy"][r, l, h]),
                                  "offset_baseline": _f(m.syntax["baseline"][r]), "offset": int(m.syntax["offset"][r]),
                                  "margin": _f(margins[r])}
            else:
                card["syntax"] = NOT_RUN
            card["coref"] = ({"accuracy": _f(m.coref["accuracy"][l, h]), "nearest_baseline": _f(m.coref["baseline"]),
                              "n": m.coref["n"]} if m.coref is not None else NOT_RUN)
            card["cluster"] = ({"cluster": int(m.clusters[i]), "nearest": [head_label(*divmod(int(j), H))
                                                                          for j in near[i]],
                                "behaviours": list(m.behaviours[i]) if m.behaviours is not None else NOT_RUN}
                               if m.clusters is not None else NOT_RUN)
            if patterns:
                card["pattern"] = {which: {"class": cls[l][h], "share": _f(share[l, h], 3)}
                                   for which, (cls, share) in patterns.items()}
            else:
                card["pattern"] = NOT_RUN
            card["framenet"] = ({"mean": _f(m.framenet["mean"][l, h]), "frame_head": (l, h) in frame_set}
                                if m.framenet is not None else NOT_RUN)
            if m.disabling is not None:
                card["disabling"] = {t: {"delta": _f(d["delta"][l, h]), "low": _f(d["low"][l, h]),
                                         "high": _f(d["high"][l, h]), "n": d["n"], "learned": bool(d.get("learned", True))}
                                     for t, d in m.disabling.items()}
                for key, why in m.notes.items():
                    if key.startswith("disabling/"):
                        card["disabling"][key.split("/", 1)[1]] = NOT_RUN
            else:
                card["disabling"] = NOT_RUN
            if m.importance is not None:
                card["importance"] = {"main_task": m.main_task, "by_task": {t: _f(v[l, h], 5)
                                                                            for t, v in m.importance.items()},
                                      "rank": int(rank[i]) if rank is not None else NOT_RUN}
            else:
                card["importance"] = NOT_RUN
            mk = m.masking
            card["masking"] = ({"task": mk["task"], "delta": _f(mk["delta"][l, h]), "low": _f(mk["low"][l, h]),
                                "high": _f(mk["high"][l, h]), "n": mk["n"], "learned": bool(mk.get("learned", True))}
                               if mk is not None else NOT_RUN)
            card["pruning"] = ({"position": int(position[i]), "survives": bool(position[i] > m.pruning["n_safe"]),
                                "safe_share": m.pruning["safe_share"]} if position is not None else NOT_RUN)
            cards.append(card)
    return cards


# --------------------------------------------------------------------------------------------- flat views


def _get(card: dict, *path: str) -> Any:
    x: Any = card
    for p in path:
        if not isinstance(x, dict) or p not in x:
            return NOT_RUN
        x = x[p]
    return x


def _num(x: Any) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and x is not None else float("nan")


def _interval(d: Any, fmt: str = "+.1f") -> str:
    if not isinstance(d, dict):
        return NOT_RUN
    if d.get("delta") is None:
        return "n/a"
    text = f"{format(d['delta'], fmt)} [{format(d['low'], fmt)}, {format(d['high'], fmt)}]"
    return text if d.get("learned", True) else text + " (classifier no better than a constant)"


def flat_frame(cards: list[dict]) -> pd.DataFrame:
    """One row per head: numbers as columns (NaN where not run) for the charts, and ``show: ...`` text columns,
    ``"not run"`` where not run, for the card panel and the printed table."""
    rows = []
    tasks_dis = sorted({t for c in cards if isinstance(c["disabling"], dict) for t in c["disabling"]})
    tasks_pat = [w for w in (cards[0]["pattern"] if cards and isinstance(cards[0]["pattern"], dict) else {})]
    for c in cards:
        s, sy, co, cl = c["surface"], c["syntax"], c["coref"], c["cluster"]
        imp, mk, pr = c["importance"], c["masking"], c["pruning"]
        row: dict[str, Any] = {"label": c["head"], "layer": c["layer"], "index": c["index"]}
        for k in ("prev", "next", "self", "cls", "sep", "punct", "entropy"):
            row[k] = _num(_get(c, "surface", k))
        row["syntax_margin"] = _num(_get(c, "syntax", "margin"))
        row["coref_accuracy"] = _num(_get(c, "coref", "accuracy"))
        row["importance"] = (_num(imp["by_task"].get(imp["main_task"])) if isinstance(imp, dict) else float("nan"))
        row["rank"] = _num(_get(c, "importance", "rank"))
        row["mask_delta"] = _num(_get(c, "masking", "delta"))
        row["position"] = _num(_get(c, "pruning", "position"))
        for t in tasks_dis:
            row[f"disable_delta {t}"] = _num(_get(c, "disabling", t, "delta"))
        row["show: surface"] = (NOT_RUN if not isinstance(s, dict) else
                                f"prev {s['prev']:.2f} · next {s['next']:.2f} · self {s['self']:.2f} · "
                                f"[CLS] {s['cls']:.2f} · [SEP] {s['sep']:.2f} · . , {s['punct']:.2f} · "
                                f"entropy {s['entropy']:.2f}")
        row["show: syntax"] = (NOT_RUN if not isinstance(sy, dict) else
                               f"{sy['relation']}: {sy['accuracy']:.2f} (offset {sy['offset']:+d}: "
                               f"{sy['offset_baseline']:.2f})")
        row["show: coreference"] = (NOT_RUN if not isinstance(co, dict) else
                                    f"{co['accuracy']:.2f} (nearest mention: {co['nearest_baseline']:.2f})")
        row["show: cluster"] = (NOT_RUN if not isinstance(cl, dict) else
                                f"cluster {cl['cluster']}; nearest {', '.join(cl['nearest'])}")
        row["show: behaviours"] = (NOT_RUN if not isinstance(cl, dict) or not isinstance(cl["behaviours"], list)
                                   else (", ".join(cl["behaviours"]) or "none"))
        if not tasks_pat:
            row["show: pattern"] = NOT_RUN
        for w in tasks_pat:
            p = _get(c, "pattern", w)
            row[f"show: pattern {w}"] = NOT_RUN if not isinstance(p, dict) else f"{p['class']} ({p['share']:.0%})"
        fn = c["framenet"]
        row["show: FrameNet"] = (NOT_RUN if not isinstance(fn, dict) else
                                 f"{fn['mean']:.3f}" + (" (frame head)" if fn["frame_head"] else ""))
        if not tasks_dis:
            row["show: disabled"] = NOT_RUN
        for t in tasks_dis:
            row[f"show: disabled {t}"] = _interval(_get(c, "disabling", t))
        row["show: importance"] = (NOT_RUN if not isinstance(imp, dict) else
                                   f"{row['importance']:.3f} on {imp['main_task']}, rank {imp['rank']}")
        row["show: masked"] = NOT_RUN if not isinstance(mk, dict) else f"{_interval(mk)} on {mk['task']}"
        row["show: pruning"] = (NOT_RUN if not isinstance(pr, dict) else
                                f"pruned #{pr['position']}; " + ("survives" if pr["survives"] else "pruned")
                                + f" at the safe share {pr['safe_share']:.0%}")
        rows.append(row)
    return pd.DataFrame(rows)


def show_columns(frame: pd.DataFrame) -> list[str]:
    """The card's text fields of :func:`flat_frame`, in card order."""
    return [c for c in frame.columns if c.startswith("show: ")]


def card_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The static version of the cards for print: one row per head, the card's fields as columns."""
    cols = show_columns(frame)
    return frame[["label", *cols]].rename(columns={"label": "head", **{c: c[len("show: "):] for c in cols}})
