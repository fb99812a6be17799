"""``attnbook plan``: what a profile will cost on this machine, before running it.

For every chapter the plan lists the model work the chapter's parameters imply (:func:`chapter_work`): encoder
forward passes with attention maps, fine-tuning steps (forward and backward), gradient passes, the MLM head's
vocabulary projections and chapter 3's pairwise head divergences, each as an amount of floating-point operations
(or of logarithms) computed from the model's shape (:func:`model_shape`, read from its config, so a paper-profile
plan needs no weights) and the data sizes (:func:`data_sizes`: the local files' lengths, the standard sizes of
the GLUE files that are not here). :func:`measure_rates` then times each kind of work for a few seconds on this
machine (a random model of the same shape), and the plan divides. Everything is from an empty cache, in book
order, with each fine-tuned classifier trained once (chapters 4-6 share them).

What the estimate leaves out is said in :data:`LEFT_OUT`; ``make bench`` writes the quick profile's estimate beside
the measured chapter times (benchmarks/results), so its error is on record.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

#: mean word pieces per input (bert-base-uncased WordPiece, up to 128), measured once on this book's local files:
#: GLUE training files on a seeded sample of 500 rows, dev files on their first 500 rows, UD EWT on its first 1,000
#: training sentences, ARCT on its first 300 training items (claim + reason + warrant, and the warrant alone).
#: Assumptions, not measured: QNLI train (its dev value), MNLI and QQP (files not local), ARCT's RW and CW inputs.
PIECES_TRAIN = {"SST-2": 13.0, "MRPC": 53.5, "STS-B": 27.7, "RTE": 68.2, "QNLI": 52.2, "MNLI-m": 40.0, "QQP": 30.0}
PIECES_DEV = {"SST-2": 25.2, "MRPC": 53.2, "STS-B": 21.7, "RTE": 64.6, "QNLI": 52.2, "MNLI-m": 40.0, "MNLI-mm": 40.0,
              "QQP": 30.0}
#: random (not length-grouped) training batches pad every sequence to the batch's longest: measured on ARCT's
#: training pairs (capped at 64 pieces), the longest of 16 random sequences is 1.49 times the mean length
PAD_RANDOM = 1.49
PIECES = {"wiki_fill": 0.85, "ud": 27.3, "arct_full": 35.3, "arct_W": 12.8, "arct_RW": 30.0, "arct_CW": 30.0}
# wiki_fill: WikiText-2 segments fill 85% of max_tokens (chapter 1's results: 109 of 128 pieces on average)

#: examples in the GLUE files (train, dev); local files are counted, these fill in for the ones that are not here
GLUE_SIZES = {"SST-2": (67349, 872), "MRPC": (3668, 408), "STS-B": (5749, 1500), "RTE": (2490, 277),
              "QNLI": (104743, 5463), "MNLI-m": (392702, 9815), "MNLI-mm": (392702, 9832), "QQP": (363846, 40430)}
ARCT_SIZES = {"train": 1210, "dev": 316, "test": 444, "train_adv": 2420, "dev_adv": 632, "test_adv": 888}
UD_SIZES = {"train": 12544, "dev": 2001}
GUM_WINDOWS_PER_DOC = 9.2  # GUM dev: 277 windows of whole sentences <= 128 pieces over 30 documents
GUM_DOCS = 30

#: what the estimate does not count (said with every plan)
LEFT_OUT = ("bootstrap and permutation statistics, spaCy tagging, reading data files other than FrameNet's XML, "
            "cache keys and cache reads, chapter 7's word models, chart rendering, and a shared machine's "
            "contention; each chapter gets a fixed start-up cost measured on the spot (papermill executing chapter "
            "1's opening cells: imports, parameters, model)")

KINDS = ("forward", "train", "train_bf16", "train_bf16_1", "train_1", "backprop", "vocab", "pairs", "probe", "probe_step",
         "encode", "parse", "load", "startup")


@dataclass(frozen=True)
class Shape:
    """What the cost of a BERT-style encoder depends on."""

    n_layers: int
    n_heads: int
    hidden: int
    ffn: int
    vocab: int = 30522
    has_mlm_head: bool = False

    def forward_flops(self, pieces: float, n: float = 1.0) -> float:
        """Floating-point operations of one forward pass over ``n`` sequences of ``pieces`` word pieces: per layer,
        the four attention projections and the feed-forward block (``2 T (4 h^2 + 2 h f)``) and the attention
        scores and weighted sums (``4 T^2 h``)."""
        t, h = float(pieces), float(self.hidden)
        return n * self.n_layers * (2 * t * (4 * h * h + 2 * h * self.ffn) + 4 * t * t * h)


@dataclass
class Work:
    """One item of a chapter's work: ``amount`` FLOPs (logarithms for ``pairs``; for Clark's attention-and-words
    probe, word pairs passed (``probe``) and updates (``probe_step``); word pieces of inputs built from text
    (``encode``); bytes of FrameNet XML (``parse``); fine-tuned checkpoints loaded (``load``); seconds for
    ``startup``)."""

    chapter: str
    what: str
    kind: str
    amount: float
    parallel: int = 1  # processes doing this work side by side (one thread each: kinds ending in _1)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown kind of work {self.kind!r}")


@dataclass
class Plan:
    profile: str
    model: str
    shape: Shape
    rates: dict[str, float]
    work: list[Work] = field(default_factory=list)

    def seconds(self, item: Work) -> float:
        if item.kind == "startup":
            return item.amount
        return item.amount / self.rates[item.kind] / item.parallel

    def chapter_seconds(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for item in self.work:
            out[item.chapter] = out.get(item.chapter, 0.0) + self.seconds(item)
        return out

    def table(self) -> str:
        """The plan as text: one line per chapter (minutes, the biggest item), then the total."""
        per = self.chapter_seconds()
        lines = [f"attnbook plan --profile {self.profile}: {self.model} ({self.shape.n_layers} layers x "
                 f"{self.shape.n_heads} heads, hidden {self.shape.hidden}), from an empty cache, on this machine",
                 "measured here: " + ", ".join(f"{k} {_rate_text(k, v)}" for k, v in self.rates.items()), ""]
        for chapter, seconds in per.items():
            items = [w for w in self.work if w.chapter == chapter and w.kind != "startup"]
            top = max(items, key=self.seconds) if items else None
            share = f"  (most: {top.what}, {self.seconds(top) / 60:.1f} min)" if top else ""
            lines.append(f"  {chapter:28s} {_minutes(seconds):>10s}{share}")
        total = sum(per.values())
        lines += ["", f"  {'total':28s} {_minutes(total):>10s}",
                  "", f"Not counted: {LEFT_OUT}."]
        return "\n".join(lines)


def _minutes(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.1f} min"


#: how the plan prints each measured rate: (divisor, format, unit); FLOP kinds not listed print as GFLOP/s
RATE_UNITS = {"pairs": (1e9, ".2f", "G logs/s"), "probe": (1e6, ".1f", "M probe word pairs/s"),
              "probe_step": (1.0, ",.0f", "probe updates/s"), "encode": (1e3, ",.0f", "k pieces encoded/s"),
              "parse": (1e6, ".1f", "MB XML/s"), "load": (1.0, ".1f", "checkpoints loaded/s")}


def _rate_text(kind: str, rate: float) -> str:
    if kind == "probe_step" and rate >= 1e6:  # probe_rate's floor: the narrow batch's time was all word pairs
        return "probe updates too cheap to time apart from their word pairs"
    scale, fmt, unit = RATE_UNITS.get(kind, (1e9, ".1f", "GFLOP/s"))
    return f"{rate / scale:{fmt}} {unit}"


# ---------------------------------------------------------------------------------------------- the model and data


def model_shape(name: str) -> Shape:
    """The shape of ``name`` from its config (the embedded model, a folder, a hub model in the Hugging Face cache),
    else from :data:`attnbook.engine.models.KNOWN_SHAPES` (a paper model not downloaded yet)."""
    import json

    from attnbook.core.errors import ModelError
    from attnbook.engine.models import KNOWN_SHAPES, has_mlm_head, resolve_model

    try:
        _, path = resolve_model(name)
    except ModelError:
        if name not in KNOWN_SHAPES:
            raise
        layers, heads, hidden = KNOWN_SHAPES[name]
        return Shape(layers, heads, hidden, 4 * hidden, has_mlm_head=True)
    cfg = json.loads((Path(path) / "config.json").read_text())
    return Shape(int(cfg["num_hidden_layers"]), int(cfg["num_attention_heads"]), int(cfg["hidden_size"]),
                 int(cfg.get("intermediate_size", 4 * cfg["hidden_size"])), int(cfg.get("vocab_size", 30522)),
                 has_mlm_head(Path(path)))


def _count_rows(path: Path) -> int | None:
    try:
        with open(path, "rb") as fh:
            return max(0, sum(1 for _ in fh) - 1)
    except OSError:
        return None


def glue_size(task: str, split: str) -> int:
    """Examples in a GLUE split: the local file's rows, else the standard size."""
    from attnbook.data.glue import task_spec
    from attnbook.core.paths import data_dir

    spec = task_spec(task)
    n = _count_rows(data_dir() / "glue" / spec.folder / spec.file(split))
    return n if n is not None else GLUE_SIZES[spec.name][0 if split == "train" else 1]


def _cap(value: Any, n: int, task: str | None = None) -> int:
    """``n`` capped by a cap or a per-task cap mapping (``None``/0: no cap)."""
    if isinstance(value, Mapping):
        value = value.get(task, value.get("default"))
    return n if not value else min(int(value), n)


# ---------------------------------------------------------------------------------------------- each chapter's work


def _finetune_work(chapter: str, s: Shape, recipe: Mapping[str, Any], tasks, seeds, random_seeds) -> list[Work]:
    workers = min(int(recipe.get("workers") or 1), os.cpu_count() or 1)
    kind = ("train_bf16" if recipe.get("bf16") else "train") + ("_1" if workers > 1 else "")
    """Training every (task, init, seed) classifier the recipe asks for once: epochs x examples, forward and
    backward (3 forward passes' worth)."""
    out = []
    for task in tasks:
        try:
            n_train = glue_size(task, "train")
        except KeyError:
            continue
        n = _cap(recipe.get("train_cap"), n_train, task)
        epochs = recipe["epochs"].get(task, recipe["epochs"].get("default")) if isinstance(
            recipe["epochs"], Mapping) else recipe["epochs"]
        length = min(PIECES_TRAIN.get(task, 40.0) * (1.0 if recipe.get("group_by_length") else PAD_RANDOM),
                     recipe["max_length"])
        runs = len(seeds) + len(random_seeds)
        out.append(Work(chapter, f"fine-tuning {task} ({runs} runs x {epochs} epochs x {n:,} examples)", kind,
                        3 * s.forward_flops(length, runs * epochs * n), parallel=min(workers, max(runs, 1))))
    return out


def probe_batches(n_sentences: int, batch_size: int) -> tuple[int, float, bool]:
    """``(batches, word pairs, measured)`` of the §5 probes' training data: the first ``n_sentences`` UD EWT
    training sentences in length-sorted batches (:func:`attnbook.studies.clark.probe_data.make_probe_batches`),
    each padded to its longest sentence, so a batch costs its size x width^2 word pairs. Read from the local file
    (a fraction of a second, ``measured``); without it, every sentence counts as UD EWT's mean of 15 words (an
    assumption the plan's line says)."""
    from attnbook.core.errors import MissingDataError
    from attnbook.data.conllu import load_ud

    try:
        words, measured = sorted(len(sent.words) for sent in load_ud("train", n_sentences)), True
    except (MissingDataError, OSError):
        words, measured = [15] * n_sentences, False
    batches = [words[i : i + batch_size] for i in range(0, len(words), batch_size)]
    return len(batches), float(sum(len(b) * max(b) ** 2 for b in batches if b)), measured


def chapter_work(chapter: str, p: Mapping[str, Any], s: Shape, recipe: Mapping[str, Any] | None = None,
                 trained: set | None = None, fetched: bool = False) -> list[Work]:
    """The model work of ``chapter`` with resolved parameters ``p`` on a model of shape ``s``. ``recipe``: the
    GLUE fine-tuning recipe (chapters 4-6); ``trained``: the (task, init, seed) classifiers earlier chapters of
    the plan already trained (updated in place), so each is counted once. GLUE tasks whose files are not in the data
    directory are skipped, as the chapters skip them, unless ``fetched`` (then counted at their standard sizes)."""
    W: list[Work] = []
    add = W.append
    trained = trained if trained is not None else set()
    if chapter.startswith("01"):
        t = PIECES["wiki_fill"] * p["max_tokens"]
        add(Work(chapter, f"attention maps of {p['n_segments']:,} segments", "forward",
                 s.forward_flops(t, p["n_segments"])))
        if s.has_mlm_head:
            add(Work(chapter, "MLM head scored on 60 held-out segments", "forward", s.forward_flops(t, 60)))
        elif p["mlm_fit_steps"] > 0:
            n_fit = p["mlm_fit_segments"] + 120
            add(Work(chapter, f"hidden states of {n_fit} segments for the MLM head", "forward", s.forward_flops(t, n_fit)))
            per_step = 0.15 * t * p["mlm_fit_batch"]  # masked pieces per update
            add(Work(chapter, f"fitting the MLM head (at most {p['mlm_fit_steps']} updates)", "vocab",
                     2 * 2 * s.hidden * s.vocab * per_step * p["mlm_fit_steps"]))
        n_text = p["n_segments"] + ((p["mlm_fit_segments"] + 120) if not s.has_mlm_head and p["mlm_fit_steps"] > 0 else 0)
        add(Work(chapter, f"encoding {n_text:,} WikiText segments", "encode", t * n_text))
        n = p["grad_segments"]
        add(Work(chapter, f"attention gradients of {n} segments", "backprop", 2 * s.forward_flops(t, n)))
        add(Work(chapter, f"MLM logits at every position of {n} segments", "vocab", 2 * 2 * s.hidden * s.vocab * t * n))
    elif chapter.startswith("02"):
        ud = PIECES["ud"]
        add(Work(chapter, f"maps of {p['syntax_sentences']:,} UD sentences (§4.2)", "forward",
                 s.forward_flops(ud, min(p["syntax_sentences"], UD_SIZES["dev"]))))
        docs = p["coref_max_docs"] or GUM_DOCS
        windows = docs * (1 if p["coref_first_only"] else GUM_WINDOWS_PER_DOC)
        add(Work(chapter, f"maps of {windows:.0f} GUM windows (§4.3)", "forward",
                 s.forward_flops(0.95 * p["coref_max_tokens"], windows)))
        n = min(p["probe_train_sentences"], UD_SIZES["train"]) + min(p["probe_dev_sentences"], UD_SIZES["dev"])
        models = 2 if p.get("probe_random_init") else 1
        add(Work(chapter, f"probe maps of {n:,} sentences x {models} models (§5)", "forward",
                 s.forward_flops(ud, n * models)))
        add(Work(chapter, "encoding the UD sentences and GUM windows", "encode",
                 ud * (min(p["syntax_sentences"], UD_SIZES["dev"]) + n * models)
                 + 0.95 * p["coref_max_tokens"] * windows))
        # the probes' own training (§5): Clark's attention-and-words probe once per model; the attention-only
        # probe and the distance + words MLP together cost about as much as one more (chapter 2's probes on 1,000
        # UD sentences on a two-core laptop: 5.5 and 5.2 s for the two attention-and-words probes, 2.3 s for the
        # attention-only probe, 2.6 s for the MLP)
        steps, pairs, measured = probe_batches(min(p["probe_train_sentences"], UD_SIZES["train"]),
                                               p["probe_batch_size"])
        runs = p["probe_epochs"] * (models + 0.9)
        lengths = "" if measured else ", UD lengths assumed: no local file"
        add(Work(chapter, f"training the §5 probes ({p['probe_epochs']} epochs, {steps} batches{lengths})", "probe",
                 runs * pairs))
        add(Work(chapter, "the probes' updates", "probe_step", runs * steps))
    elif chapter.startswith("03"):
        t = PIECES["wiki_fill"] * p["max_tokens"]
        add(Work(chapter, f"attention maps of {p['n_segments']:,} segments", "forward", s.forward_flops(t, p["n_segments"])))
        add(Work(chapter, "encoding the segments and UD sentences", "encode",
                 t * p["n_segments"] + PIECES["ud"] * min(p["syntax_sentences"], UD_SIZES["dev"])))
        heads = s.n_layers * s.n_heads
        entries = p["query_fraction"] * p["n_segments"] * t * t
        add(Work(chapter, f"Jensen-Shannon terms of {heads * (heads - 1) // 2:,} head pairs", "pairs",
                 heads * (heads - 1) / 2 * entries))
    elif chapter.startswith("04"):
        seeds, rseeds = recipe["seeds"], recipe.get("random_seeds") or recipe["seeds"]
        todo = [(t, i, sd) for t in p["table1_tasks"] for i, ss in (("pretrained_ft", seeds), ("random_ft", rseeds))
                for sd in ss if (t, i, sd) not in trained and _trainable(t, fetched)]
        trained.update(todo)
        for task in sorted({t for t, _, _ in todo}):
            mine = [x for x in todo if x[0] == task]
            W += _finetune_work(chapter, s, recipe, [task], [x for x in mine if x[1] == "pretrained_ft"],
                                [x for x in mine if x[1] == "random_ft"])
        for task in [t for t in p["table1_tasks"] if _scored(t, fetched)]:
            n_dev = _cap(p["dev_caps"], glue_size(task, "dev"), task)
            runs = 1 + (len(seeds) + len(rseeds) if _trainable(task, fetched) else 0)
            add(Work(chapter, f"scoring {task} dev ({runs} classifiers x {n_dev:,})", "forward",
                     s.forward_flops(min(PIECES_DEV.get(task, 40.0), recipe["max_length"]), runs * n_dev)))
        n = p["n_examples"]
        for task in [t for t in p["tasks"] if _trainable(t, fetched)]:
            add(Work(chapter, f"{task}: patterns, cosines, features (6 passes x {n})", "forward",
                     s.forward_flops(min(PIECES_DEV.get(task, 40.0), p["max_tokens"]), 6 * n)))
        W += _framenet_work(chapter)
    elif chapter.startswith("05"):
        for task in [t for t in p["tasks"] if _trainable(t, fetched)]:
            todo = [(task, "pretrained_ft", sd) for sd in p["seeds"] if (task, "pretrained_ft", sd) not in trained]
            if todo:
                trained.update(todo)
                W += _finetune_work(chapter, s, recipe, [task], todo, [])
            add(Work(chapter, f"{task}: loading {len(p['seeds'])} classifiers", "load", len(p["seeds"])))
            n = _cap(p["dev_caps"], glue_size(task, "dev"), task)
            configs = _sweep_forwards(s)
            # every seed counts: a classifier that learns nothing is not swept (unknown before the run), so this
            # is an upper bound (the quick book: 4 of 12 classifiers, chapter 5 ran at 0.78-0.84 of its plan
            # in the plan runs timed at the machine's usual speed)
            add(Work(chapter, f"{task}: single-head and layer sweeps (up to {len(p['seeds'])} seeds x {n})", "forward",
                     s.forward_flops(min(PIECES_DEV.get(task, 40.0), recipe["max_length"]), len(p["seeds"]) * n * configs)))
    elif chapter.startswith("06"):
        task, seeds = p["task"], p["seeds"]
        for t in dict.fromkeys([task, *p["agreement_tasks"]]):
            todo = [(t, "pretrained_ft", sd) for sd in (seeds if t == task else seeds[:1])
                    if (t, "pretrained_ft", sd) not in trained]
            if _trainable(t, fetched) and todo:
                trained.update(todo)
                W += _finetune_work(chapter, s, recipe, [t], todo, [])
        others = [t for t in dict.fromkeys(p["agreement_tasks"]) if t != task and _trainable(t, fetched)]
        add(Work(chapter, f"loading {len(seeds) + len(others)} classifiers", "load", len(seeds) + len(others)))
        # has each classifier learned its task: scored on the recipe's dev sample (seeds.classifiers ->
        # heads_off.learned_status), the chapter's seeds and one seed of each agreement task
        checked = [(task, len(seeds))] + [(t, 1) for t in others]
        add(Work(chapter, f"checking that {sum(k for _, k in checked)} classifiers learned (dev sets)", "forward",
                 sum(s.forward_flops(min(PIECES_DEV.get(t, 40.0), recipe["max_length"]),
                                     k * _cap(recipe.get("dev_cap"), glue_size(t, "dev"), t)) for t, k in checked)))
        length = min(PIECES_DEV.get(task, 40.0), recipe["max_length"])
        n_dev = _cap(p["dev_cap"], glue_size(task, "dev"))
        n_imp = _cap(p["importance_cap"], glue_size(task, "train"))
        curves = 2 + len(p["random_seeds"])
        per_seed = _sweep_forwards(s) + curves * (1 / p["step"] + 1)
        add(Work(chapter, f"{task}: masking sweeps and {curves} pruning curves ({len(seeds)} seeds x {n_dev:,})",
                 "forward", s.forward_flops(length, len(seeds) * n_dev * per_seed)))
        first = 2 * _sweep_forwards(s) + len(p["checkpoints"]) * (1 / p["step"] + 1)
        add(Work(chapter, "first seed: all-but-one, disabling, checkpoint curves", "forward",
                 s.forward_flops(length, n_dev * first)))
        if p.get("ood_task"):
            n_ood = _cap(p["dev_cap"], glue_size(p["ood_task"], "dev"))
            add(Work(chapter, f"{p['ood_task']}: masking sweeps ({len(seeds)} seeds)", "forward",
                     s.forward_flops(length, len(seeds) * n_ood * _sweep_forwards(s))))
        passes = len(seeds) + len(p["checkpoints"]) + 1 + len(p["agreement_tasks"])
        add(Work(chapter, f"importance scores ({passes} passes x {n_imp:,} examples)", "backprop",
                 2 * s.forward_flops(length, passes * n_imp)))
        speed = p["speed_repeats"] * 2 * sum(p["speed_examples"] + b for b in p["speed_batch_sizes"])
        add(Work(chapter, "speed runs", "forward", s.forward_flops(length, speed)))
    elif chapter.startswith("07"):
        workers = min(int(p.get("seed_workers") or 1), p["n_seeds"], os.cpu_count() or 1)
        train = ("train_bf16" if p.get("bf16") else "train") + ("_1" if workers > 1 else "")
        n_train = _cap(p["train_cap"], ARCT_SIZES["train"])
        n_eval = _cap(p["eval_cap"], ARCT_SIZES["dev"]) + _cap(p["eval_cap"], ARCT_SIZES["test"]) * 3
        pad = 1.0 if p.get("group_by_length") else PAD_RANDOM  # random batches are padded to their longest item
        for variant in dict.fromkeys(["full", *p["probes"]]):
            t = min(PIECES[f"arct_{variant}"], p["max_length"])  # evaluation: sorted by length
            t_train = min(PIECES[f"arct_{variant}"] * pad, p["max_length"])  # training batches
            add(Work(chapter, f"BERT on {variant} ({p['n_seeds']} seeds x {p['epochs']} epochs)", train,
                     3 * s.forward_flops(t_train, 2 * p["n_seeds"] * p["epochs"] * n_train), parallel=workers))
            add(Work(chapter, f"evaluating {variant}", "forward",
                     s.forward_flops(t, 2 * p["n_seeds"] * (p["epochs"] * _cap(p["eval_cap"], ARCT_SIZES["dev"])
                                                            + n_eval))))
        for variant in p["adversarial"]:
            t = min(PIECES[f"arct_{variant}"] * pad, p["max_length"])
            n_adv = 2 * _cap(p["train_cap"], ARCT_SIZES["train_adv"] // 2)  # originals and their swapped copies
            add(Work(chapter, f"adversarial {variant} ({p['n_seeds']} seeds x {p['adversarial_epochs']} epochs)", train,
                     3 * s.forward_flops(t, 2 * p["n_seeds"] * p["adversarial_epochs"] * n_adv), parallel=workers))
            # the adversarial dev set after every epoch, then its test set whole and in its two halves
            n_dev_adv = 2 * _cap(p["eval_cap"], ARCT_SIZES["dev_adv"] // 2)
            n_test_adv = 2 * 2 * _cap(p["eval_cap"], ARCT_SIZES["test_adv"] // 2)
            add(Work(chapter, f"evaluating adversarial {variant}", "forward",
                     s.forward_flops(min(PIECES[f"arct_{variant}"], p["max_length"]),
                                     2 * p["n_seeds"] * (p["adversarial_epochs"] * n_dev_adv + n_test_adv))))
    elif chapter.startswith("08"):
        W += atlas_work(chapter, p, s, fetched)
    return W


def _framenet_bytes() -> int:
    """Bytes of FrameNet's full-text XML in the data directory (0 without it: the chapters then stop before)."""
    from attnbook.core.errors import AttnbookError
    from attnbook.data import framenet

    try:
        return sum(f.stat().st_size for f in framenet.fulltext_files())
    except (AttnbookError, OSError):
        return 0


def _framenet_work(chapter: str, what: str = "parsing FrameNet's full-text XML") -> list[Work]:
    size = _framenet_bytes()
    return [Work(chapter, f"{what} ({size / 1e6:.0f} MB)", "parse", size)] if size else []


def atlas_work(chapter: str, p: Mapping[str, Any], s: Shape, fetched: bool = False) -> list[Work]:
    """What the head atlas (chapter 8) does with chapters 1-6's caches in place: it calls their functions again
    (:func:`attnbook.atlas.sources.gather`), so it builds their inputs from text again (the cache keys are digests
    of them), parses FrameNet's XML again, and loads every fine-tuned classifier it reads (chapter 4's analysed
    seed per task, chapter 5's tasks x seeds, chapter 6's seeds and agreement tasks); model work is read back
    from the caches. The parameters are the source chapters' own (``chapter_overrides`` included)."""
    from attnbook.atlas.sources import source_parameters
    from attnbook.chapters.params import chapter_params

    sp = source_parameters(chapter_params, p["profile"], p["model"], True, p.get("chapter_overrides"))
    p1, p2, p3, p4, p5, p6 = (sp[c] for c in sorted(sp))
    seg = lambda q: PIECES["wiki_fill"] * q["max_tokens"] * q["n_segments"]  # noqa: E731
    docs = p2["coref_max_docs"] or GUM_DOCS
    windows = docs * (1 if p2["coref_first_only"] else GUM_WINDOWS_PER_DOC)
    ud = PIECES["ud"]
    pieces = (seg(p1) + seg(p3) + ud * min(p2["syntax_sentences"], UD_SIZES["dev"])
              + ud * min(p3["syntax_sentences"], UD_SIZES["dev"]) + 0.95 * p2["coref_max_tokens"] * windows)
    glue_pieces = 0.0
    for task in [t for t in p4["tasks"] if _trainable(t, fetched)]:
        glue_pieces += min(PIECES_DEV.get(task, 40.0), p4["max_tokens"]) * p4["n_examples"]
    for task in [t for t in p5["tasks"] if _trainable(t, fetched)]:
        glue_pieces += PIECES_DEV.get(task, 40.0) * _cap(p5["dev_caps"], glue_size(task, "dev"), task)
    if _trainable(p6["task"], fetched):
        glue_pieces += PIECES_DEV.get(p6["task"], 40.0) * (_cap(p6["dev_cap"], glue_size(p6["task"], "dev"))
                                                            + _cap(p6["importance_cap"], glue_size(p6["task"], "train")))
    W = [Work(chapter, "encoding chapters 1-6's inputs again (their cache keys)", "encode", pieces + glue_pieces)]
    W += _framenet_work(chapter, "parsing FrameNet's XML again (chapter 4)")
    n4 = len([t for t in p4["tasks"] if _trainable(t, fetched)])
    n5 = len([t for t in p5["tasks"] if _trainable(t, fetched)]) * len(p5["seeds"])
    others = [t for t in dict.fromkeys(p6["agreement_tasks"]) if t != p6["task"] and _trainable(t, fetched)]
    n6 = len(p6["seeds"]) + 2 * len(others)  # learned or not, then importance scores of the learned ones
    W.append(Work(chapter, f"loading up to {n4 + n5 + n6} fine-tuned classifiers (chapters 4-6)", "load",
                  n4 + n5 + n6))
    return W


def _trainable(task: str, fetched: bool = False) -> bool:
    """Whether a chapter fine-tunes on ``task``: it has a training split, and its file is in the data directory
    (``fetched``: counted as if it were, the paper profile's data)."""
    if task.endswith("-mm"):
        return False
    from attnbook.data.glue import available

    return fetched or available(task, "train")


def _scored(task: str, fetched: bool = False) -> bool:
    from attnbook.data.glue import available

    return fetched or available(task, "dev")


def _sweep_forwards(s: Shape) -> float:
    """Forward passes' worth of one example's single-head and layer sweeps on the fast path (every head of layer l
    reruns layers l..L from kept states; the last layer for the [CLS] query only)."""
    L, H = s.n_layers, s.n_heads
    single = L + H * L * (L - 1) / 2 + L * H / 6
    layers = L + L * (L - 1) / 2 + L / 6
    return (single + layers) / L


# ---------------------------------------------------------------------------------------------- rates on this machine


def measure_rates(s: Shape, seconds: float = 1.5, startup: bool = True, model_name: str = "embedded",
                  profile: str = "quick") -> dict[str, float]:
    """FLOP/s of each kind of work on this machine, measured for about ``seconds`` each on a random model of
    shape ``s`` (no weights needed), and the start-up seconds of a chapter's kernel with ``model_name`` loaded."""
    import torch
    from transformers import BertConfig, BertModel

    from attnbook.engine.models import set_threads

    set_threads()
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=s.vocab, hidden_size=s.hidden, num_hidden_layers=s.n_layers,
                     num_attention_heads=s.n_heads, intermediate_size=s.ffn, attn_implementation="eager")
    model = BertModel(cfg)

    def timed(fn, flops: float) -> float:
        fn()  # warm-up
        n, start = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            if time.perf_counter() - start >= seconds:
                return n * flops / (time.perf_counter() - start)

    rates: dict[str, float] = {}
    t = 96  # maps as the chapters extract them: batches of 16 sequences, eager attention, maps returned
    ids = torch.randint(1000, 2000, (16, t))
    model.eval()
    with torch.no_grad():
        rates["forward"] = timed(lambda: model(ids, output_attentions=True), s.forward_flops(t, 16))
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    t_train = 48  # fine-tuning: batches of 32 short sequences
    train_ids = torch.randint(1000, 2000, (32, t_train))

    def step(bf16: bool) -> None:
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(train_ids).last_hidden_state[:, 0].float().pow(2).mean()
        loss.backward()
        opt.step()

    rates["train"] = timed(lambda: step(False), 3 * s.forward_flops(t_train, 32))
    rates["train_bf16"] = timed(lambda: step(True), 3 * s.forward_flops(t_train, 32))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one worker's share: fine-tuning with ``workers`` > 1 runs one thread per process
    try:
        rates["train_1"] = timed(lambda: step(False), 3 * s.forward_flops(t_train, 32))
        rates["train_bf16_1"] = timed(lambda: step(True), 3 * s.forward_flops(t_train, 32))
    finally:
        torch.set_num_threads(threads)
    model.eval()
    emb = model.embeddings.word_embeddings.weight.detach()

    def grad_pass() -> None:
        out = model(ids, output_attentions=True)
        attn = out.attentions
        torch.autograd.grad(out.last_hidden_state.pow(2).mean(), attn)

    rates["backprop"] = timed(grad_pass, 2 * s.forward_flops(t, 16))
    h = torch.randn(256, s.hidden, requires_grad=True)
    bias = torch.zeros(s.vocab, requires_grad=True)
    target = torch.randint(0, s.vocab, (256,))

    def vocab_step() -> None:  # the MLM head's decoder step: logits, cross-entropy, gradients (decoder frozen)
        torch.nn.functional.cross_entropy(h @ emb.T + bias, target).backward()

    rates["vocab"] = timed(vocab_step, 2 * 2 * 256 * s.hidden * s.vocab)
    from attnbook.studies.clark.distances import pairwise_xlogx_sums

    heads = s.n_layers * s.n_heads
    a = torch.rand(heads, 4096)
    rates["pairs"] = timed(lambda: pairwise_xlogx_sums(a), heads * (heads - 1) / 2 * 4096)
    rates["probe"], rates["probe_step"] = fresh_probe_rate(s, seconds)
    rates["encode"] = encode_rate(model_name, seconds / 2)
    parse = parse_rate(seconds / 2)
    if parse:
        rates["parse"] = parse
    rates["load"] = load_rate(s)
    if startup:
        rates["startup"] = kernel_startup(model_name, profile)
    return rates


def probe_rate(s: Shape, seconds: float = 1.5, batch: int = 32) -> tuple[float, float]:
    """``(word pairs/s, updates/s)`` of training Clark's attention-and-words probe (forward, backward, AdamW step)
    with every head's word maps of a model of shape ``s`` and 50-dimensional word vectors (GloVe 6B 50d, the quick
    profile's). As in training, the batches' widths change from one update to the next (here 16, 32 and 48 words in
    turn): repeating one width lets the allocator reuse the same blocks, up to three times faster than training is
    (measured after the plan's other timings). The per-update rest is timed on 8-word batches."""
    import torch

    from attnbook.engine.train import Recipe, make_optimizer
    from attnbook.studies.clark.probe_data import ProbeBatch
    from attnbook.studies.clark.probes import AttentionWordsProbe, probe_loss

    heads = s.n_layers * s.n_heads
    torch.manual_seed(0)
    probe = AttentionWordsProbe(heads, 50)
    opt = make_optimizer(probe, Recipe(lr=1e-2, schedule="constant", fused=False))

    def make(words: int) -> ProbeBatch:
        return ProbeBatch(alpha=torch.rand(batch, heads, words, words).half(), vectors=torch.randn(batch, words, 50),
                          mask=torch.ones(batch, words, dtype=torch.bool), gold=torch.randint(0, words, (batch, words)))

    def step(b: ProbeBatch) -> None:
        opt.zero_grad()
        probe_loss(probe(b), b).backward()
        opt.step()

    def timed(widths: tuple[int, ...], budget: float) -> tuple[float, int]:
        """``(seconds, updates)`` of updates cycling through ``widths`` for about ``budget`` seconds."""
        batches = [make(w) for w in widths]
        step(batches[0])
        n, start = 0, time.perf_counter()
        while n < 2 * len(widths) or time.perf_counter() - start < budget:
            step(batches[n % len(batches)])
            n += 1
        return time.perf_counter() - start, n

    widths = (16, 48, 32)
    elapsed, n = timed(widths, 0.75 * seconds)
    pairs = sum(batch * widths[i % len(widths)] ** 2 for i in range(n))
    per_pair = elapsed / pairs
    small, m = timed((8, 9), 0.25 * seconds)
    per_step = max(small / m - per_pair * batch * 8.5 ** 2, 1e-6)
    return 1.0 / per_pair, 1.0 / per_step


def fresh_probe_rate(s: Shape, seconds: float = 1.5) -> tuple[float, float]:
    """:func:`probe_rate` timed in a fresh Python process. In the process that just ran the plan's other timings the
    same updates run up to three times faster (2.7x here: 3.1 against 1.2 million word pairs/s) than chapter 2's
    probes train, which a fresh process matches (1.2 million pairs/s timed, 1.16 million in the chapter's probes on
    1,000 UD sentences). A process that cannot start is an error, never a silent in-process timing."""
    import dataclasses
    import json

    code = ("import json\nfrom attnbook.chapters.plan import Shape, probe_rate\n"
            f"print(json.dumps(probe_rate(Shape(**{dataclasses.asdict(s)!r}), {float(seconds)!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"timing the probes in a fresh process failed:\n{out.stderr[-2000:]}")
    per_pair, per_step = json.loads(out.stdout.strip().splitlines()[-1])
    return float(per_pair), float(per_step)


def encode_rate(model_name: str = "embedded", seconds: float = 0.75) -> float:
    """Word pieces per second of building inputs from text as the chapters do (:func:`attnbook.engine.inputs.
    encode_words`, whose pieces the cache keys digest): UD EWT dev sentences when the file is here, else sentences
    of vocabulary words, with ``model_name``'s tokenizer (the embedded model's, the same WordPiece vocabulary as
    bert-base-uncased, when that model is not downloaded)."""
    from transformers import AutoTokenizer

    from attnbook.core.errors import AttnbookError
    from attnbook.engine.inputs import encode_words
    from attnbook.engine.models import resolve_model

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(resolve_model(model_name)[1]))
    except (AttnbookError, OSError, TypeError):
        tokenizer = AutoTokenizer.from_pretrained(str(resolve_model("embedded")[1]))
    try:
        from attnbook.data.conllu import load_ud

        sentences = [sent.words for sent in load_ud("dev", 400)]
    except (AttnbookError, OSError):
        words = sorted(w for w in tokenizer.get_vocab() if w.isalpha() and not w.startswith("##"))[:5000]
        sentences = [words[i : i + 20] for i in range(0, len(words), 20)]
    pieces, start = 0, time.perf_counter()
    while True:
        for words in sentences:
            pieces += len(encode_words(tokenizer, words, max_tokens=128))
        if time.perf_counter() - start >= seconds:
            return pieces / (time.perf_counter() - start)


def parse_rate(seconds: float = 0.75) -> float | None:
    """Bytes per second of parsing FrameNet's full-text XML into frame instances (:func:`attnbook.data.framenet.
    load_fulltext`), timed on the documents of the data directory in name order for about ``seconds``; ``None``
    without FrameNet here (the plan then has no FrameNet work to time)."""
    from attnbook.core.errors import AttnbookError
    from attnbook.data import framenet
    from attnbook.data.registry import data_path

    try:
        files = framenet.fulltext_files()
        lookup = framenet.frame_dir_core_types(data_path("framenet", framenet.RELEASE, "frame"))
    except (AttnbookError, OSError):
        return None
    done, start = 0, time.perf_counter()
    for f in files:  # as load_fulltext does: one lookup of the frames' core elements for every document
        framenet.parse_fulltext(f, lookup)
        done += f.stat().st_size
        if time.perf_counter() - start >= seconds:
            break
    return done / (time.perf_counter() - start)


def load_rate(s: Shape, repeats: int = 3) -> float:
    """Fine-tuned classifiers loaded per second: a random classifier of shape ``s`` written with
    :func:`attnbook.engine.checkpoints.save_checkpoint` to a temporary folder and read back ``repeats`` times with
    :func:`~attnbook.engine.checkpoints.load_checkpoint` (checksums verified, as every load of the book does); the
    median load."""
    import tempfile

    import numpy as np
    from transformers import BertConfig, BertForSequenceClassification

    from attnbook.engine.checkpoints import load_checkpoint, save_checkpoint

    cfg = BertConfig(vocab_size=s.vocab, hidden_size=s.hidden, num_hidden_layers=s.n_layers,
                     num_attention_heads=s.n_heads, intermediate_size=s.ffn, num_labels=2)
    with tempfile.TemporaryDirectory(prefix="attnbook-plan-") as tmp:
        save_checkpoint(BertForSequenceClassification(cfg), "plan", {"what": "attnbook plan's load timing"}, root=Path(tmp))
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            if load_checkpoint("plan", root=Path(tmp)) is None:
                raise RuntimeError("the plan's timing checkpoint did not load back")
            times.append(time.perf_counter() - start)
    return 1.0 / float(np.median(times))


#: what every chapter's first code cell imports, and the study modules behind them (the start-up measurement's
#: fallback when no chapter notebook is at hand)
STARTUP_IMPORTS = ("import altair, numpy, pandas, torch, transformers\n"
                   "from IPython.display import Markdown, display\n"
                   "import attnbook.chapters.chapter, attnbook.chapters.results, attnbook.charts\n"
                   "import attnbook.studies.clark.paper, attnbook.studies.kovaleva.paper, attnbook.studies.michel.paper\n"
                   "import attnbook.studies.niven_kao.paper, attnbook.atlas.cards\n"
                   "Markdown('ready')")

#: the chapter whose opening cells the start-up measurement executes
STARTUP_CHAPTER = "01_clark_surface_patterns"


def _load_cell(model: str) -> str:
    return ("from attnbook.engine.models import load_encoder\n"
            f"try:\n    load_encoder({model!r})\nexcept Exception:\n    pass  # not downloaded: counted without it")


def startup_notebook(profile: str = "quick", model: str | None = None):
    """The notebook the start-up measurement executes: chapter 1's opening cells (title, set-up, parameters and the
    first code cell, which imports the book's modules, resolves the parameters and loads the model as every chapter
    does), or, without the chapter notebooks (an installed package), :data:`STARTUP_IMPORTS` and a model load."""
    import nbformat

    from attnbook.chapters.runner import notebooks_dir

    path = notebooks_dir() / f"{STARTUP_CHAPTER}.ipynb"
    if path.exists():
        nb = nbformat.read(str(path), as_version=4)
        tags = [c.metadata.get("tags", []) for c in nb.cells]
        first = next(i for i, t in enumerate(tags) if "parameters" in t) + 1
        first = next(i for i in range(first, len(nb.cells)) if nb.cells[i].cell_type == "code")
        nb.cells = nb.cells[: first + 1]
        return nb
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('profile = "quick"\nmodel = None', metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(STARTUP_IMPORTS),
                nbformat.v4.new_code_cell(_load_cell(model or "embedded"))]
    return nb


def kernel_startup(model: str = "embedded", profile: str = "quick") -> float:
    """Seconds a chapter costs before its own work (its fixed cost), measured once: papermill executing, as the
    book does, :func:`startup_notebook` (imports, parameters resolved, ``model`` loaded) in a fresh kernel and
    writing it; a subprocess doing the imports and the model load when no kernel can start. A model that cannot be loaded here (a
    paper model not downloaded yet) is left out."""
    import tempfile

    start = time.perf_counter()
    try:
        import nbformat
        import papermill as pm

        nb = startup_notebook(profile, model)
        with tempfile.TemporaryDirectory() as tmp:
            src, out = Path(tmp) / "startup.ipynb", Path(tmp) / "out.ipynb"
            nbformat.write(nb, str(src))
            start = time.perf_counter()
            params = {"profile": profile, **({"model": model} if model and model != "embedded" else {})}
            pm.execute_notebook(str(src), str(out), parameters=params, progress_bar=False, kernel_name="python3",
                                language="python", log_output=False, cwd=tmp)
    except Exception:  # noqa: BLE001 - no kernel here (or the model is not downloaded): imports and a model load
        start = time.perf_counter()
        code = STARTUP_IMPORTS.replace("\nMarkdown('ready')", "") + "\n" + _load_cell(model)
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return time.perf_counter() - start


def make_plan(profile: str, *, model: str | None = None, chapters: list[str] | None = None,
              seconds: float = 1.5, overrides: Mapping[str, Mapping[str, Any]] | None = None) -> Plan:
    """The plan of ``profile`` (every chapter, or ``chapters``) for its model (or ``model``) on this machine. The
    paper profile's plan counts the GLUE files this machine lacks at their standard sizes (a paper run fetches
    them first: ``attnbook fetch glue_large``); the other profiles skip them, as their chapters do."""
    from attnbook.chapters.params import chapter_params
    from attnbook.chapters.profiles import glue
    from attnbook.chapters.runner import available_chapters

    chapters = chapters or available_chapters()
    params = {c: chapter_params(c, profile, {**(overrides or {}).get(c, {}), **({"model": model} if model else {})})
              for c in chapters}
    name = model or next(iter(params.values()))["model"]
    shape = model_shape(name)
    rates = measure_rates(shape, seconds=seconds, model_name=name, profile=profile)
    plan = Plan(profile, name, shape, {k: v for k, v in rates.items() if k != "startup"})
    trained: set = set()
    for c in chapters:
        p = params[c]
        recipe = glue.recipe(p) if ("recipe_overrides" in p or "finetune" in p) else None
        plan.work += chapter_work(c, p, shape, recipe, trained, fetched=profile == "paper")
        plan.work.append(Work(c, "kernel start-up and imports", "startup", rates["startup"]))
    return plan


def accuracy(plan: Plan, measured: Mapping[str, float]) -> dict[str, float]:
    """Measured / estimated seconds per chapter (1.0: exact; the acceptance band is 1/1.5 to 1.5)."""
    est = plan.chapter_seconds()
    return {c: round(float(measured[c]) / est[c], 2) for c in est if c in measured and est[c] > 0}


def within(ratio: float, factor: float = 1.5) -> bool:
    return 1 / factor <= ratio <= factor and math.isfinite(ratio)
