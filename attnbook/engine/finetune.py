"""Fine-tuning BERT-style encoders on GLUE and cached checkpoints (the classifiers of Kovaleva et al.'s Table 1).

Kovaleva et al. (§3, §4.3, Table 1) compare three models per task:

* ``"pretrained"``: the pre-trained encoder with a freshly initialised,
  *untrained* classification head, evaluated without fine-tuning;
* ``"random_ft"``: every weight re-drawn from a normal distribution
  (std ``config.initializer_range``, biases 0, LayerNorm 1/0), then fine-tuned;
* ``"pretrained_ft"``: the pre-trained encoder fine-tuned (the usual recipe).

Fine-tuning follows Devlin et al. (2019) as both papers do (Kovaleva §3: batch
32, 3 epochs; Michel's BERT script: lr 2e-5, warm-up 10 %, max length 128,
3 epochs): AdamW with decoupled weight decay 0.01 (none on biases and
LayerNorm), a learning rate warmed up linearly over the first ``warmup`` share of
the updates and then decayed linearly to zero, gradient norm clipped at 1, and
dropout on. Two deliberate differences from BERT's own optimiser: PyTorch's
AdamW corrects the moment estimates' bias (BERTAdam does not), and the
``quick`` profile trains on capped sets with length-grouped batches. The head
is the encoder family's own (:mod:`attnbook.engine.classifiers`): for BERT a linear
layer on the pooled ``[CLS]`` vector (``BertForSequenceClassification``), for RoBERTa,
DeBERTa, ModernBERT... their ``...ForSequenceClassification``, a standard transformers
model on which chapters that mask or replace heads intervene like on the encoder
(:mod:`attnbook.engine.interventions`).

Checkpoints live under ``cache_dir()/finetune/<key>/`` with ``key`` the
:func:`attnbook.core.cache.key` of (model key, task, initialisation,
training parameters, training file checksum, seed, share of training done, and the
hash of the training code: :func:`training_code`). A checkpoint is written into a
temporary folder and renamed into place only when complete; its ``COMPLETE`` file
records the SHA-256 of every other file, so an interrupted write never loads, and a
corrupt checkpoint is retrained with a
:class:`~attnbook.engine.checkpoints.CheckpointCorruptWarning`
(:mod:`attnbook.engine.checkpoints`). Intermediate checkpoints (``save_at``, e.g.
``(0.1, 0.25, 0.5)``) are cached the same way for training-dynamics analyses
(Michel et al. §6).
"""
from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass, fields, replace
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import torch

from attnbook.core import cache, executor
from attnbook.core.errors import ParameterError
from attnbook.data import hf
from attnbook.data.glue import GlueSplit, TaskSpec, load_split, task_path, task_spec
from attnbook.engine.checkpoints import (
    CHECKPOINTS_FOLDER,
    COMPLETE_FILE,
    checkpoints_root,
    load_checkpoint,
    save_checkpoint,
)
from attnbook.engine.classifiers import build_classifier, check_init, output_layer
from attnbook.engine.evaluate import DEV_SAMPLE_SEED, metrics_from_logits, score_interval, scored_dev
from attnbook.engine.inputs import EncodedSet, collate
from attnbook.engine.jobs import snapshots
from attnbook.engine.models import ClassifierInfo, LoadedModel, load_encoder
from attnbook.engine.precision import resolve_bf16
from attnbook.engine.train import Recipe, TrainLog, fit

#: Seed of the training-set cap (independent of the training seed, so seeds differ only in training).
TRAIN_SAMPLE_SEED = 0


# ---------------------------------------------------------------------------------------------
# parameters
# ---------------------------------------------------------------------------------------------
#: Profile keys that are not training parameters (read by :func:`attnbook.studies.kovaleva.table1.table1` and the chapters).
PROFILE_ONLY_KEYS = frozenset({"model", "tasks", "inits", "seeds", "random_seeds", "task_seeds", "save_at", "use_cache",
                               "workers"})


#: Parameters that may be given per task, as a mapping from task name to value (key ``"default"`` for the rest).
PER_TASK = ("train_cap", "lr", "epochs", "batch_size")


@dataclass(frozen=True)
class FinetuneParams:
    """Fine-tuning and evaluation parameters (one profile of :data:`attnbook.chapters.profiles.glue.FINETUNE_PROFILES`).

    ``train_cap`` / ``dev_cap``: at most this many examples, sampled uniformly
    (``None``: the whole split). ``train_cap``, ``lr``, ``epochs`` and ``batch_size``
    may also map task names to values (key ``"default"`` for the rest), resolved per
    task by :meth:`for_task` (:data:`PER_TASK`). ``epochs`` may be fractional.
    ``warmup`` is the share of updates with a rising learning rate. ``group_by_length``
    batches examples of similar length together (less padding; shuffled batch order).
    ``bf16``: the training forward and backward passes run under bfloat16 autocast
    (weights, optimiser state and every evaluation stay float32); ``"auto"``: where the hardware runs bfloat16
    natively (:func:`attnbook.engine.precision.resolve_bf16`, resolved when the parameters are built, so the
    checkpoint key holds the precision used). ``regression_bias``:
    a regression head (STS-B) starts with its bias at the mean training score instead
    of 0, so the first updates fit the spread of the scores, not their offset.
    """

    train_cap: int | Mapping[str, int | None] | None = None
    dev_cap: int | None = None
    max_length: int = 128
    epochs: float | Mapping[str, float] = 3.0
    batch_size: int | Mapping[str, int] = 32
    lr: float | Mapping[str, float] = 2e-5
    warmup: float = 0.1
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    adam_eps: float = 1e-6
    group_by_length: bool = False
    eval_batch_size: int = 64
    bf16: bool | str = False
    regression_bias: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "bf16", resolve_bf16(self.bf16))

        def values(name: str) -> list:
            v = getattr(self, name)
            return list(v.values()) if isinstance(v, Mapping) else [v]

        if any(b < 1 for b in values("batch_size")) or self.eval_batch_size < 1:
            raise ParameterError("batch sizes must be at least 1")
        if not all(e > 0 for e in values("epochs")):
            raise ParameterError(f"epochs must be positive, got {self.epochs}")
        if not 0.0 <= self.warmup < 1.0:
            raise ParameterError(f"warmup is a share of the updates in [0, 1), got {self.warmup}")
        if not all(lr > 0 for lr in values("lr")):
            raise ParameterError(f"lr must be positive, got {self.lr}")
        if self.max_length < 8:
            raise ParameterError(f"max_length must be at least 8, got {self.max_length}")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | "FinetuneParams") -> "FinetuneParams":
        """Build from a profile dict; profile-only keys (tasks, seeds, ...) are ignored, unknown keys raise."""
        if isinstance(values, FinetuneParams):
            return values
        known = {f.name for f in fields(cls)}
        unknown = set(values) - known - PROFILE_ONLY_KEYS - {"profile", "chapter"}
        if unknown:
            raise ParameterError(
                f"unknown fine-tuning parameter(s) {sorted(unknown)}; known: {', '.join(sorted(known))}"
            )
        return cls(**{k: v for k, v in values.items() if k in known})

    def for_task(self, task: str | TaskSpec) -> "FinetuneParams":
        """These parameters with every per-task mapping (:data:`PER_TASK`) resolved to ``task``'s value."""
        name = task_spec(task).name
        resolved: dict[str, Any] = {}
        for field in PER_TASK:
            value = getattr(self, field)
            if not isinstance(value, Mapping):
                continue
            if name not in value and "default" not in value:
                raise ParameterError(f"{field} names no value for {name} and has no 'default': {dict(value)}")
            resolved[field] = value.get(name, value.get("default"))
        return replace(self, **resolved) if resolved else self

    def training_parts(self) -> dict[str, Any]:
        """The parameters that determine the fine-tuned weights (the checkpoint cache key)."""
        out = asdict(self)
        for k in ("dev_cap", "eval_batch_size"):
            out.pop(k)
        return out


# ---------------------------------------------------------------------------------------------
# model construction
# ---------------------------------------------------------------------------------------------
@lru_cache(maxsize=4)
def _load_base(name: str) -> LoadedModel:
    return load_encoder(name)


def base_encoder(model: str | LoadedModel) -> LoadedModel:
    """The pre-trained encoder: a :class:`LoadedModel` as given, or loaded (once per process) by name."""
    return model if isinstance(model, LoadedModel) else _load_base(str(model))


# ---------------------------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------------------------
def start_at_mean(classifier: torch.nn.Module, labels: np.ndarray) -> None:
    """Set a regression head's output bias to the mean training score (``regression_bias``)."""
    head = output_layer(classifier)
    if head.out_features != 1 or head.bias is None:
        raise ParameterError("start_at_mean is for a regression head with one output")
    with torch.no_grad():
        head.bias.fill_(float(np.mean(labels)))


def training_batches(
    lengths: np.ndarray, batch_size: int, n_steps: int, seed: int, group_by_length: bool = False
) -> list[np.ndarray]:
    """The example indices of each of the ``n_steps`` updates: seeded reshuffles, epoch after epoch.

    With ``group_by_length`` each epoch's permutation is cut into chunks of 50
    batches, each chunk sorted by length before batching, and the batches of the
    epoch shuffled, so a batch holds examples of similar length (less padding).
    """
    n = len(lengths)
    rng = np.random.default_rng(seed)
    out: list[np.ndarray] = []
    while len(out) < n_steps:
        perm = rng.permutation(n)
        if group_by_length:
            chunk = batch_size * 50
            perm = np.concatenate(
                [c[np.argsort(-lengths[c], kind="stable")] for c in np.array_split(perm, max(1, math.ceil(n / chunk)))]
            )
        epoch = [perm[i : i + batch_size] for i in range(0, n, batch_size)]
        if group_by_length:
            epoch = [epoch[i] for i in rng.permutation(len(epoch))]
        out.extend(epoch)
    return out[:n_steps]


def n_updates(n_train: int, params: FinetuneParams) -> int:
    """Number of optimiser updates: ``ceil(epochs x ceil(n_train / batch_size))``."""
    return max(1, math.ceil(params.epochs * math.ceil(n_train / params.batch_size)))


def loss_of(logits: torch.Tensor, labels: torch.Tensor, regression: bool) -> torch.Tensor:
    """Mean squared error on the single output (STS-B), else cross-entropy."""
    if regression:
        return torch.nn.functional.mse_loss(logits.squeeze(-1), labels.to(logits.dtype))
    return torch.nn.functional.cross_entropy(logits, labels)


def recipe_of(params: FinetuneParams) -> Recipe:
    """The :class:`~attnbook.engine.train.Recipe` of Devlin et al.'s fine-tuning (module doc) with these parameters."""
    return Recipe(lr=params.lr, weight_decay=params.weight_decay, warmup=params.warmup, schedule="linear",
                  max_grad_norm=params.max_grad_norm or None, adam_eps=params.adam_eps, fused=True)


def train_classifier(
    classifier: torch.nn.Module,
    data: EncodedSet,
    params: FinetuneParams,
    seed: int,
    *,
    pad_id: int = 0,
    save_steps: Iterable[int] = (),
    on_save: Callable[[int, TrainLog], None] | None = None,
    on_step: Callable[[int, float], None] | None = None,
    progress: bool = True,
    stop_after: int | None = None,
    desc: str = "fine-tuning",
) -> TrainLog:
    """Fine-tune ``classifier`` in place on ``data`` with the book's one training loop (:func:`attnbook.engine.train.fit`).

    ``on_save(step, log)`` is called after update ``step`` (1-based) for every step in ``save_steps``;
    ``on_step(step, loss)`` after every update. ``stop_after`` ends training after that many updates
    while keeping the learning-rate schedule of the full run (an intermediate checkpoint without
    training to the end). Dropout masks are seeded by ``seed`` without touching the caller's generator.
    """
    total = n_updates(len(data), params)
    batches = training_batches(data.lengths, params.batch_size, total, seed, params.group_by_length)
    device = next(classifier.parameters()).device

    def loss_fn(model: torch.nn.Module, idx: np.ndarray):
        batch = collate(data, idx, pad_id).to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=params.bf16):
            logits = model(**batch.inputs).logits
        return loss_of(logits.float(), batch.labels, data.regression), {"padded_tokens": batch.input_ids.numel()}

    return fit(classifier, [batches], loss_fn, recipe_of(params), total_steps=total, on_step=on_step,
               save_steps=save_steps, on_save=on_save, stop_after=stop_after, seed=seed, n_train=len(data),
               progress=progress, desc=desc)


# ---------------------------------------------------------------------------------------------
# the public entry point
# ---------------------------------------------------------------------------------------------
def training_code() -> str:
    """The code part of every checkpoint key: the hash of this module's import closure within the package (the
    train loop, the classifiers, the data readers, the checkpoint files; :mod:`attnbook.core.code_keys`), computed
    once per process. Any change of code there names new checkpoints; a docstring or comment does not."""
    return cache.code_hash(training_code)


def checkpoint_parts(
    base: LoadedModel, task: str | TaskSpec, init: str, params: FinetuneParams, seed: int, fraction: float = 1.0
) -> dict[str, Any]:
    """Everything that determines a (fine-tuned) classifier's weights: the checkpoint cache key's parts.

    The task enters as its training data (the folder), so MNLI-m and MNLI-mm name
    one and the same MNLI model, scored on the matched or the mismatched dev set.
    """
    spec = task_spec(task)
    check_init(init)
    parts: dict[str, Any] = {
        "code": training_code(),
        "model": base.key,
        "task": spec.folder,
        "init": init,
        "seed": int(seed),
    }
    if init != "pretrained":
        train_file = task_path(spec, "train")
        parts.update(
            train_sha256=hf.file_sha256(train_file),
            train_sample_seed=TRAIN_SAMPLE_SEED,
            params=params.for_task(spec).training_parts(),
            fraction=round(float(fraction), 6),
        )
    return parts


def _classifier(model: torch.nn.Module, base: LoadedModel, spec: TaskSpec, init: str, seed: int,
                params: FinetuneParams, key: str, path: Path | None, training: Mapping[str, Any]) -> LoadedModel:
    """A :class:`LoadedModel` of a classifier with its :class:`ClassifierInfo` (``training``: ``train_log``,
    ``step``, ``n_steps``)."""
    info = ClassifierInfo(spec.name, init, int(seed), int(params.max_length), base.fingerprint, key,
                          train_log=training.get("train_log"), step=training.get("step"),
                          n_steps=training.get("n_steps"))
    return LoadedModel(model=model, tokenizer=base.tokenizer, name=f"{base.name} / {spec.name} / {init} / seed {seed}",
                       path=path, fingerprint=key[:16], revision=base.revision, classifier=info)


def _check_fractions(values: Iterable[float]) -> list[float]:
    out = sorted({round(float(f), 6) for f in values})
    bad = [f for f in out if not 0.0 < f <= 1.0]
    if bad:
        raise ParameterError(f"checkpoint fractions must lie in (0, 1], got {bad}")
    return out


def _step_of(fraction: float, total: int) -> int:
    return max(1, min(total, math.ceil(fraction * total - 1e-9)))


def get_finetuned(
    model: str | LoadedModel,
    task: str | TaskSpec,
    init: str,
    params: Mapping[str, Any] | FinetuneParams,
    seed: int = 0,
    *,
    fraction: float = 1.0,
    save_at: Any = (),
    evaluate_dev: bool = True,
    progress: bool = True,
    on_step: Callable[[int, float], None] | None = None,
) -> tuple[LoadedModel, dict[str, Any]]:
    """A classifier for ``task`` initialised as ``init`` (and fine-tuned unless ``"pretrained"``), with its dev metrics.

    Returns ``(classifier, metrics)``: ``classifier`` is a :class:`LoadedModel`
    whose ``model`` is the family's ``...ForSequenceClassification`` (its ``classifier``, a
    :class:`~attnbook.engine.models.ClassifierInfo`, records task, init, seed, max_length, the training log); ``metrics`` holds the GLUE
    metrics on the (capped) dev set, ``score`` as in Kovaleva's Table 1 and
    ``n``, or is empty when ``evaluate_dev`` is false.

    ``fraction`` < 1 returns the intermediate checkpoint after that share of the
    updates (Michel §6); ``save_at`` (a recipe's value, :func:`snapshots`) names further shares to checkpoint
    while training (each cached under its own key). A cached checkpoint is loaded
    instead of training; with the cache off (:func:`attnbook.core.cache.enabled`) nothing is read or written.
    """
    spec = task_spec(task)
    check_init(init)
    p = FinetuneParams.from_mapping(params).for_task(spec)
    base = base_encoder(model)
    fractions = _check_fractions([fraction])
    caching = cache.enabled()
    save_at = snapshots(save_at, spec, init, seed)

    if init == "pretrained":  # Kovaleva's "pre-trained" column: untrained head, no fine-tuning
        key = cache.key(checkpoint_parts(base, spec, init, p, seed))
        net = build_classifier(base, spec, init, seed)
        clf = _classifier(net, base, spec, init, seed, p, key, None, {"train_log": None})
    else:
        key = cache.key(checkpoint_parts(base, spec, init, p, seed, fraction))
        also = [cache.key(checkpoint_parts(base, spec, init, p, seed, f)) for f in _check_fractions(save_at)]
        hit = None
        if caching and all(_present(k) for k in also):  # snapshots a later chapter reads: needed by this build
            hit = load_checkpoint(key, reference=_reference(base, init))
        if hit is not None:
            net, meta = hit
            net.to(next(base.model.parameters()).device)
            clf = _classifier(net, base, spec, init, seed, p, key, checkpoints_root() / key, meta)
        else:
            clf = _train_and_cache(base, spec, init, p, seed, fractions[0], save_at, caching, progress, on_step)
    metrics: dict[str, Any] = {}
    if evaluate_dev:
        metrics = dev_metrics(clf, spec, p, progress=progress)
    return clf, metrics


def _reference(base: LoadedModel, init: str) -> dict[str, torch.Tensor]:
    """What a classifier's compact checkpoint is stored against (:mod:`attnbook.engine.checkpoints`): the
    pre-trained encoder's weights for a classifier initialised from it, nothing for a random-init one."""
    return {} if init == "random_ft" else dict(base.model.state_dict())


def _tokenize_batch(batch: dict[str, list], tokenizer: Any, pair: bool, max_length: int) -> dict[str, list]:
    b = [t or "" for t in batch["text_b"]] if pair else None
    enc = tokenizer(batch["text_a"], b, truncation=True if b is None else "longest_first", max_length=max_length,
                    return_token_type_ids=True)
    return {"input_ids": enc["input_ids"], "token_type_ids": enc["token_type_ids"]}


def encode_split(tokenizer: Any, split: GlueSplit, max_length: int) -> EncodedSet:
    """A split's ``[CLS] a [SEP] (b [SEP])`` ids, truncated longest-first to ``max_length`` (as BERT's GLUE code):
    ``Dataset.map(batched=True)`` with the fast tokenizer over :attr:`GlueSplit.dataset`, the ids equal to
    :func:`~attnbook.engine.inputs.encode_examples`' (the tokenizer encodes each example alone, in batches of 1000
    instead of one). With the cache on, ``datasets`` keeps the result beside the split's Arrow data under its
    fingerprint (split, tokenizer, length), so a second run of the same recipe does not tokenise again."""
    spec = split.task
    if not split.examples:
        raise ParameterError(f"no {spec.name} examples to encode")
    keep = cache.enabled()
    ds = split.dataset
    with hf.quiet():
        enc = ds.map(partial(_tokenize_batch, tokenizer=tokenizer, pair=spec.is_pair, max_length=max_length),
                     batched=True, remove_columns=ds.column_names, load_from_cache_file=keep, keep_in_memory=not keep)
    cols = hf.rows(enc)
    labels = np.asarray([e.label for e in split.examples], dtype=np.float32 if spec.is_regression else np.int64)
    return EncodedSet(cols["input_ids"], cols["token_type_ids"], labels, spec.is_regression)


def _train_and_cache(
    base: LoadedModel, spec: TaskSpec, init: str, p: FinetuneParams, seed: int, fraction: float,
    save_at: Iterable[float], caching: bool, progress: bool, on_step: Callable[[int, float], None] | None,
) -> LoadedModel:
    """Fine-tune once, checkpointing every requested share of the updates; return the ``fraction`` one.

    With the cache on, training always runs to the end (the final model is
    cached too); without it, training stops at ``fraction``.
    """
    train = load_split(spec, "train", cap=p.train_cap, seed=TRAIN_SAMPLE_SEED)
    data = encode_split(base.tokenizer, train, p.max_length)
    total = n_updates(len(data), p)
    wanted = _check_fractions([*save_at, fraction, 1.0] if caching else [fraction])
    at_step: dict[int, list[float]] = {}
    for f in wanted:
        at_step.setdefault(_step_of(f, total), []).append(f)
    net = build_classifier(base, spec, init, seed)
    if spec.is_regression and p.regression_bias:
        start_at_mean(net, data.labels)
    result: dict[str, LoadedModel] = {}
    reference = _reference(base, init)

    def on_save(step: int, log: TrainLog) -> None:
        for f in at_step[step]:
            parts = checkpoint_parts(base, spec, init, p, seed, f)
            key = cache.key(parts)
            info = {"train_log": log.as_dict(), "step": step, "n_steps": total}
            folder = save_checkpoint(net, key, {"parts": parts, "n_train_total": train.n_total, **info},
                                     reference=reference) if caching else None
            if f == fraction:
                # the classifier as the cache holds it (a compact checkpoint's rebuild), so this run and the
                # next, which loads it, compute with the same weights
                stored = load_checkpoint(key, reference=reference) if caching else None
                snapshot = stored[0].to(next(net.parameters()).device) if stored is not None \
                    else copy.deepcopy(net) if step < total else net
                result["clf"] = _classifier(snapshot, base, spec, init, seed, p, key, folder, info)

    train_classifier(
        net, data, p, seed, pad_id=base.tokenizer.pad_token_id or 0,
        save_steps=at_step.keys(), on_save=on_save, on_step=on_step, progress=progress,
        stop_after=None if caching else max(at_step),
        desc=f"fine-tuning {spec.name} ({init}, seed {seed})",
    )
    return result["clf"]


def recipe_dev_outputs(classifier: LoadedModel, task: str | TaskSpec, params: Mapping[str, Any] | FinetuneParams, *,
                       progress: bool = False) -> tuple[dict[str, np.ndarray], GlueSplit]:
    """:func:`~attnbook.engine.evaluate.scored_dev` on the recipe's dev sample (``params.dev_cap``,
    :data:`DEV_SAMPLE_SEED`), and that sample."""
    spec = task_spec(task)
    p = FinetuneParams.from_mapping(params).for_task(spec)
    dev = load_split(spec, "dev", cap=p.dev_cap, seed=DEV_SAMPLE_SEED)
    return scored_dev(classifier, spec, cap=p.dev_cap, max_length=p.max_length, batch_size=p.eval_batch_size,
                      progress=progress), dev


def dev_metrics(
    classifier: LoadedModel, task: str | TaskSpec, params: Mapping[str, Any] | FinetuneParams, *,
    progress: bool = False,
) -> dict[str, Any]:
    """Metrics of ``classifier`` on ``task``'s dev set (capped to ``params.dev_cap``; :func:`recipe_dev_outputs`)."""
    spec = task_spec(task)
    arrays, dev = recipe_dev_outputs(classifier, spec, params, progress=progress)
    out: dict[str, Any] = metrics_from_logits(spec, arrays["logits"], arrays["labels"])
    out.update(score_interval(spec, arrays["logits"], arrays["labels"]))
    out["n_dev_total"] = dev.n_total
    return out


# ---------------------------------------------------------------------------------------------
# several classifiers at once: CPU time, cached checkpoints, the worker pool
# ---------------------------------------------------------------------------------------------


def cpu_seconds() -> float:
    """CPU seconds of this process and of its finished child processes (the workers of :func:`train_checkpoints`)."""
    import os

    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def cached_checkpoint(base: LoadedModel, task: str, init: str, params: Mapping[str, Any] | FinetuneParams,
                      seed: int, save_at: Any = ()) -> bool:
    """Whether the classifier ``(task, init, seed)`` and its ``save_at`` snapshots (:func:`snapshots`) are all in
    the cache."""
    spec = task_spec(task)
    p = FinetuneParams.from_mapping(params).for_task(spec)
    fractions = _check_fractions([1.0, *snapshots(save_at, spec, init, seed)])
    return all(_present(cache.key(checkpoint_parts(base, spec, init, p, seed, f))) for f in fractions)


def _present(key: str) -> bool:
    """Whether checkpoint ``key`` is complete in the cache; one that is counts as used by this process
    (:func:`attnbook.core.cache.used_entries`), as a classifier a build would otherwise train."""
    if (checkpoints_root() / key / COMPLETE_FILE).exists():
        cache.note_use(CHECKPOINTS_FOLDER, key)
        return True
    return False


def _train_job(job: dict) -> tuple[str, str, int]:
    """One fine-tuning job (:func:`train_checkpoints`): trains and caches one classifier; returns its name. On a
    worker of a cluster it runs on one thread (the workers share the machine's cores)."""
    if executor.in_worker():
        torch.set_num_threads(1)
    get_finetuned(job["model"], job["task"], job["init"], job["params"], job["seed"], save_at=job["save_at"],
                  evaluate_dev=False, progress=False)
    return job["task"], job["init"], job["seed"]


def train_checkpoints(model: str, jobs: Sequence[tuple[str, str, int]], params: Mapping[str, Any], *,
                      workers: int = 1) -> list[tuple[str, str, int]]:
    """Train every ``(task, init, seed)`` classifier of ``jobs`` whose checkpoint (with the recipe's ``save_at``
    snapshots) is not cached yet, and cache them; returns the jobs it trained.

    Each classifier is one job (:func:`attnbook.core.executor.run_jobs`), longest first: by default they run in this
    process one after the other, or ``workers`` at a time in one-thread worker processes (on two cores two one-thread
    runs side by side train faster than one run on two threads); a cluster given by ``ATTNBOOK_SCHEDULER`` runs them
    on its workers. A job ships only names (``model`` must be loadable by name where it runs: the embedded model, a
    folder on the shared filesystem or a hub name) and writes its checkpoint into the shared cache. Each run seeds its
    own generators, so a job trains the same classifier on a worker as in this process up to floating-point summation
    order. The chapters then load the checkpoints from the cache (:func:`get_finetuned`). With the cache off
    (:func:`attnbook.core.cache.enabled`) nothing is trained ahead."""
    if not cache.enabled():
        return []
    base = base_encoder(model)
    save_at = params.get("save_at", ())
    todo = [(t, i, s) for t, i, s in dict.fromkeys(jobs) if i != "pretrained"
            and not cached_checkpoint(base, t, i, params, s, save_at)]
    shipped = [{"model": model, "task": t, "init": i, "seed": s, "params": dict(params), "save_at": save_at}
               for t, i, s in todo]
    shipped.sort(key=lambda j: -_job_cost(j))  # longest first, so the last worker does not finish far behind
    names = [f"fine-tuning {j['task']} ({j['init']}, seed {j['seed']})" for j in shipped]
    done = executor.run_jobs(_train_job, shipped, names=names, workers=workers)
    for task, init, seed in done:  # the checkpoints the jobs wrote count as used by this run (its provenance)
        cached_checkpoint(base, task, init, params, seed, save_at)
    return list(done)


def _job_cost(job: dict) -> float:
    """Training examples x epochs of a job (its relative cost, for scheduling)."""

    p = FinetuneParams.from_mapping(job["params"]).for_task(task_spec(job["task"]))
    n = len(load_split(job["task"], "train", cap=p.train_cap, seed=TRAIN_SAMPLE_SEED))
    return n * float(p.epochs)
