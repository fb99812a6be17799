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
import torch

from attnbook.core import cache
from attnbook.core.errors import ParameterError
from attnbook.data import framenet as framenet_data
from attnbook.data import gum
from attnbook.data.conllu import load_ud, ud_path
from attnbook.data.wiki import source_files
from attnbook.engine import sweeps
from attnbook.engine.finetune import DEV_SAMPLE_SEED, base_encoder
from attnbook.engine.scores import accuracy_points
from attnbook.studies.clark import clusters, coref, distances, surface, syntax
from attnbook.studies.clark.segments import clark_segments
from attnbook.studies.heads_off import effects as headstudy
from attnbook.studies.heads_off.effects import classifier
from attnbook.studies.kovaleva import cnn, disabling, framenet, table1, taxonomy
from attnbook.studies.kovaleva import labels as labelled
from attnbook.studies.kovaleva.inputs import dev_inputs
from attnbook.studies.kovaleva.patterns import CLASSES
from attnbook.studies.michel import importance as imp
from attnbook.studies.michel import pruning as mp
from attnbook.studies.michel import runs as michel_seeds

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


def clark_surface(loaded, p: Mapping[str, Any]) -> tuple[dict, list]:
    """Chapter 1's :func:`attnbook.studies.clark.surface.surface_statistics` on its segments; also the segments."""

    segments = clark_segments(loaded.tokenizer, p["n_segments"], p["max_tokens"], seed=p["seed"])
    stats = surface.surface_statistics(loaded, segments, batch_size=p["batch_size"])
    return stats, segments


def clark_syntax(loaded, p: Mapping[str, Any]):
    """Chapter 2's :func:`attnbook.studies.clark.syntax.evaluate_heads` (Clark §4.2) and its UD sentences' file."""

    dev = load_ud(p["syntax_split"], p["syntax_sentences"])
    acc = syntax.evaluate_heads(loaded, dev, max_tokens=p["max_tokens"], batch_size=p["batch_size"],
                                exclude_punct=p["exclude_punct"])
    return acc, [ud_path(p["syntax_split"])]


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


def clark_coref(loaded, p: Mapping[str, Any]) -> tuple[dict, list]:
    """Chapter 2's :func:`attnbook.studies.clark.coref.evaluate_heads` (Clark §4.3) and the nearest-mention baseline."""

    docs = gum.load_split(p["coref_split"], p["coref_max_docs"])
    wins = coref.windows(docs, loaded.tokenizer, p["coref_max_tokens"], first_only=p["coref_first_only"])
    heads = coref.evaluate_heads(loaded, wins, p["coref_batch_size"])
    base = coref.baselines(wins)["nearest"]
    return ({"accuracy": heads.accuracy("all"), "baseline": base.accuracy("all"), "n": int(heads.n["all"])},
            list(gum.split_files(p["coref_split"], p["coref_max_docs"])))


def clark_clusters(loaded, p: Mapping[str, Any], segments: list | None = None) -> dict:
    """Chapter 3's distances, clusters and behaviours (Clark §6), from chapter 3's own calls. ``segments``: chapter
    3's segments when the caller has them already (chapter 1's, drawn with the same size, length and seed)."""

    L, H = loaded.n_layers, loaded.n_heads
    if segments is None:
        segments = clark_segments(loaded.tokenizer, p["n_segments"], p["max_tokens"], seed=p["seed"])
    arrays = distances.measure_head_distances(
        loaded, segments, smoothing=p["smoothing"], query_fraction=p["query_fraction"], seed=p["seed"],
        batch_size=p["batch_size"])
    D = arrays["js_mean"]
    stats = surface.surface_statistics(loaded, segments, batch_size=p["batch_size"])
    ud = load_ud(p["syntax_split"], p["syntax_sentences"])
    accuracy = syntax.evaluate_heads(loaded, ud, max_tokens=p["syntax_max_tokens"], batch_size=p["syntax_batch_size"],
                                     exclude_punct=p["exclude_punct"], progress=False)
    best = clusters.syntax_best_heads(accuracy, margin=p["syntax_margin"])
    behaviours = clusters.head_behaviours(stats, best, threshold=p["behaviour_threshold"],
                                          broad_quantile=p["broad_quantile"])
    clustering, _ = clusters.choose_clusters(D, L, H, n_clusters=p["n_clusters"], k_range=p["k_range"])
    return {"distances": np.asarray(D), "clusters": np.asarray(clustering.labels), "behaviours": behaviours}


def framenet_scores(base, instances, *, direction: str, batch_size: int) -> dict:
    """Chapter 4's :func:`attnbook.studies.kovaleva.framenet.frame_link_scores` (cached: read back after chapter 4)."""
    return framenet.frame_link_scores(base, list(instances), direction=direction, batch_size=batch_size)


@cache.memoized("atlas-cnn-images")
def cnn_image_arrays(label_base, header: dict, labels: list, folds: int, size: int) -> dict[str, np.ndarray]:
    """The CNN's images and classes of the labelled maps chapter 4 learns from, cached by the labels' model, the
    labels, the folds and the image size (chapter 4 does not keep the maps; the atlas regenerates them at most
    once)."""
    lab_maps, lab_segs, y = labelled.labelled_maps(label_base, labels, header=header)
    learn = labelled.learnable_subset(lab_maps, lab_segs, y, labels, folds)
    return {"images": cnn.maps_to_images(learn["maps"], size=size).numpy(), "y": np.asarray(learn["y"])}


def cnn_training_images(base, p: Mapping[str, Any]) -> dict:
    """The labelled maps chapter 4 trains its pattern CNN on, as the CNN's images and classes (chapter 4's
    :func:`~attnbook.studies.kovaleva.labels.labelled_maps`, :func:`~attnbook.studies.kovaleva.labels.learnable_subset`
    and :func:`~attnbook.studies.kovaleva.cnn.maps_to_images`; :func:`cnn_image_arrays`)."""
    header, labels = labelled.load_pattern_labels()
    label_base, _ = labelled.label_model(base, header)
    arrays = cnn_image_arrays(label_base, header, list(labels), int(p["cv_folds"]), int(p["cnn_size"]))
    return {"images": torch.as_tensor(arrays["images"]), "y": np.asarray(arrays["y"])}


def kovaleva_patterns(base, p: Mapping[str, Any], recipe: Mapping[str, Any]) -> dict:
    """Chapter 4's per-head pattern counts (Kovaleva §4.1, the CNN's labels) for the pre-trained encoder (summed
    over the tasks' inputs) and each fine-tuned classifier, its FrameNet heads (§4.2) and whether each task's
    classifier learned it."""

    seed = p["seed"]
    training = cnn_training_images(base, p)
    pattern_cnn = cnn.trained_cnn(training["images"], training["y"], seed=seed, epochs=p["cnn_epochs"])
    counts: dict[str, np.ndarray] = {"pre-trained": 0}
    learned: dict[str, bool] = {}
    for task in p["tasks"]:
        clf = classifier(base, task, dict(recipe), seed)
        # chapter 4's verdict: Table 1's cached dev outputs of this classifier, judged by the same rule
        outputs = table1.seed_outputs(clf, task, recipe, p["dev_caps"])
        learned[task] = not table1.seed_learned_reason(task, outputs, n_resamples=p["n_resamples"])
        inputs = dev_inputs(base.tokenizer, task, p["n_examples"], seed=seed, max_tokens=p["max_tokens"])
        ft = taxonomy.pattern_shares(clf, inputs, pattern_cnn, batch_size=p["batch_size"])
        pre = taxonomy.pattern_shares(base, inputs, pattern_cnn, batch_size=p["batch_size"])
        counts[task] = np.asarray(ft["cnn"]["counts"])
        counts["pre-trained"] = counts["pre-trained"] + np.asarray(pre["cnn"]["counts"])
    if not p["tasks"]:
        counts = {}
    instances = framenet_data.load_fulltext()
    kept, _ = framenet.FrameFilter().apply(instances)
    scores = framenet_scores(base, kept, direction=p["direction"], batch_size=p["batch_size"])
    fheads = framenet.frame_heads(scores["scores"], percentile=p["percentile"], control=scores["control"])
    return {"counts": counts or None, "classes": tuple(CLASSES), "learned": learned,
            "framenet": {"mean": np.asarray(fheads["mean"]), "heads": [(int(l), int(h)) for l, h, _ in fheads["heads"]],
                         "percentile": float(p["percentile"])},
            "files": list(framenet_data.fulltext_files())}


def kovaleva_disabling(base, p: Mapping[str, Any], recipe: Mapping[str, Any]) -> tuple[dict, dict]:
    """Chapter 5's single-head disabling sweeps (Kovaleva §4.6) of each task's primary classifier (the first
    learned seed, as the chapter's figures), with paired 95% intervals over the swept dev examples; and the
    reason for each task left out."""

    classifiers = {(t, s): headstudy.classifier(base, t, dict(recipe), s)
                   for t in p["tasks"] for s in p["seeds"]}
    _, learned = disabling.dev_baselines(classifiers, max_length=recipe["max_length"], n_resamples=p["n_resamples"],
                                         seed=p["seed"], caps=p["eval_caps"])
    runs = disabling.runs_to_sweep(learned, include_unlearned=p["analyse_unlearned"])
    main = disabling.primary_runs(runs, p["tasks"], learned)
    out, why = {}, {}
    for task in p["tasks"]:
        if task not in main:
            why[task] = "; ".join(f"seed {s}: {learned[(task, s)]}" for s in p["seeds"] if learned.get((task, s)))
            continue
        k = main[task]
        _, batches = headstudy.task_data(classifiers[k].tokenizer, task, "dev", disabling.dev_cap(p["dev_caps"], task),
                                         DEV_SAMPLE_SEED, batch_size=p["batch_size"], max_length=recipe["max_length"])
        single = headstudy.switched_off(classifiers[k], batches, "single_heads", "disable", sweeps.task_score_fn(task))
        table, _ = headstudy.effect_intervals(single, task, n_resamples=p["n_resamples"], seed=p["seed"])
        shape = single.scores.shape
        out[task] = {"delta": np.asarray(single.delta, dtype=float), "low": table["low"].to_numpy().reshape(shape),
                     "high": table["high"].to_numpy().reshape(shape), "n": int(table["n"].iloc[0]), "seed": int(k[1]),
                     "learned": not learned.get(k)}
    return out, why


def michel_heads(base, p: Mapping[str, Any], recipe: Mapping[str, Any]) -> dict:
    """Chapter 6's masking effects (Michel §3.2), importance scores on the main and agreement tasks (§4.1) and the
    pruning order by importance with its largest safe share (§4.2), for the first analysed seed."""

    task = p["task"]
    batching = dict(batch_size=p["batch_size"], max_length=recipe["max_length"])
    runs = michel_seeds.classifiers(base, task, recipe, p["seeds"])
    todo, analysable = michel_seeds.analysed(runs)
    first = todo[0]
    clf = first.classifier
    dev, dev_b = headstudy.task_data(base.tokenizer, task, "dev", p["dev_cap"], DEV_SAMPLE_SEED, **batching)
    train, imp_b = headstudy.task_data(base.tokenizer, task, "train", p["importance_cap"], p["seed"] + 1, **batching)
    ablation = headstudy.switched_off(clf, dev_b, "single_heads", "mask", accuracy_points)
    table, _ = headstudy.effect_intervals(ablation, task, n_resamples=p["n_resamples"], seed=p["seed"])
    I = imp.importance_of(clf, imp_b)
    agree, skipped = michel_seeds.agreement_tasks(base, p["agreement_tasks"], recipe, first.seed, known=[task])
    by_task, files = imp.importance_by_task(base, agree, recipe, first.seed, cap=p["importance_cap"],
                                            data_seed=p["seed"] + 1, known={task: I}, **batching)
    sweep = mp.pruning_sweep(clf, dev_b, I, accuracy_points, step=p["step"])
    curve = mp.curve_frame(sweep, mp.BY_IMPORTANCE, step=p["step"])
    safe = mp.largest_safe_share(curve, ablation.baseline_score, p["tolerance"])
    n_safe = int(curve.loc[np.isclose(curve["share_pruned"], safe), "n_pruned"].max()) if safe > 0 else 0
    shape = ablation.scores.shape
    return {
        "masking": {"task": task, "delta": np.asarray(ablation.delta, dtype=float),
                    "low": table["low"].to_numpy().reshape(shape), "high": table["high"].to_numpy().reshape(shape),
                    "n": int(table["n"].iloc[0]), "seed": first.seed, "learned": analysable},
        "importance": {t: np.asarray(v, dtype=float) for t, v in by_task.items()},
        "main_task": task,
        "pruning": {"order": mp.pruning_order(I), "safe_share": float(safe), "n_safe": n_safe,
                    "tolerance": float(p["tolerance"]), "step": float(p["step"]),
                    "first_step": int(curve["n_pruned"].iloc[1]) if len(curve) > 1 else 0},
        "skipped": skipped, "files": [dev.path, train.path, *files],
    }


# --------------------------------------------------------------------------------------------- all of them


def _segment_key(p: Mapping[str, Any]) -> tuple:
    return (p["n_segments"], p["max_tokens"], p["seed"])


def source_parameters(chapter_params, profile: str, model: str,
                      overrides: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
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


def gather(chapter_params: Mapping[str, Mapping[str, Any]], recipe_for: Callable[[Mapping[str, Any]], dict]) -> Measurements:
    """Every source chapter's per-head measurements (see :class:`Measurements`).

    ``chapter_params`` maps each id of :data:`SOURCE_CHAPTERS` to that chapter's resolved parameters for the
    profile (a chapter left out is "not run"); ``recipe_for`` gives the GLUE chapters' fine-tuning recipe
    (:func:`attnbook.chapters.profiles.glue.recipe`), called with a chapter's parameters as chapters 4-6 call it.
    """

    p1 = chapter_params.get("01_clark_surface_patterns")
    model = next(iter(chapter_params.values()))["model"]
    loaded = base_encoder(model)  # the same handle the GLUE chapters' calls below get: the model is loaded once
    m = Measurements(loaded.n_layers, loaded.n_heads, model=loaded.name)
    notes = m.notes
    segments: dict[tuple, list] = {}  # chapters 1 and 3 draw the same segments when their sizes and seeds agree
    if p1 is not None:
        stats, segments[_segment_key(p1)] = clark_surface(loaded, p1)

        m.data_files += list(source_files())
        m.surface = {k: np.asarray(stats[k], dtype=float) for k in SURFACE_KEYS}
        m.surface["uniform_entropy"] = float(stats["uniform_entropy"])
    else:
        notes["surface"] = "chapter 1 is not part of this profile"
    p2 = chapter_params.get("02_clark_probing")
    if p2 is not None:
        acc, files = clark_syntax(loaded, p2)
        m.syntax = syntax_arrays(acc)
        m.coref, more = clark_coref(loaded, p2)
        m.data_files += files + more
    else:
        notes["syntax"] = notes["coref"] = "chapter 2 is not part of this profile"
    p3 = chapter_params.get("03_clark_clustering")
    if p3 is not None:
        c = clark_clusters(loaded, p3, segments.get(_segment_key(p3)))
        m.distances, m.clusters, m.behaviours = c["distances"], c["clusters"], c["behaviours"]
    else:
        notes["clusters"] = "chapter 3 is not part of this profile"
    base = None
    p4 = chapter_params.get("04_kovaleva_taxonomy")
    if p4 is not None:
        base = base_encoder(p4["model"])
        recipe = recipe_for(p4)
        k = kovaleva_patterns(base, p4, recipe)
        m.patterns, m.pattern_classes, m.learned, m.framenet = k["counts"], k["classes"], k["learned"], k["framenet"]
        m.data_files += k["files"]
    else:
        notes["patterns"] = notes["framenet"] = "chapter 4 is not part of this profile"
    p5 = chapter_params.get("05_kovaleva_disabling")
    if p5 is not None:
        base = base or base_encoder(p5["model"])
        recipe = recipe_for(p5)
        m.disabling, why = kovaleva_disabling(base, p5, recipe)
        for task, reason in why.items():
            notes[f"disabling/{task}"] = f"not swept in chapter 5: {reason}"
    else:
        notes["disabling"] = "chapter 5 is not part of this profile"
    p6 = chapter_params.get("06_michel_pruning")
    if p6 is not None:
        base = base or base_encoder(p6["model"])
        recipe = recipe_for(p6)
        mi = michel_heads(base, p6, recipe)
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
