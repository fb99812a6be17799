"""What a chapter's steps cost: the vocabulary in which every study declares its chapters' work for ``attnbook plan``.

A chapter is a list of :class:`Stage` objects: the methods of the study's pipeline marked ``@stage``
(``studies/<paper>/pipeline.py``, :mod:`attnbook.engine.pipeline`), each naming its cost function in
``studies/<paper>/costs.py`` (the atlas's in ``atlas/costs.py``); the chapter's declaration names its pipeline, and
:func:`attnbook.chapters.params.chapter_stages` lists any chapter's stages.
A stage's ``cost(params, shape)`` returns the step's :class:`Work` items, counted from the chapter's resolved parameters (:class:`StageParams`) and the model's
:class:`Shape`. The work is an amount of floating-point operations (or of logarithms, word pairs, pieces, bytes,
checkpoints: see :class:`Work`) that ``attnbook plan`` (:mod:`attnbook.chapters.plan`) divides by rates it measures
on the machine.

The data sizes the costs need come from the data directory's files where they are here (:func:`glue_size`,
:func:`probe_batches`, :func:`framenet_bytes`), else from the standard sizes below. The cache is read only when a
:class:`StageParams` carries a :class:`CheckpointCache` (the plan's "with this cache" estimate): without one, the
work is counted from an empty cache.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from attnbook.core.errors import AttnbookError, MissingDataError
from attnbook.core.parameters import Parameters
from attnbook.core.paths import data_dir
from attnbook.data import framenet
from attnbook.data.conllu import load_ud
from attnbook.data.glue import available, task_spec
from attnbook.engine.finetune import base_encoder, cached_checkpoint
from attnbook.engine.precision import resolve_bf16

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
    jobs: int = 1  # independent jobs it splits into (classifiers, seeds): how many workers of a cluster it can use
    group: str = ""  # items of one job among others of the chapter (chapter 9: a model's measurements), side by side

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown kind of work {self.kind!r}")


class CheckpointCache:
    """The fine-tuned classifiers this machine's cache holds, for the plan's "with this cache" estimate: a
    classifier counts as held when its final checkpoint and its recipe's ``save_at`` snapshots are complete
    (:func:`attnbook.engine.finetune.cached_checkpoint`, the test :func:`~attnbook.engine.finetune.train_checkpoints`
    makes before training). Only checkpoints are looked up: every other cached measurement is keyed by a digest of
    inputs the plan does not build, so it is counted as if it ran. A model that cannot be loaded here (a paper model
    not downloaded) holds nothing."""

    def __init__(self, model: str):
        self.model = model
        self._base: Any = None
        self._loaded = False

    def _base_model(self) -> Any:
        if not self._loaded:
            self._loaded = True
            try:
                self._base = base_encoder(self.model)
            except (AttnbookError, OSError):
                self._base = None
        return self._base

    def holds(self, task: str, init: str, seed: int, recipe: Mapping[str, Any]) -> bool:
        base = self._base_model()
        if base is None:
            return False
        try:
            return cached_checkpoint(base, task, init, recipe, seed, recipe.get("save_at", ()))
        except (AttnbookError, OSError):  # the task's training file is not here: nothing of it was trained here
            return False


class StageParams:
    """A chapter's resolved parameters as its stages' costs read them (``params.n_segments``: every parameter of
    the chapter's :class:`~attnbook.core.parameters.Parameters` is an attribute here), with what the plan knows
    besides them:

    * ``chapter``: the chapter's id (its :class:`Work` items carry it);
    * ``recipe``: the GLUE fine-tuning recipe (:func:`attnbook.chapters.profiles.glue.recipe`; chapters 4-6);
    * ``trained``: the (task, init, seed) classifiers earlier chapters of the plan already fine-tune, which a stage
      that counts a training adds to (in place), so each classifier is counted once, in book order;
    * ``fetched``: GLUE files not in the data directory count at their standard sizes (the paper profile, whose
      run fetches them first); otherwise their tasks are skipped, as the chapters skip them;
    * ``cache``: ``None`` for the estimate from an empty cache, else a :class:`CheckpointCache` whose classifiers
      are not counted as trained;
    * ``resolve``: the book's parameter resolver (:func:`attnbook.chapters.params.chapter_params`, passed in: the
      studies sit below the book machinery), for the atlas, which re-reads its source chapters with their own
      parameters;
    * ``recipe_for``: the book's recipe of a GLUE chapter's parameters (:func:`attnbook.chapters.profiles.glue.recipe`),
      for the atlas, which loads its source chapters' classifiers.
    """

    def __init__(self, chapter: str, params: Parameters, *, recipe: Mapping[str, Any] | None = None,
                 trained: set | None = None, fetched: bool = False, cache: CheckpointCache | None = None,
                 resolve: Callable[..., Parameters] | None = None,
                 recipe_for: Callable[[Parameters], Mapping[str, Any]] | None = None):
        self.chapter = chapter
        self.recipe_for = recipe_for
        self._params = params
        self.recipe = recipe
        self.trained = trained if trained is not None else set()
        self.fetched = fetched
        self.cache = cache
        self.resolve = resolve

    @property
    def params(self) -> Parameters:
        """The chapter's parameters themselves."""
        return self._params

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._params, name)

    def trainable(self, task: str) -> bool:
        return trainable(task, self.fetched)

    def scored(self, task: str) -> bool:
        return scored(task, self.fetched)

    def cached(self, task: str, init: str, seed: int) -> bool:
        """Whether the cache this estimate may use holds the classifier (never, from an empty cache)."""
        return self.cache is not None and self.recipe is not None and self.cache.holds(task, init, seed, self.recipe)

    def to_train(self, jobs) -> list[tuple[str, str, int]]:
        """The (task, init, seed) ``jobs`` this chapter trains: not trained by an earlier chapter, not in the
        cache; they are marked trained."""
        todo = [j for j in jobs if j not in self.trained and not self.cached(*j)]
        self.trained.update(todo)
        return todo


@dataclass(frozen=True)
class Stage:
    """One step of a chapter: ``run`` is the package function the chapter's notebook calls for it, ``cost`` counts
    the step's work, ``cost(params, shape) -> list[Work]`` (a stage without a cost cannot be declared)."""

    chapter: str
    name: str
    run: Callable[..., Any]
    cost: Callable[[StageParams, Shape], list[Work]]

    def work(self, params: StageParams, shape: Shape) -> list[Work]:
        """The stage's work items, checked: a list of :class:`Work` of this stage's chapter."""
        out = self.cost(params, shape)
        if not isinstance(out, list) or any(not isinstance(w, Work) or w.chapter != self.chapter for w in out):
            raise TypeError(f"{self.chapter} / {self.name}: a stage's cost returns a list of Work of its chapter, "
                            f"got {out!r}")
        return out


# ---------------------------------------------------------------------------------------------- data sizes


def _count_rows(path: os.PathLike) -> int | None:
    try:
        with open(path, "rb") as fh:
            return max(0, sum(1 for _ in fh) - 1)
    except OSError:
        return None


def glue_size(task: str, split: str) -> int:
    """Examples in a GLUE split: the local file's rows, else the standard size."""
    spec = task_spec(task)
    n = _count_rows(data_dir() / "glue" / spec.folder / spec.file(split))
    return n if n is not None else GLUE_SIZES[spec.name][0 if split == "train" else 1]


def cap(value: Any, n: int, task: str | None = None) -> int:
    """``n`` capped by a cap or a per-task cap mapping (``None``/0: no cap)."""
    if isinstance(value, Mapping):
        value = value.get(task, value.get("default"))
    return n if not value else min(int(value), n)


def trainable(task: str, fetched: bool = False) -> bool:
    """Whether a chapter fine-tunes on ``task``: it has a training split, and its file is in the data directory
    (``fetched``: counted as if it were, the paper profile's data)."""
    if task.endswith("-mm"):
        return False
    return fetched or available(task, "train")


def scored(task: str, fetched: bool = False) -> bool:
    """Whether ``task``'s dev file is here (``fetched``: counted as if it were)."""
    return fetched or available(task, "dev")


def probe_batches(n_sentences: int, batch_size: int) -> tuple[int, float, bool]:
    """``(batches, word pairs, measured)`` of the §5 probes' training data: the first ``n_sentences`` UD EWT
    training sentences in length-sorted batches (:func:`attnbook.studies.clark.probe_data.make_probe_batches`),
    each padded to its longest sentence, so a batch costs its size x width^2 word pairs. Read from the local file
    (a fraction of a second, ``measured``); without it, every sentence counts as UD EWT's mean of 15 words (an
    assumption the plan's line says)."""
    try:
        words, measured = sorted(len(sent.words) for sent in load_ud("train", n_sentences)), True
    except (MissingDataError, OSError):
        words, measured = [15] * n_sentences, False
    batches = [words[i : i + batch_size] for i in range(0, len(words), batch_size)]
    return len(batches), float(sum(len(b) * max(b) ** 2 for b in batches if b)), measured


def framenet_bytes() -> int:
    """Bytes of FrameNet's full-text XML in the data directory (0 without it: the chapters then stop before)."""
    try:
        return sum(f.stat().st_size for f in framenet.fulltext_files())
    except (AttnbookError, OSError):
        return 0


# ---------------------------------------------------------------------------------------------- shared costs


def framenet_work(chapter: str, what: str = "parsing FrameNet's full-text XML") -> list[Work]:
    size = framenet_bytes()
    return [Work(chapter, f"{what} ({size / 1e6:.0f} MB)", "parse", size)] if size else []


def finetune_work(chapter: str, s: Shape, recipe: Mapping[str, Any], tasks, seeds, random_seeds) -> list[Work]:
    """Training every (task, init, seed) classifier the recipe asks for once: epochs x examples, forward and
    backward (3 forward passes' worth)."""
    workers = min(int(recipe.get("workers") or 1), os.cpu_count() or 1)
    kind = ("train_bf16" if resolve_bf16(recipe.get("bf16", False)) else "train") + ("_1" if workers > 1 else "")
    out = []
    for task in tasks:
        try:
            n_train = glue_size(task, "train")
        except KeyError:
            continue
        n = cap(recipe.get("train_cap"), n_train, task)
        epochs = recipe["epochs"].get(task, recipe["epochs"].get("default")) if isinstance(
            recipe["epochs"], Mapping) else recipe["epochs"]
        length = min(PIECES_TRAIN.get(task, 40.0) * (1.0 if recipe.get("group_by_length") else PAD_RANDOM),
                     recipe["max_length"])
        runs = len(seeds) + len(random_seeds)
        out.append(Work(chapter, f"fine-tuning {task} ({runs} runs x {epochs} epochs x {n:,} examples)", kind,
                        3 * s.forward_flops(length, runs * epochs * n), parallel=min(workers, max(runs, 1)),
                        jobs=max(runs, 1)))
    return out


def sweep_forwards(s: Shape) -> float:
    """Forward passes' worth of one example's single-head and layer sweeps on the fast path (every head of layer l
    reruns layers l..L from kept states; the last layer for the [CLS] query only)."""
    L, H = s.n_layers, s.n_heads
    single = L + H * L * (L - 1) / 2 + L * H / 6
    layers = L + L * (L - 1) / 2 + L / 6
    return (single + layers) / L


def dev_length(task: str, max_length: int) -> float:
    """Mean word pieces of ``task``'s dev inputs, capped at ``max_length``."""
    return min(PIECES_DEV.get(task, 40.0), max_length)
