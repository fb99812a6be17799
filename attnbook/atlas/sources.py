"""Every chapter's per-head measurements, read through the package (never from another chapter's page or file).

:func:`gather` calls, for each source chapter, the same functions with the same arguments as the chapter's
notebook, with the chapter's own parameters (``chapter_params[<chapter id>]``, resolved by the chapter for the
profile). Every expensive result is cached by content (:mod:`attnbook.core.cache`), so once chapters 1-6 ran this
costs reading their caches; a run of the atlas alone computes them once, exactly as the chapters would.

The one measurement no chapter caches is chapter 4's FrameNet link scores (Kovaleva §4.2); the atlas caches them
itself under the model's key and the instances' digest (:func:`framenet_scores`).

What comes back is a :class:`Measurements` of plain arrays ``values[layer, head]`` (0-based inside); a part a
profile does not run, or that failed for a reason the chapter itself reports (a classifier that learned nothing),
is ``None`` with the reason in ``notes``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from attnbook.core.errors import ParameterError
from attnbook.core.parameters import Parameters
from attnbook.data import framenet as framenet_data
from attnbook.data import gum
from attnbook.data.conllu import ud_path
from attnbook.engine.finetune import base_encoder
from attnbook.studies.michel.pipeline import PruningPipeline
from attnbook.studies.kovaleva.pipeline import DisablingPipeline, TaxonomyPipeline
from attnbook.studies.clark.pipeline import ClusteringPipeline, ProbingPipeline, SurfacePipeline
from attnbook.studies.heads_off import effects as headstudy
from attnbook.studies.kovaleva import framenet
from attnbook.studies.kovaleva.patterns import CLASSES
from attnbook.studies.michel import pruning as mp

#: The chapters the atlas reads, in book order (chapter 7, Niven & Kao, measures no heads).
SOURCE_CHAPTERS = (
    "01_clark_surface_patterns", "02_clark_probing", "03_clark_clustering", "04_kovaleva_taxonomy",
    "05_kovaleva_disabling", "06_michel_pruning",
)
#: Chapter 1's surface statistics on a card (Clark §3): relative position, special tokens, entropy.
SURFACE_KEYS = ("prev", "next", "self", "cls", "sep", "punct", "entropy")


@dataclass
class Measurements:
    """Per-head measurements of chapters 1-6 (``None``: not run, reason in ``notes``).

    * ``surface``: chapter 1, statistic -> ``values[layer, head]`` (:data:`SURFACE_KEYS`), and ``uniform_entropy``.
    * ``syntax``: chapter 2 (Clark §4.2): ``relations`` (list), ``accuracy[relation, layer, head]`` (best of the
      two directions), ``baseline[relation]`` (best fixed offset's accuracy) and ``offset[relation]``.
    * ``coref``: chapter 2 (Clark §4.3): ``accuracy[layer, head]`` (all mentions) and the nearest-antecedent
      baseline ``baseline`` (the offset baseline of Table 2), ``n`` queries.
    * ``distances[head, head]`` and ``clusters[head]`` (1..k), ``behaviours[head]``: chapter 3 (Clark §6),
      layer-major heads.
    * ``patterns``: chapter 4 (Kovaleva §4.1): ``"pre-trained"`` and each fine-tuned task -> ``counts[layer, head,
      class]`` of the maps in each class; ``pattern_classes`` the class names; ``learned[task]`` whether that
      task's analysed classifier learned it, chapter 4's own verdict (Table 1's cached dev outputs, its rule).
    * ``framenet``: chapter 4 (Kovaleva §4.2): ``mean[layer, head]`` and ``heads`` (0-based pairs above the
      percentile).
    * ``disabling``: chapter 5 (Kovaleva §4.6): task -> ``delta``, ``low``, ``high`` (``[layer, head]``, the metric's
      points, 95% interval over dev examples), ``n``, ``seed``.
    * ``masking``: chapter 6 (Michel §3.2): the same for the main task's classifier, plus ``task``.
    * ``importance``: chapter 6 (Michel §4.1): task -> ``I[layer, head]``; ``main_task``.
    * ``pruning``: chapter 6 (Michel §4.2): ``order`` (0-based heads in pruning order by importance),
      ``safe_share`` and ``n_safe`` (heads prunable with at most ``tolerance`` points lost), ``tolerance``.
    """

    n_layers: int
    n_heads: int
    model: str = ""
    surface: dict | None = None
    syntax: dict | None = None
    coref: dict | None = None
    distances: np.ndarray | None = None
    clusters: np.ndarray | None = None
    behaviours: list | None = None
    patterns: dict | None = None
    pattern_classes: tuple = ()
    learned: dict = field(default_factory=dict)
    framenet: dict | None = None
    disabling: dict | None = None
    masking: dict | None = None
    importance: dict | None = None
    main_task: str | None = None
    pruning: dict | None = None
    notes: dict = field(default_factory=dict)
    data_files: list = field(default_factory=list)


# --------------------------------------------------------------------------------------------- chapter by chapter


def syntax_arrays(acc) -> dict:
    """The card's view of a :class:`~attnbook.studies.clark.syntax.HeadAccuracy`: per relation (pooled rows such as
    ``All`` left out, relations without edges too) each head's accuracy, best of both directions, and the best
    fixed offset's accuracy."""
    rels, accs, base, offs = [], [], [], []
    full = acc.accuracy()  # [relation, layer, head, direction]
    for r, rel in enumerate(acc.relations):
        if rel == "All" or acc.total[r] == 0:
            continue
        offset, b = acc.baseline(rel)
        rels.append(rel)
        accs.append(np.nanmax(full[r], axis=-1))
        base.append(b)
        offs.append(offset)
    return {"relations": rels, "accuracy": np.array(accs), "baseline": np.array(base), "offset": np.array(offs)}


def framenet_scores(base, instances, *, direction: str, batch_size: int) -> dict:
    """Chapter 4's :func:`attnbook.studies.kovaleva.framenet.frame_link_scores` (cached: read back after chapter 4)."""
    return framenet.frame_link_scores(base, list(instances), direction=direction, batch_size=batch_size)


def kovaleva_patterns(run: TaxonomyPipeline) -> dict:
    """Chapter 4's per-head pattern counts (Kovaleva §4.1, the CNN's labels) for the pre-trained encoder (summed
    over the tasks' inputs) and each fine-tuned classifier, its FrameNet heads (§4.2) and whether each task's
    classifier learned it (chapter 4's verdict, :meth:`TaxonomyPipeline.learned`)."""

    tasks = list(run.p.tasks)
    why = run.learned() if tasks else {}
    shares = run.pattern_shares() if tasks else {}
    counts: dict[str, np.ndarray] = {}
    for task in tasks:
        counts[task] = np.asarray(shares[("fine-tuned", task)]["cnn"]["counts"])
        pre = np.asarray(shares[("pre-trained", task)]["cnn"]["counts"])
        counts["pre-trained"] = counts["pre-trained"] + pre if "pre-trained" in counts else pre
    fheads = run.framenet().heads
    return {"counts": {"pre-trained": counts.pop("pre-trained"), **counts} if counts else None,
            "classes": tuple(CLASSES), "learned": {t: not why.get(t) for t in tasks},
            "framenet": {"mean": np.asarray(fheads["mean"]), "heads": [(int(l), int(h)) for l, h, _ in fheads["heads"]],
                         "percentile": float(run.p.percentile)},
            "files": list(framenet_data.fulltext_files())}


def kovaleva_disabling(run: DisablingPipeline) -> tuple[dict, dict]:
    """Chapter 5's single-head disabling sweeps (Kovaleva §4.6) of each task's primary classifier (the first
    learned seed, as the chapter's figures), with paired 95% intervals over the swept dev examples; and the
    reason for each task left out."""

    p, b = run.p, run.baselines()
    single = run.single_heads()
    out, why = {}, {}
    for task in p.tasks:
        if task not in b.main:
            why[task] = "; ".join(f"seed {s}: {b.learned[(task, s)]}" for s in p.seeds if b.learned.get((task, s)))
            continue
        k = b.main[task]
        sweep = single[k]
        table, _ = headstudy.effect_intervals(sweep, task, n_resamples=p.n_resamples, seed=p.seed)
        shape = sweep.scores.shape
        out[task] = {"delta": np.asarray(sweep.delta, dtype=float), "low": table["low"].to_numpy().reshape(shape),
                     "high": table["high"].to_numpy().reshape(shape), "n": int(table["n"].iloc[0]), "seed": int(k[1]),
                     "learned": not b.learned.get(k)}
    return out, why


def michel_heads(run: PruningPipeline) -> dict:
    """Chapter 6's masking effects (Michel §3.2), importance scores on the main and agreement tasks (§4.1) and the
    pruning order by importance with its largest safe share (§4.2), for the first analysed seed."""

    p, first = run.p, run.analysed()[0]
    ablation, table = first.ablation, first.effects
    ti = run.task_importance()
    curve = mp.curve_frame(first.sweeps[mp.BY_IMPORTANCE][0], mp.BY_IMPORTANCE, step=p.step)
    safe = mp.largest_safe_share(curve, ablation.baseline_score, p.tolerance)
    n_safe = int(curve.loc[np.isclose(curve["share_pruned"], safe), "n_pruned"].max()) if safe > 0 else 0
    shape = ablation.scores.shape
    return {
        "masking": {"task": p.task, "delta": np.asarray(ablation.delta, dtype=float),
                    "low": table["low"].to_numpy().reshape(shape), "high": table["high"].to_numpy().reshape(shape),
                    "n": int(table["n"].iloc[0]), "seed": first.seed, "learned": run.seeds().analysable},
        "importance": {t: np.asarray(v, dtype=float) for t, v in ti.by_task.items()},
        "main_task": p.task,
        "pruning": {"order": mp.pruning_order(first.importance), "safe_share": float(safe), "n_safe": n_safe,
                    "tolerance": float(p.tolerance), "step": float(p.step),
                    "first_step": int(curve["n_pruned"].iloc[1]) if len(curve) > 1 else 0},
        "skipped": ti.not_learned, "files": [run.data().dev.path, run.data().train.path, *ti.files],
    }


# --------------------------------------------------------------------------------------------- all of them


def _segment_key(p: Parameters) -> tuple:
    return (p.n_segments, p.max_tokens, p.seed)


def source_parameters(chapter_params, profile: str, model: str,
                      overrides: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Parameters]:
    """The resolved parameters of every chapter in :data:`SOURCE_CHAPTERS` for ``profile``, as those chapters
    ran: the atlas's ``model`` plus ``overrides[chapter]``. ``chapter_params`` is
    :func:`attnbook.chapters.params.chapter_params` (passed in: the atlas sits below the book machinery).
    An override for a chapter the atlas does not read raises :class:`~attnbook.core.errors.ParameterError`."""

    overrides = dict(overrides or {})
    unknown = set(overrides) - set(SOURCE_CHAPTERS)
    if unknown:
        raise ParameterError(f"chapter_overrides names {sorted(unknown)}; the atlas reads {', '.join(SOURCE_CHAPTERS)}")
    return {c: chapter_params(c, profile, {**overrides.get(c, {}), "model": model})
            for c in SOURCE_CHAPTERS}


def gather(chapter_params: Mapping[str, Parameters], recipe_for: Callable[[Parameters], dict]) -> Measurements:
    """Every source chapter's per-head measurements (see :class:`Measurements`).

    ``chapter_params`` maps each id of :data:`SOURCE_CHAPTERS` to that chapter's resolved parameters for the
    profile (a chapter left out is "not run"); ``recipe_for`` gives the GLUE chapters' fine-tuning recipe
    (:func:`attnbook.chapters.profiles.glue.recipe`), called with a chapter's parameters as chapters 4-6 call it.
    """

    p1 = chapter_params.get("01_clark_surface_patterns")
    model = next(iter(chapter_params.values())).model
    loaded = base_encoder(model)  # the same handle the GLUE chapters' calls below get: the model is loaded once
    m = Measurements(loaded.n_layers, loaded.n_heads, model=loaded.name)
    notes = m.notes
    ch1 = None
    if p1 is not None:
        ch1 = SurfacePipeline(loaded, p1)
        stats = ch1.statistics()
        m.data_files += ch1.data_files()
        m.surface = {k: np.asarray(stats[k], dtype=float) for k in SURFACE_KEYS}
        m.surface["uniform_entropy"] = float(stats["uniform_entropy"])
    else:
        notes["surface"] = "chapter 1 is not part of this profile"
    p2 = chapter_params.get("02_clark_probing")
    if p2 is not None:
        ch2 = ProbingPipeline(loaded, p2)
        m.syntax = syntax_arrays(ch2.syntax())
        run = ch2.coref()
        m.coref = {"accuracy": run.heads.accuracy("all"), "baseline": run.baselines["nearest"].accuracy("all"),
                   "n": int(run.heads.n["all"])}
        m.data_files += [ud_path(p2.syntax_split), *gum.split_files(p2.coref_split, p2.coref_max_docs)]
    else:
        notes["syntax"] = notes["coref"] = "chapter 2 is not part of this profile"
    p3 = chapter_params.get("03_clark_clustering")
    if p3 is not None:
        same = ch1 is not None and _segment_key(p1) == _segment_key(p3)  # chapters 1 and 3 draw the same segments
        ch3 = ClusteringPipeline(loaded, p3, ch1.segments() if same else None)
        m.distances = np.asarray(ch3.distances()["js_mean"])
        m.clusters = np.asarray(ch3.clusters().clustering.labels)
        m.behaviours = ch3.behaviours().behaviours
    else:
        notes["clusters"] = "chapter 3 is not part of this profile"
    base = None
    p4 = chapter_params.get("04_kovaleva_taxonomy")
    if p4 is not None:
        base = base_encoder(p4.model)
        k = kovaleva_patterns(TaxonomyPipeline(base, p4, recipe_for(p4)))
        m.patterns, m.pattern_classes, m.learned, m.framenet = k["counts"], k["classes"], k["learned"], k["framenet"]
        m.data_files += k["files"]
    else:
        notes["patterns"] = notes["framenet"] = "chapter 4 is not part of this profile"
    p5 = chapter_params.get("05_kovaleva_disabling")
    if p5 is not None:
        base = base or base_encoder(p5.model)
        m.disabling, why = kovaleva_disabling(DisablingPipeline(base, p5, recipe_for(p5)))
        for task, reason in why.items():
            notes[f"disabling/{task}"] = f"not swept in chapter 5: {reason}"
    else:
        notes["disabling"] = "chapter 5 is not part of this profile"
    p6 = chapter_params.get("06_michel_pruning")
    if p6 is not None:
        base = base or base_encoder(p6.model)
        mi = michel_heads(PruningPipeline(base, p6, recipe_for(p6)))
        m.masking, m.importance, m.main_task, m.pruning = mi["masking"], mi["importance"], mi["main_task"], mi["pruning"]
        if mi["skipped"]:
            notes["importance"] = "left out, not learned: " + "; ".join(mi["skipped"])
        if not mi["masking"]["learned"]:
            notes["masking"] = f"no seed's {mi['main_task']} classifier learned the task (chapter 6)"
        m.data_files += mi["files"]
    else:
        notes["importance"] = "chapter 6 is not part of this profile"
    m.data_files = [Path(f) for f in sorted({str(f) for f in m.data_files})]
    return m
