"""``attnbook plan``: what a profile will cost on this machine, before running it.

For every chapter the plan lists the model work the chapter's stages declare (:func:`chapter_work`: each stage of a
study's pipeline names the cost function in the study's ``costs.py`` that counts its work, :mod:`attnbook.engine.cost`):
encoder forward passes with attention maps, fine-tuning steps (forward and backward), gradient passes, the MLM head's
vocabulary projections and chapter 3's pairwise head divergences, each as an amount of floating-point operations
(or of logarithms) computed from the model's shape (:func:`planned_shape`, read from its config, so a paper-profile
plan needs no weights) and the data sizes (the local files' lengths, the standard sizes of the GLUE files that are
not here). :func:`measure_rates` then times each kind of work for a few seconds on this machine (a random model of
the same shape), and the plan divides.

Two estimates, in book order, with each fine-tuned classifier trained once (chapters 4-6 share them): from an empty
cache, which reads nothing of the cache, and with this machine's cache, where the fine-tuned classifiers already in
it are not trained again (:class:`attnbook.engine.cost.CheckpointCache`; every other cached result is counted as if
it were computed). The data directory is read: a dataset or GLUE file that is not there is said with the plan, and
its work is not counted (the paper profile counts the GLUE files at their standard sizes: its run fetches them).

What the estimate leaves out is said in :data:`LEFT_OUT`; ``make bench`` writes the quick profile's estimate beside
the measured chapter times (benchmarks/results), so its error is on record.
"""
from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Mapping, Sequence

import nbformat
import numpy as np
import papermill as pm
import torch
from transformers import AutoTokenizer

from attnbook.chapters.params import SPECS, chapter_params, chapter_stages
from attnbook.chapters.profiles import glue
from attnbook.chapters.runner import available_chapters, ipc_kernel_manager, notebooks_dir
from attnbook.core.errors import AttnbookError, ModelError
from attnbook.core.paths import cache_dir, data_dir
from attnbook.data import framenet
from attnbook.data.conllu import load_ud
from attnbook.data.glue import TASKS, available
from attnbook.data.registry import DATASETS, data_path
from attnbook.engine.checkpoints import load_checkpoint, save_checkpoint
from attnbook.engine.cost import CheckpointCache, Shape, StageParams, Work
from attnbook.engine.inputs import encode_words
from attnbook.engine.models import KNOWN_SHAPES, has_mlm_head, random_bert, resolve_model, set_threads
from attnbook.engine.train import Recipe, make_optimizer
from attnbook.studies.clark.distances import pairwise_xlogx_sums
from attnbook.studies.clark.probe_data import ProbeBatch
from attnbook.studies.clark.probes import AttentionWordsProbe, probe_loss

#: what the estimate does not count (said with every plan)
LEFT_OUT = ("bootstrap and permutation statistics, spaCy tagging, reading data files other than FrameNet's XML, "
            "cache keys and cache reads, chapter 7's word models, chart rendering, and a shared machine's "
            "contention; each chapter gets a fixed start-up cost measured on the spot (papermill executing chapter "
            "1's opening cells: imports, parameters, model)")


@dataclass(frozen=True)
class WallTime:
    """:meth:`Plan.wall_time`: the estimate (``seconds``), the critical path's seconds and chapters, and the total
    work divided by the workers."""

    workers: int
    seconds: float
    path_seconds: float
    path: list[str]
    work_seconds: float

    def text(self) -> str:
        bound = "the chain " + " -> ".join(c[:2] for c in self.path) if self.seconds == self.path_seconds \
            else "the total work over the workers"
        return (f"  {self.workers:>4d} worker{'s' if self.workers > 1 else ' '} {_minutes(self.seconds):>10s}   "
                f"(set by {bound}; chain {_minutes(self.path_seconds)}, work / workers {_minutes(self.work_seconds)})")


@dataclass
class Plan:
    """A profile's work per chapter and the rates measured here: ``work`` from an empty cache, ``cached_work`` with
    this machine's cache (``None``: not estimated), ``notes`` on the data the counts rest on."""

    profile: str
    model: str
    shape: Shape
    rates: dict[str, float]
    work: list[Work] = field(default_factory=list)
    cached_work: list[Work] | None = None
    notes: list[str] = field(default_factory=list)

    def seconds(self, item: Work) -> float:
        if item.kind == "startup":
            return item.amount
        return item.amount / self.rates[item.kind] / item.parallel

    def chapter_seconds(self, cached: bool = False) -> dict[str, float]:
        """Seconds per chapter from an empty cache (``cached``: with this machine's cache)."""
        out: dict[str, float] = {}
        for item in (self.cached_work or []) if cached else self.work:
            out[item.chapter] = out.get(item.chapter, 0.0) + self.seconds(item)
        return out

    def one_worker_seconds(self, item: Work) -> float:
        """The item's seconds on one worker (all its jobs one after the other)."""
        return self.seconds(item) * (1 if item.kind == "startup" else item.parallel)

    def wall_time(self, workers: int, after: Mapping[str, Sequence[str]] | None = None) -> WallTime:
        """The wall time from an empty cache with ``workers`` one-thread workers (a cluster's, or this machine's
        cores): each chapter's items take their one-worker seconds, an item of several independent jobs (classifiers,
        seeds) spread over up to ``workers`` of them; chapters run side by side unless one comes ``after`` another
        (:attr:`attnbook.chapters.spec.Chapter.after`). The estimate is the larger of the critical path (the longest
        chain of chapters, each with every worker for its jobs) and the total work divided by ``workers``: a lower
        bound that list scheduling reaches within a factor of two, and a close one when either term dominates."""
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        after = after or {}
        chapters = list(dict.fromkeys(w.chapter for w in self.work))
        length = {c: self._chapter_length([w for w in self.work if w.chapter == c], workers) for c in chapters}
        finish: dict[str, float] = {}
        chain: dict[str, list[str]] = {}
        for c in chapters:  # book order: a chapter comes after the ones it reads
            before = [d for d in after.get(c, ()) if d in finish]
            first = max(before, key=lambda d: finish[d], default=None)
            finish[c] = (finish[first] if first else 0.0) + length[c]
            chain[c] = (chain[first] if first else []) + [c]
        last = max(finish, key=finish.get)
        total = sum(self.one_worker_seconds(w) for w in self.work)
        return WallTime(workers, max(finish[last], total / workers), finish[last], chain[last], total / workers)

    def _chapter_length(self, items: Sequence[Work], workers: int) -> float:
        """A chapter's seconds with every one of ``workers`` for its jobs: an item of several jobs spread over up to
        that many workers; items in groups (one job per group, :attr:`Work.group`) side by side, the longest group
        or their total over the workers, whichever is longer."""
        alone = sum(self.one_worker_seconds(w) / min(workers, max(w.jobs, 1)) for w in items if not w.group)
        groups: dict[str, float] = {}
        for w in items:
            if w.group:
                groups[w.group] = groups.get(w.group, 0.0) + self.one_worker_seconds(w)
        return alone + (max(max(groups.values()), sum(groups.values()) / workers) if groups else 0.0)

    def wall_time_rows(self, counts: Sequence[int]) -> list[dict[str, Any]]:
        """:meth:`wall_time` for each worker count with the chapters' order from their declarations, one row each:
        the estimate, what sets it (the chain of chapters or the work over the workers) and both terms."""
        after = {c: spec.after for c, spec in SPECS.items()}
        rows = []
        for n in counts:
            w = self.wall_time(n, after)
            rows.append({"profile": self.profile, "workers": n, "wall time": _minutes(w.seconds),
                         "set by": "the chain of chapters" if w.seconds == w.path_seconds else "the work / workers",
                         "chain": " → ".join(c[:2] for c in w.path), "chain time": _minutes(w.path_seconds),
                         "work / workers": _minutes(w.work_seconds), "hours": round(w.seconds / 3600, 2)})
        return rows

    def workers_table(self, counts: Sequence[int]) -> str:
        """:meth:`wall_time` for each worker count, as text, with the chapters' order from their declarations."""
        after = {c: spec.after for c, spec in SPECS.items()}
        return "\n".join(["", "Wall time from an empty cache with one-thread workers (chapters side by side where none "
                                "reads another's results; fine-tuning jobs and seeds spread over the workers):",
                          *(self.wall_time(n, after).text() for n in counts),
                          "A lower bound: each chapter on the chain gets every worker for its jobs; a cluster adds "
                          "its start-up and each worker loads the model once per job."])

    def table(self) -> str:
        """The plan as text: one line per chapter (minutes from an empty cache, with this cache, the biggest item
        from an empty cache), then the totals."""
        per = self.chapter_seconds()
        held = self.chapter_seconds(cached=True) if self.cached_work is not None else {}
        lines = [f"attnbook plan --profile {self.profile}: {self.model} ({self.shape.n_layers} layers x "
                 f"{self.shape.n_heads} heads, hidden {self.shape.hidden}), on this machine",
                 "measured here: " + ", ".join(f"{k} {_rate_text(k, v)}" for k, v in self.rates.items()),
                 *self.notes, "", f"  {'':28s} {'empty cache':>12s} {'with this cache':>16s}"]
        for chapter, seconds in per.items():
            items = [w for w in self.work if w.chapter == chapter and w.kind != "startup"]
            top = max(items, key=self.seconds) if items else None
            share = f"  (most: {top.what}, {self.seconds(top) / 60:.1f} min)" if top else ""
            lines.append(f"  {chapter:28s} {_minutes(seconds):>12s} {_held(held, chapter):>16s}{share}")
        lines += ["", f"  {'total':28s} {_minutes(sum(per.values())):>12s} "
                      f"{_minutes(sum(held.values())) if held else '-':>16s}",
                  "", "Empty cache: every chapter computes everything, in book order (each fine-tuned classifier "
                      f"trained once, by the first chapter that needs it). With this cache ({cache_dir()}): the "
                      "fine-tuned classifiers already there are not trained again; every other cached result is "
                      "counted as if it were computed.",
                  f"Not counted: {LEFT_OUT}."]
        return "\n".join(lines)


def _held(held: dict[str, float], chapter: str) -> str:
    return _minutes(held[chapter]) if chapter in held else "-"


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


def planned_shape(name: str) -> Shape:
    """The shape of ``name`` from its config (the embedded model, a folder, a hub model in the Hugging Face cache),
    else from :data:`attnbook.engine.models.KNOWN_SHAPES` (a paper model not downloaded yet)."""
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


def data_note(fetched: bool = False) -> str:
    """What of the book's data the data directory lacks, and what the plan does about it: a GLUE task without its
    file is not fine-tuned or scored (the chapters skip it) unless ``fetched`` (then counted at its standard size),
    and FrameNet's parsing is not counted without FrameNet."""
    root = data_dir()
    missing = [d for d in DATASETS if not (root / d).is_dir()]
    files: dict[tuple[str, str], str] = {}  # one entry per file (MNLI-m and MNLI-mm share the training file)
    for t, spec in TASKS.items():
        for split in ("train", "dev"):
            if "glue" not in missing and not available(t, split):
                files.setdefault((spec.folder, spec.file(split)), f"{t} {split}")
    if not missing and not files:
        return f"data directory {root}: every dataset here"
    lacks = ", ".join([*missing, *(f"GLUE {f}" for f in files.values())])
    if fetched:
        return (f"data directory {root} lacks {lacks}; missing GLUE files count at their standard sizes (a paper "
                "run fetches them)")
    return (f"data directory {root} lacks {lacks}; this plan counts no fine-tuning or scoring of a GLUE task without "
            "its file (the chapters skip it) and no FrameNet parsing without FrameNet")


# ---------------------------------------------------------------------------------------------- each chapter's work


def chapter_work(chapter: str, p: Mapping[str, Any], s: Shape, recipe: Mapping[str, Any] | None = None,
                 trained: set | None = None, fetched: bool = False, cache: CheckpointCache | None = None) -> list[Work]:
    """The model work of ``chapter`` with resolved parameters ``p`` on a model of shape ``s``: its stages' costs
    (:func:`attnbook.chapters.params.chapter_stages`), in order. ``recipe``: the GLUE fine-tuning recipe (chapters 4-6);
    ``trained``: the (task, init, seed) classifiers earlier chapters of the plan already trained (updated in place),
    so each is counted once. GLUE tasks whose files are not in the data directory are skipped, as the chapters skip
    them, unless ``fetched`` (then counted at their standard sizes). ``cache``: ``None`` counts from an empty cache
    (nothing of the cache is read); a :class:`~attnbook.engine.cost.CheckpointCache` leaves out the classifiers it
    holds."""
    params = StageParams(chapter, p, recipe=recipe, trained=trained, fetched=fetched, cache=cache,
                         resolve=chapter_params, recipe_for=glue.recipe)
    return [w for stage in chapter_stages(chapter) for w in stage.work(params, s)]


# ---------------------------------------------------------------------------------------------- rates on this machine


def measure_rates(s: Shape, seconds: float = 1.5, startup: bool = True, model_name: str = "embedded",
                  profile: str = "quick", kinds: Collection[str] | None = None) -> dict[str, float]:
    """FLOP/s of each kind of work on this machine, measured for about ``seconds`` each on a random model of
    shape ``s`` (no weights needed), and the start-up seconds of a chapter's kernel with ``model_name`` loaded.
    ``kinds``: the fine-tuning kinds to time (``train``, ``train_1``, ``train_bf16``, ``train_bf16_1``), by default
    all four; a plan times only those its work uses, since bfloat16 steps on a CPU without native bfloat16 take
    minutes to time at the paper's shape."""
    train_kinds = [k for k in ("train", "train_bf16", "train_1", "train_bf16_1") if kinds is None or k in kinds]
    set_threads()
    torch.manual_seed(0)
    model = random_bert(s.vocab, s.hidden, s.n_layers, s.n_heads, s.ffn)

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

    threads = torch.get_num_threads()
    for kind in train_kinds:
        # ``_1``: one worker's share (fine-tuning with ``workers`` > 1 runs one thread per worker)
        torch.set_num_threads(1 if kind.endswith("_1") else threads)
        try:
            rates[kind] = timed(lambda: step("bf16" in kind), 3 * s.forward_flops(t_train, 32))
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
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(resolve_model(model_name)[1]))
    except (AttnbookError, OSError, TypeError):
        tokenizer = AutoTokenizer.from_pretrained(str(resolve_model("embedded")[1]))
    try:
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
    classifier = random_bert(s.vocab, s.hidden, s.n_layers, s.n_heads, s.ffn, num_labels=2)
    with tempfile.TemporaryDirectory(prefix="attnbook-plan-") as tmp:
        save_checkpoint(classifier, "plan", {"what": "attnbook plan's load timing"}, root=Path(tmp))
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
    code cells through the one that loads the model: the book's modules imported, the parameters resolved and the
    model loaded, as every chapter does), or, without the chapter notebooks (an installed package), :data:`STARTUP_IMPORTS` and a model load."""
    path = notebooks_dir() / f"{STARTUP_CHAPTER}.ipynb"
    if path.exists():
        nb = nbformat.read(str(path), as_version=4)
        tags = [c.metadata.get("tags", []) for c in nb.cells]
        first = next(i for i, t in enumerate(tags) if "parameters" in t) + 1
        code = [i for i in range(first, len(nb.cells)) if nb.cells[i].cell_type == "code"]
        # through the cell that loads the model (the set-up may span two cells)
        last = next((i for i in code if "load_encoder(" in nb.cells[i].source), code[0])
        nb.cells = nb.cells[: last + 1]
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
    start = time.perf_counter()
    try:
        nb = startup_notebook(profile, model)
        with tempfile.TemporaryDirectory() as tmp:
            src, out = Path(tmp) / "startup.ipynb", Path(tmp) / "out.ipynb"
            nbformat.write(nb, str(src))
            start = time.perf_counter()
            params = {"profile": profile, **({"model": model} if model and model != "embedded" else {})}
            pm.execute_notebook(str(src), str(out), parameters=params, progress_bar=False, kernel_name="python3",
                                language="python", log_output=False, cwd=tmp,
                                kernel_manager_class=ipc_kernel_manager())
    except Exception:  # noqa: BLE001 - no kernel here (or the model is not downloaded): imports and a model load
        start = time.perf_counter()
        code = STARTUP_IMPORTS.replace("\nMarkdown('ready')", "") + "\n" + _load_cell(model)
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return time.perf_counter() - start


def make_plan(profile: str, *, model: str | None = None, chapters: list[str] | None = None,
              seconds: float = 1.5, overrides: Mapping[str, Mapping[str, Any]] | None = None) -> Plan:
    """The plan of ``profile`` (every chapter, or ``chapters``) for its model (or ``model``) on this machine, from an
    empty cache and with this machine's cache. The paper profile's plan counts the GLUE files this machine lacks at
    their standard sizes (a paper run fetches them first: ``attnbook fetch glue_large``); the other profiles skip
    them, as their chapters do."""
    chapters = chapters or available_chapters()
    params = {c: chapter_params(c, profile, {**(overrides or {}).get(c, {}), **({"model": model} if model else {})})
              for c in chapters}
    name = model or next(iter(params.values())).model
    shape = planned_shape(name)
    fetched = profile == "paper"
    held = CheckpointCache(name)
    trained: set = set()
    trained_held: set = set()
    work, cached = {}, {}
    for c in chapters:
        p = params[c]
        recipe = glue.recipe(p) if hasattr(p, "recipe_overrides") else None
        work[c] = chapter_work(c, p, shape, recipe, trained, fetched=fetched)
        cached[c] = chapter_work(c, p, shape, recipe, trained_held, fetched=fetched, cache=held)
    kinds = {w.kind for items in work.values() for w in items}
    rates = measure_rates(shape, seconds=seconds, model_name=name, profile=profile, kinds=kinds)
    plan = Plan(profile, name, shape, {k: v for k, v in rates.items() if k != "startup"}, cached_work=[],
                notes=[data_note(fetched)])
    for c in chapters:
        start = Work(c, "kernel start-up and imports", "startup", rates["startup"])
        plan.work += [*work[c], start]
        plan.cached_work += [*cached[c], start]
    return plan


def accuracy(plan: Plan, measured: Mapping[str, float]) -> dict[str, float]:
    """Measured / estimated seconds per chapter (1.0: exact; the acceptance band is 1/1.5 to 1.5)."""
    est = plan.chapter_seconds()
    return {c: round(float(measured[c]) / est[c], 2) for c in est if c in measured and est[c] > 0}


def within(ratio: float, factor: float = 1.5) -> bool:
    return 1 / factor <= ratio <= factor and math.isfinite(ratio)
