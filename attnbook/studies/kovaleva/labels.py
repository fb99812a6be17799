"""The book's labelled attention maps (Kovaleva et al. §4.1): the labelled set, its loading, the maps
regenerated from it, the blind review that labelled part of them, and a widget to label maps by hand.

The paper's ~400 hand-labelled maps were not released, so the book ships its own set,
``assets/pattern_labels.json``: identifiers of GLUE dev inputs, layer and head, from which the maps are
regenerated deterministically (:func:`load_pattern_labels`, :func:`labelled_maps`). Every map carries the
rule set's proposal (``proposed``, :func:`rule_proposals` recomputes it); the maps of a blind review
(:func:`review_sample`, sheets drawn by :func:`attnbook.studies.kovaleva.charts.review_sheet` without any class)
also carry the reviewer's label (``reviewed``) and whether it agrees with the proposal (``agrees``). Only
reviewed maps have a label a classifier may learn or be scored on (:func:`reviewed_maps`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import torch

from attnbook.core import cache
from attnbook.core.errors import EmptyDataError, MalformedInputError, ParameterError
from attnbook.core.heads import head_label
from attnbook.core.io import atomic_write_json
from attnbook.core.paths import PACKAGE_DIR
from attnbook.data.glue import task_path
from attnbook.engine.extract import Batch, stream_attention
from attnbook.engine.models import LoadedModel, load_encoder
from attnbook.stats import Estimate, proportion_interval
from attnbook.studies.kovaleva.charts import map_image, png_bytes
from attnbook.studies.kovaleva.cnn import learnable_classes, maps_to_images
from attnbook.studies.kovaleva.inputs import encode_text, read_glue_texts
from attnbook.studies.kovaleva.patterns import CLASS_INDEX, CLASSES, DEFAULT_RULES, classify_rules

#: where the book's labelled set lives
ASSETS = PACKAGE_DIR / "assets"
LABELS_FILE = ASSETS / "pattern_labels.json"


@dataclass(frozen=True)
class LabelledMap:
    """One map of the labelled set: where it comes from, the rule set's proposal and, for a map of the blind
    review, the reviewer's class (``reviewed``; ``None`` for a map nobody reviewed)."""

    task: str
    split: str
    row: int
    layer: int  # 0-based
    head: int  # 0-based
    proposed: str  # what the shipped rule set says (patterns.DEFAULT_RULES)
    reviewed: str | None = None  # the blind reviewer's class
    n_tokens: int | None = None  # encoded length, checked on regeneration

    @property
    def label(self) -> str:
        """The reviewed class; :class:`ParameterError` for a map that was not reviewed (it has no label)."""
        if self.reviewed is None:
            raise ParameterError(f"{self.task} row {self.row}, head {self.layer}-{self.head} (0-based) was not reviewed: "
                                 "it carries only the rules' proposal")
        return self.reviewed


_REQUIRED = ("task", "split", "row", "layer", "head", "proposed")


def sample_label_ids(
    tasks: Sequence[str], rows_per_task: int, heads_per_row: int, n_layers: int, n_heads: int, seed: int = 0,
    n_rows: dict[str, int] | None = None,
) -> list[tuple[str, int, int, int]]:
    """Seeded sample of ``(task, row, layer, head)``: ``rows_per_task`` dev rows per task, ``heads_per_row`` heads each."""
    rng = np.random.default_rng(seed)
    out = []
    for task in tasks:
        total = (n_rows or {}).get(task) or len(read_glue_texts(task))
        rows = sorted(rng.choice(total, size=min(rows_per_task, total), replace=False).tolist())
        for r in rows:
            for flat in sorted(rng.choice(n_layers * n_heads, size=heads_per_row, replace=False).tolist()):
                out.append((task, int(r), flat // n_heads, flat % n_heads))
    return out


def load_pattern_labels(path: Path | str | None = None) -> tuple[dict, list[LabelledMap]]:
    """The shipped labelled set: ``(header, maps)``; the header says how maps are regenerated and reviewed.

    Raises :class:`MalformedInputError` naming the entry when a class is not one of :data:`CLASSES`, a field
    is missing, or a reviewed map's ``agrees`` is not ``reviewed == proposed``.
    """
    path = Path(path) if path is not None else LABELS_FILE
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise MalformedInputError(path, exc.lineno, exc.msg) from exc
    if "maps" not in doc or "header" not in doc:
        raise MalformedInputError(path, None, "a labels file has 'header' and 'maps'")
    out = []
    for i, entry in enumerate(doc["maps"]):
        missing = [k for k in _REQUIRED if k not in entry]
        if missing:
            raise MalformedInputError(path, None, f"map entry {i} lacks field(s) {', '.join(missing)}")
        item = LabelledMap(**{k: entry[k] for k in LabelledMap.__dataclass_fields__ if k in entry})
        for name in (item.reviewed, item.proposed):
            if name is not None and name not in CLASS_INDEX:
                raise MalformedInputError(path, None, f"map entry {i} has unknown class {name!r}")
        if item.reviewed is not None and entry.get("agrees") != (item.reviewed == item.proposed):
            raise MalformedInputError(path, None, f"map entry {i}: 'agrees' must say whether reviewed == proposed")
        out.append(item)
    return doc["header"], out


def labels_describe(loaded, header: dict) -> bool:
    """Whether the labels of a labels file (its ``header``) were made on maps of ``loaded``'s weights."""
    made_on = header.get("model", {}).get("fingerprint")
    return not made_on or loaded.fingerprint == made_on


def label_model(loaded, header: dict):
    """The model whose maps the labels describe, and what using them on ``loaded`` means:
    ``(loaded, "")`` when the labels were made on ``loaded``'s maps; else ``(the embedded model, note)``, where the
    note (Markdown) says that a pattern classifier learned from those labels is *transferred* to ``loaded``'s maps
    untested, so its F1 and the pattern shares it gives are not comparable with the paper's. Labels made on a model
    that is neither raise :class:`ParameterError` naming the fix."""

    if labels_describe(loaded, header):
        return loaded, ""
    made_on = header.get("model", {})
    embedded = load_encoder("embedded", device=loaded.device)
    if embedded.fingerprint != made_on.get("fingerprint"):
        raise ParameterError(
            f"the labels were made on {made_on.get('name')} (weights {made_on.get('fingerprint')}), which is neither "
            f"{loaded.name} nor the embedded model: regenerate the maps with that model, or label {loaded.name}'s maps "
            "with labels.annotation_widget")
    note = (f"**The pattern labels describe another model.** The book's labelled maps are maps of {embedded.name}; "
            f"this run's model is {loaded.name}, for which the book has no labels. The classifiers below therefore "
            f"learn the classes from {embedded.name}'s labelled maps and are *applied* to {loaded.name}'s maps: a "
            "transfer between models that no label checks. Their F1 describes the labelled maps, not this model's, and "
            "the pattern shares they give are not comparable with the paper's (the comparison rows say so). To "
            f"measure them, label {loaded.name}'s maps with the annotation widget at the end of the chapter and train "
            "on that file.")
    return embedded, note


def labelled_maps(loaded, labels: Sequence[LabelledMap], *, max_tokens: int = 128, batch_size: int = 16,
                  header: dict | None = None) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """Regenerate the maps: ``(maps, segment_ids, class indices)`` in the order of ``labels``; the class is
    the reviewed one, -1 for a map that was not reviewed (give :func:`reviewed_maps` to learn from labels).

    Each distinct (task, split, row) is encoded with :func:`encode_text` and run once. An
    input whose encoded length differs from the recorded ``n_tokens`` raises
    :class:`MalformedInputError` (the data or the tokenizer changed). With the file's
    ``header``, a model other than the one the labels were made on raises :class:`ParameterError`: the labels
    describe that model's maps, not this one's (:func:`label_model` gives the model to regenerate them with).
    """

    if header is not None and not labels_describe(loaded, header):
        raise ParameterError(
            f"the labels were made on maps of {header['model'].get('name')} (weights "
            f"{header['model'].get('fingerprint')}); {loaded.name} ({loaded.fingerprint}) has other maps. Regenerate the "
            "labelled maps with the model the labels describe (labels.label_model), or label this model's maps with "
            "labels.annotation_widget and load that file")
    keys = sorted({(m.task, m.split, m.row) for m in labels})
    texts = {}
    for task, split in sorted({(t, s) for t, s, _ in keys}):
        texts[(task, split)] = read_glue_texts(task, split)
    examples = [encode_text(loaded.tokenizer, *texts[(t, s)][r], max_tokens=max_tokens, meta={"key": (t, s, r)})
                for t, s, r in keys]
    lengths = {ex.meta["key"]: len(ex) for ex in examples}
    wanted: dict[tuple, list[int]] = {}
    for i, m in enumerate(labels):
        key = (m.task, m.split, m.row)
        if m.n_tokens is not None and lengths[key] != m.n_tokens:
            raise MalformedInputError(
                LABELS_FILE, None,
                f"{m.task} {m.split} row {m.row} encodes to {lengths[key]} tokens, the label was made on "
                f"{m.n_tokens}: the GLUE file or the tokenizer differs from the ones the labels were made with")
        wanted.setdefault(key, []).append(i)
    maps: list[np.ndarray | None] = [None] * len(labels)
    segs: list[np.ndarray | None] = [None] * len(labels)

    class _Pick:
        def update(self, attn: torch.Tensor, batch: Batch) -> None:
            for b, ex in enumerate(batch.examples):
                n = int(batch.lengths[b])
                for i in wanted[ex.meta["key"]]:
                    maps[i] = attn[b, labels[i].layer, labels[i].head, :n, :n].numpy().copy()
                    segs[i] = np.asarray(ex.token_type_ids, dtype=np.int64)

        def result(self) -> None:
            return None

    stream_attention(loaded, examples, [_Pick()], batch_size=batch_size, progress=False)
    y = np.array([CLASS_INDEX[m.reviewed] if m.reviewed is not None else -1 for m in labels], dtype=np.int64)
    return maps, segs, y  # type: ignore[return-value]


def source_files(labels: Sequence[LabelledMap]) -> list[Path]:
    """The GLUE files the labelled maps are regenerated from (one per task and split, sorted), for the provenance."""

    return [task_path(task, split) for task, split in sorted({(m.task, m.split) for m in labels})]


def proposed_classes(labels: Sequence[LabelledMap]) -> np.ndarray:
    """Class index of each map's proposal by the shipped rule set (the ``proposed`` field)."""
    return np.array([CLASS_INDEX[m.proposed] for m in labels])


def reviewed_maps(labels: Sequence[LabelledMap]) -> list[LabelledMap]:
    """The maps of the blind review (those with a ``reviewed`` class), in file order."""
    out = [m for m in labels if m.reviewed is not None]
    if not out:
        raise EmptyDataError("no map of the labelled set was reviewed")
    return out


def rule_proposals(maps: Sequence[np.ndarray], segments: Sequence[np.ndarray], rules=None) -> list[str]:
    """The rule set's class of each regenerated map (:func:`attnbook.studies.kovaleva.patterns.classify_rules`):
    what the file's ``proposed`` field must say."""

    return [classify_rules(m, s, rules or DEFAULT_RULES) for m, s in zip(maps, segments)]


def review_sample(labels: Sequence[LabelledMap], per_task: int, seed: int) -> list[int]:
    """Indices into ``labels`` of a blind review: ``per_task`` maps drawn without replacement from each task's
    maps (tasks in sorted order, seeded), then shuffled together so one sheet mixes tasks. The order is the
    review order (:func:`attnbook.studies.kovaleva.charts.review_sheet` draws 25 maps per sheet)."""
    rng = np.random.default_rng(seed)
    picked: list[int] = []
    for task in sorted({m.task for m in labels}):
        idx = [i for i, m in enumerate(labels) if m.task == task]
        if len(idx) < per_task:
            raise ParameterError(f"{task} has {len(idx)} maps, fewer than {per_task}")
        picked += sorted(rng.choice(idx, size=per_task, replace=False).tolist())
    order = rng.permutation(len(picked))
    return [int(picked[i]) for i in order]


def agreement(labels: Sequence[LabelledMap]) -> dict:
    """How often the rule set's proposal equals the reviewed class, over the reviewed maps: ``k``, ``n``, the
    share and its exact (Clopper-Pearson) 95% interval over maps, and ``confusion[reviewed, proposed]``."""

    rev = reviewed_maps(labels)
    k = sum(m.reviewed == m.proposed for m in rev)
    low, high = proportion_interval(k, len(rev))
    conf = np.zeros((len(CLASSES), len(CLASSES)), dtype=np.int64)
    for m in rev:
        conf[CLASS_INDEX[m.reviewed], CLASS_INDEX[m.proposed]] += 1
    return {"k": int(k), "n": len(rev), "share": k / len(rev), "low": low, "high": high, "confusion": conf}


def map_description(map_id: Mapping) -> str:
    """How the labelling tool names a map to a reader: its fields, with a 0-based ``layer`` and ``head`` shown as
    the papers' 1-based head label (``{"task": "RTE", "row": 3, "layer": 7, "head": 9}`` -> ``RTE, row 3, head
    8-10``)."""

    rest = {k: v for k, v in map_id.items() if k not in ("layer", "head")}
    parts = [str(rest.pop("task"))] if "task" in rest else []
    parts += [f"{k} {v}" for k, v in rest.items()]
    if "layer" in map_id and "head" in map_id:
        parts.append(f"head {head_label(int(map_id['layer']), int(map_id['head']))}")
    return ", ".join(parts)


def annotation_widget(
    maps: Sequence[np.ndarray],
    ids: Sequence[dict],
    out_path: Path | str,
    *,
    proposed: Sequence[int] | None = None,
    size: int = 256,
):
    """An ipywidgets tool for labelling maps by hand (a seminar exercise on §4.1).

    Shows one map at a time as a picture, with one button per class, plus Back and Skip.
    Every click writes all labels so far to ``out_path`` (JSON, atomically): ``{"maps":
    [{...id fields..., "label": class}]}``; labels already in the file are loaded first,
    so a session can be resumed. ``ids[i]`` identifies map ``i`` (e.g. task, row, layer,
    head); ``proposed`` (class indices) pre-highlights a suggestion. Returns the widget
    (a ``VBox``); ``widget.state`` exposes ``index`` and ``labels`` for scripting.
    """
    import ipywidgets as widgets


    if len(maps) != len(ids):
        raise ParameterError(f"{len(maps)} maps but {len(ids)} ids")
    if not maps:
        raise EmptyDataError("no maps to annotate")
    out_path = Path(out_path)
    keys = [json.dumps(d, sort_keys=True) for d in ids]
    labels: dict[str, str] = {}
    if out_path.exists():
        for entry in json.loads(out_path.read_text()).get("maps", []):
            e = dict(entry)
            label = e.pop("label")
            labels[json.dumps(e, sort_keys=True)] = label
    state = {"index": next((i for i, k in enumerate(keys) if k not in labels), 0), "labels": labels}

    image = widgets.Image(format="png", width=size, height=size)
    info = widgets.HTML()
    buttons = [widgets.Button(description=name, layout=widgets.Layout(width="150px")) for name in CLASSES]
    back = widgets.Button(description="◀ Back")
    skip = widgets.Button(description="Skip ▶")

    def save() -> None:
        entries = [dict(ids[i], label=labels[k]) for i, k in enumerate(keys) if k in labels]
        atomic_write_json(out_path, {"classes": list(CLASSES), "maps": entries})

    def show() -> None:
        i = state["index"]
        if i >= len(maps):
            info.value = f"<b>done</b>: {sum(k in labels for k in keys)} of {len(maps)} maps labelled -> {out_path}"
            return
        image.value = png_bytes(map_image(maps[i], size))
        current = labels.get(keys[i])
        hint = CLASSES[int(proposed[i])] if proposed is not None else None
        for b, name in zip(buttons, CLASSES):
            b.button_style = "success" if name == current else ("info" if name == hint else "")
        info.value = (f"map {i + 1} of {len(maps)}: {map_description(ids[i])}<br>"
                      f"label: <b>{current or '-'}</b>" + (f" (suggested: {hint})" if hint else ""))

    def choose(name: str):
        def handler(_button=None) -> None:
            i = state["index"]
            if i < len(maps):
                labels[keys[i]] = name
                save()
                state["index"] = i + 1
            show()

        return handler

    for b, name in zip(buttons, CLASSES):
        b.on_click(choose(name))

    def go(step: int):
        def handler(_button=None) -> None:
            state["index"] = min(max(0, state["index"] + step), len(maps))
            show()

        return handler

    back.on_click(go(-1))
    skip.on_click(go(+1))
    show()
    box = widgets.VBox([info, image, widgets.HBox(buttons), widgets.HBox([back, skip])])
    box.state = state  # type: ignore[attr-defined]
    box.buttons = dict(zip(CLASSES, buttons))  # type: ignore[attr-defined]
    return box


def class_share(labels: Sequence[LabelledMap], name: str):
    """The share of the reviewed maps whose class is ``name``, with its exact (Clopper-Pearson) 95% interval over
    the reviewed maps (an :class:`~attnbook.stats.Estimate`)."""

    rev = reviewed_maps(labels)
    k = sum(m.reviewed == name for m in rev)
    low, high = proportion_interval(k, len(rev))
    return Estimate(k / len(rev), low, high, len(rev), "reviewed maps")


def review_markdown(header: dict, labels: Sequence[LabelledMap]) -> str:
    """What the labelled set is, from the file's header and the maps: how many maps, how many were reviewed
    blind, by whom, when and how they were sampled, the reviewed classes, and the rule set's agreement with the
    review (:func:`agreement`) with its exact interval and the most frequent disagreements."""
    review = header.get("review") or {}
    rev = [m for m in labels if m.reviewed is not None]
    if not rev:
        return (f"The file holds {len(labels)} maps with the rule set's proposals and **no reviewed label**: the "
                "proposals are a rule's output, so a classifier trained on them reproduces the rule.")
    agr = agreement(labels)
    counts = {c: sum(m.reviewed == c for m in rev) for c in CLASSES}
    pairs: dict[tuple[str, str], int] = {}
    for m in rev:
        if m.reviewed != m.proposed:
            pairs[(m.reviewed, m.proposed)] = pairs.get((m.reviewed, m.proposed), 0) + 1
    top = sorted(pairs.items(), key=lambda x: -x[1])[:3]
    return (
        f"The file holds {len(labels)} maps, each with the rule set's proposal. **{len(rev)} were reviewed blind** "
        f"({review.get('who', 'reviewer not recorded')}): {review.get('sample', '').split('): ', 1)[-1]}. Each sheet "
        "showed the maps "
        "without any class and without the rule set's proposals, which were computed only after the reviewer's class "
        "was written down. The other "
        f"{len(labels) - len(rev)} maps carry only the proposal and are not used below. Reviewed classes: "
        + ", ".join(f"{c} {n}" for c, n in counts.items()) + ". "
        f"**The rule set agrees with the review on {agr['k']} of {agr['n']} maps** "
        f"({agr['share']:.2f}, exact 95% interval [{agr['low']:.2f}, {agr['high']:.2f}] over maps)"
        + ("; most disagreements: " + ", ".join(f"reviewed {a}, proposed {b} ({n})" for (a, b), n in top)
           if top else "") + "."
    )


def learnable_subset(maps: Sequence[np.ndarray], segments: Sequence[np.ndarray], y: np.ndarray, labels: Sequence[LabelledMap],
                     k: int) -> dict:
    """The reviewed maps a ``k``-fold cross-validation can learn from (:func:`attnbook.studies.kovaleva.cnn.
    learnable_classes`: unreviewed maps, ``y == -1``, and classes with fewer than ``k`` maps are left out):
    ``maps``, ``segments``, ``y``, ``proposed`` (the rule set's classes of the same maps), ``index`` (into the
    full set) and ``note`` (what was left out and why)."""

    keep, note = learnable_classes(np.asarray(y), k)
    idx = np.flatnonzero(keep)
    return {"maps": [maps[i] for i in idx], "segments": [segments[i] for i in idx], "y": np.asarray(y)[idx],
            "proposed": proposed_classes([labels[i] for i in idx]), "index": idx, "note": note}


@cache.memoized("pattern_images", depends=[
    "attnbook.core.cache", "attnbook.core.code_keys", "attnbook.core.errors", "attnbook.core.io",
    "attnbook.core.memory", "attnbook.core.paths", "attnbook.data.fetch_status", "attnbook.data.glue", "attnbook.data.hf",
    "attnbook.data.models_fetch", "attnbook.data.registry",
    "attnbook.engine.extract", "attnbook.engine.families", "attnbook.engine.inputs", "attnbook.engine.layers",
    "attnbook.engine.models", "attnbook.studies.kovaleva.cnn", "attnbook.studies.kovaleva.inputs",
    "attnbook.studies.kovaleva.patterns"])
def pattern_images(label_model: LoadedModel, header: dict, labels: list, folds: int, size: int) -> dict[str, np.ndarray]:
    """The pattern CNN's training images and classes: the learnable labelled maps (:func:`labelled_maps`,
    :func:`learnable_subset`) as ``size`` x ``size`` images (:func:`maps_to_images`)."""
    maps, segs, y = labelled_maps(label_model, labels, header=header)
    learn = learnable_subset(maps, segs, y, labels, folds)
    return {"images": maps_to_images(learn["maps"], size=size).numpy(), "y": np.asarray(learn["y"])}
