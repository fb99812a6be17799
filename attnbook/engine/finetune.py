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
is a linear layer on the pooled ``[CLS]`` vector (``BertForSequenceClassification``),
a standard transformers model whose attention goes through the attention
interface, so chapters that mask or replace heads hook it like the encoder.

Checkpoints live under ``cache_dir()/finetune/<key>/`` with ``key`` the
:func:`attnbook.core.cache.key` of (model key, task, initialisation,
training parameters, training file checksum, seed, share of training done, code
version). A checkpoint is written into a temporary folder and renamed into place
only when complete; its ``COMPLETE`` file records the SHA-256 of every other file,
so an interrupted write never loads, and a corrupt checkpoint is retrained with a
:class:`~attnbook.engine.checkpoints.CheckpointCorruptWarning` (:mod:`attnbook.engine.checkpoints`). Intermediate checkpoints (``save_at``, e.g.
``(0.1, 0.25, 0.5)``) are cached the same way for training-dynamics analyses
(Michel et al. §6).
"""
from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import torch

from attnbook.core import cache
from attnbook.core.errors import ModelError, ParameterError
from attnbook.data.glue import Example, GlueSplit, TaskSpec, load_split, task_path, task_spec
from attnbook.core.io import sha256_file
from attnbook.data.glue_metrics import glue_metrics, predictions_from_logits, task_score
from attnbook.engine.checkpoints import COMPLETE_FILE, checkpoints_root, load_checkpoint, save_checkpoint
from attnbook.engine.inputs import Batch, pad_rows
from attnbook.engine.models import LoadedModel, load_encoder
from attnbook.engine.train import Recipe, TrainLog, fit

#: Version of the training and checkpoint code; part of every cache key.
CODE_VERSION = "finetune-2"

#: The three initialisations of Kovaleva et al.'s Table 1, in the table's column order.
INITS = ("pretrained", "random_ft", "pretrained_ft")
#: Fixed seed of the dev-set sample, so every run of a task is scored on the same examples.
DEV_SAMPLE_SEED = 0
#: Seed of the training-set cap (independent of the training seed, so seeds differ only in training).
TRAIN_SAMPLE_SEED = 0




# ---------------------------------------------------------------------------------------------
# parameters
# ---------------------------------------------------------------------------------------------
#: Profile keys that are not training parameters (read by :func:`attnbook.studies.kovaleva.table1.table1` and the chapters).
PROFILE_ONLY_KEYS = frozenset({"model", "tasks", "inits", "seeds", "random_seeds", "save_at", "use_cache", "workers"})


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
    (weights, optimiser state and every evaluation stay float32). ``regression_bias``:
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
    bf16: bool = False
    regression_bias: bool = False

    def __post_init__(self) -> None:
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


def normal_init_(module: torch.nn.Module, std: float, generator: torch.Generator) -> None:
    """Re-draw weights as BERT initialises them: Linear/Embedding ~ N(0, std), biases 0, LayerNorm 1/0.

    This is the "weights randomly sampled from normal distribution" configuration
    of Kovaleva et al. §4.3 when applied to the whole model.
    """
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, torch.nn.Linear):
                m.weight.normal_(0.0, std, generator=generator)
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, torch.nn.Embedding):
                m.weight.normal_(0.0, std, generator=generator)
                if m.padding_idx is not None:
                    m.weight[m.padding_idx].zero_()
            elif isinstance(m, torch.nn.LayerNorm):
                if m.weight is not None:
                    m.weight.fill_(1.0)
                if m.bias is not None:
                    m.bias.zero_()


def head_modules(classifier: torch.nn.Module) -> list[torch.nn.Module]:
    """The modules outside the encoder (for BERT: dropout and the linear ``classifier``)."""
    prefix = classifier.base_model_prefix
    return [m for name, m in classifier.named_children() if name != prefix]


def build_classifier(base: LoadedModel, task: str | TaskSpec, init: str, seed: int) -> torch.nn.Module:
    """A sequence classifier for ``task`` on top of ``base``'s architecture, initialised as ``init``.

    ``"pretrained"`` and ``"pretrained_ft"`` copy the pre-trained encoder (pooler
    included) and draw a new head; ``"random_ft"`` re-draws every weight. The
    draw is seeded by ``seed`` alone (a private generator), so it is
    reproducible whatever else used the global RNG.
    """
    from transformers import AutoModelForSequenceClassification

    spec = task_spec(task)
    check_init(init)
    config = copy.deepcopy(base.model.config)
    config.num_labels = spec.num_labels
    config.problem_type = "regression" if spec.is_regression else "single_label_classification"
    if spec.labels is not None:
        config.id2label = dict(enumerate(spec.labels))
        config.label2id = {v: k for k, v in config.id2label.items()}
    else:
        config.id2label, config.label2id = {0: "score"}, {"score": 0}
    with torch.random.fork_rng(devices=[]):  # from_config's own initialisation is overwritten below
        classifier = AutoModelForSequenceClassification.from_config(config, attn_implementation="eager")
    std = float(getattr(config, "initializer_range", 0.02))
    generator = torch.Generator().manual_seed(int(seed))
    if init == "random_ft":
        normal_init_(classifier, std, generator)
    else:
        encoder = classifier.base_model
        missing, unexpected = encoder.load_state_dict(base.model.state_dict(), strict=False)
        if unexpected or [k for k in missing if not k.endswith("position_ids")]:
            raise ModelError(
                f"the encoder of {base.name} does not fit a sequence classifier: "
                f"missing {missing[:5]}, unexpected {unexpected[:5]}"
            )
        for m in head_modules(classifier):
            normal_init_(m, std, generator)
    classifier.to(next(base.model.parameters()).device)
    classifier.eval()
    return classifier


def check_init(init: str) -> str:
    if init not in INITS:
        raise ParameterError(f"unknown initialisation {init!r}; choose one of: {', '.join(INITS)}")
    return init


# ---------------------------------------------------------------------------------------------
# encoding and batching
# ---------------------------------------------------------------------------------------------
@dataclass
class EncodedSet:
    """Tokenised examples: per-example id lists and the gold labels."""

    input_ids: list[list[int]]
    token_type_ids: list[list[int]]
    labels: np.ndarray
    regression: bool

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def lengths(self) -> np.ndarray:
        return np.fromiter((len(x) for x in self.input_ids), dtype=np.int64, count=len(self.input_ids))


def encode_examples(tokenizer: Any, examples: Sequence[Example], spec: TaskSpec, max_length: int) -> EncodedSet:
    """``[CLS] a [SEP] (b [SEP])`` WordPiece ids, truncated longest-first to ``max_length`` (as BERT's GLUE code)."""
    if not examples:
        raise ParameterError(f"no {spec.name} examples to encode")
    a = [e.text_a for e in examples]
    b = [e.text_b or "" for e in examples] if spec.is_pair else None
    enc = tokenizer(a, b, truncation=True if b is None else "longest_first", max_length=max_length,
                    return_token_type_ids=True)
    dtype = np.float32 if spec.is_regression else np.int64
    labels = np.asarray([e.label for e in examples], dtype=dtype)
    return EncodedSet(list(enc["input_ids"]), list(enc["token_type_ids"]), labels, spec.is_regression)


def collate(data: EncodedSet, idx: Sequence[int], pad_id: int) -> Batch:
    """The examples ``idx`` padded to the longest of them, with their labels: one :class:`~attnbook.engine.inputs.Batch`."""
    ids, mask = pad_rows([data.input_ids[i] for i in idx], pad_id)
    types, _ = pad_rows([data.token_type_ids[i] for i in idx], 0)
    return Batch(ids, mask, types, torch.from_numpy(data.labels[np.asarray(idx)]))


def start_at_mean(classifier: torch.nn.Module, labels: np.ndarray) -> None:
    """Set a regression head's output bias to the mean training score (``regression_bias``)."""
    head = classifier.classifier
    if head.out_features != 1:
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
# prediction and evaluation
# ---------------------------------------------------------------------------------------------
def _task_of(classifier: LoadedModel, task: str | TaskSpec | None) -> TaskSpec:
    if task is not None:
        return task_spec(task)
    if "task" not in classifier.extra:
        raise ParameterError("this model does not say which task it classifies; pass task=")
    return task_spec(classifier.extra["task"])


def predict_logits(
    classifier: LoadedModel,
    examples: Sequence[Example] | GlueSplit,
    *,
    task: str | TaskSpec | None = None,
    batch_size: int = 64,
    max_length: int | None = None,
    progress: bool = False,
) -> np.ndarray:
    """The classifier's outputs ``logits[example, label]`` (STS-B: ``[example, 1]`` scores), in input order.

    Runs in eval mode (no dropout), batches sorted by length to save padding.
    """
    from tqdm.auto import tqdm

    spec = _task_of(classifier, task)
    exs = examples.examples if isinstance(examples, GlueSplit) else list(examples)
    max_length = max_length or int(classifier.extra.get("max_length", 128))
    data = encode_examples(classifier.tokenizer, exs, spec, max_length)
    model = classifier.model
    was_training = model.training
    model.eval()
    order = np.argsort(data.lengths, kind="stable")
    out = np.zeros((len(data), spec.num_labels), dtype=np.float32)
    device = next(model.parameters()).device
    pad_id = classifier.tokenizer.pad_token_id or 0
    try:
        with torch.inference_mode():
            starts = range(0, len(order), batch_size)
            for s in tqdm(starts, desc=f"evaluating {spec.name}", disable=not progress, leave=False):
                idx = order[s : s + batch_size]
                logits = model(**collate(data, idx, pad_id).to(device).inputs).logits
                out[idx] = logits.float().cpu().numpy()
    finally:
        model.train(was_training)
    return out


def metrics_from_logits(task: str | TaskSpec, logits: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """GLUE metrics plus ``score`` (Kovaleva's Table 1 number, x 100), ``n`` and, for classification,
    ``top_class_share``: the share of examples given the most frequent prediction (1.0 = a constant
    classifier, as the untrained heads of Table 1 are)."""
    spec = task_spec(task)
    pred = predictions_from_logits(spec, logits)
    m = glue_metrics(spec, pred, labels)
    m["score"] = task_score(spec, m)
    m["n"] = int(len(labels))
    if not spec.is_regression:
        m["top_class_share"] = float(np.bincount(pred, minlength=spec.num_labels).max() / len(pred))
    return m


def evaluate(
    classifier: LoadedModel,
    examples: Sequence[Example] | GlueSplit,
    batch_size: int = 64,
    *,
    task: str | TaskSpec | None = None,
    max_length: int | None = None,
    progress: bool = False,
) -> dict[str, float]:
    """Score ``classifier`` on ``examples``: GLUE metrics (fractions), ``score`` (x 100) and ``n``."""
    spec = _task_of(classifier, task)
    exs = examples.examples if isinstance(examples, GlueSplit) else list(examples)
    logits = predict_logits(classifier, exs, task=spec, batch_size=batch_size, max_length=max_length,
                            progress=progress)
    labels = np.asarray([e.label for e in exs])
    return metrics_from_logits(spec, logits, labels)


# ---------------------------------------------------------------------------------------------
# checkpoint cache
# ---------------------------------------------------------------------------------------------


















# ---------------------------------------------------------------------------------------------
# the public entry point
# ---------------------------------------------------------------------------------------------
_FILE_SHA: dict[tuple, str] = {}


def _file_checksum(path: Path) -> str:
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _FILE_SHA:
        _FILE_SHA[key] = sha256_file(path)
    return _FILE_SHA[key]


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
        "code": CODE_VERSION,
        "model": base.key,
        "task": spec.folder,
        "init": init,
        "seed": int(seed),
    }
    if init != "pretrained":
        train_file = task_path(spec, "train")
        parts.update(
            train_sha256=_file_checksum(train_file),
            train_sample_seed=TRAIN_SAMPLE_SEED,
            params=params.for_task(spec).training_parts(),
            fraction=round(float(fraction), 6),
        )
    return parts


def _classifier(model: torch.nn.Module, base: LoadedModel, spec: TaskSpec, init: str, seed: int,
                params: FinetuneParams, key: str, path: Path | None, extra: Mapping[str, Any]) -> LoadedModel:
    return LoadedModel(
        model=model,
        tokenizer=base.tokenizer,
        name=f"{base.name} / {spec.name} / {init} / seed {seed}",
        path=path,
        fingerprint=key[:16],
        revision=base.revision,
        extra={"task": spec.name, "init": init, "seed": int(seed), "max_length": params.max_length,
               "base_fingerprint": base.fingerprint, "checkpoint_key": key, **extra},
    )


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
    save_at: Iterable[float] = (),
    use_cache: bool = True,
    evaluate_dev: bool = True,
    progress: bool = True,
    on_step: Callable[[int, float], None] | None = None,
) -> tuple[LoadedModel, dict[str, Any]]:
    """A classifier for ``task`` initialised as ``init`` (and fine-tuned unless ``"pretrained"``), with its dev metrics.

    Returns ``(classifier, metrics)``: ``classifier`` is a :class:`LoadedModel`
    whose ``model`` is a ``BertForSequenceClassification`` (``extra`` records
    task, init, seed, max_length, the training log); ``metrics`` holds the GLUE
    metrics on the (capped) dev set, ``score`` as in Kovaleva's Table 1 and
    ``n``, or is empty when ``evaluate_dev`` is false.

    ``fraction`` < 1 returns the intermediate checkpoint after that share of the
    updates (Michel §6); ``save_at`` lists further shares to checkpoint while
    training (each cached under its own key). A cached checkpoint is loaded
    instead of training; ``use_cache=False`` neither reads nor writes the cache.
    """
    spec = task_spec(task)
    check_init(init)
    p = FinetuneParams.from_mapping(params).for_task(spec)
    base = base_encoder(model)
    fractions = _check_fractions([fraction])
    extra: dict[str, Any] = {}

    if init == "pretrained":  # Kovaleva's "pre-trained" column: untrained head, no fine-tuning
        key = cache.key(checkpoint_parts(base, spec, init, p, seed))
        net = build_classifier(base, spec, init, seed)
        clf = _classifier(net, base, spec, init, seed, p, key, None, {"train_log": None})
    else:
        key = cache.key(checkpoint_parts(base, spec, init, p, seed, fraction))
        also = [cache.key(checkpoint_parts(base, spec, init, p, seed, f)) for f in _check_fractions(save_at)]
        hit = None
        if use_cache and all((checkpoints_root() / k / COMPLETE_FILE).exists() for k in also):
            hit = load_checkpoint(key)
        if hit is not None:
            net, meta = hit
            net.to(next(base.model.parameters()).device)
            extra = {"train_log": meta.get("train_log"), "step": meta.get("step"), "n_steps": meta.get("n_steps")}
            clf = _classifier(net, base, spec, init, seed, p, key, checkpoints_root() / key, extra)
        else:
            clf = _train_and_cache(base, spec, init, p, seed, fractions[0], save_at, use_cache, progress, on_step)
    metrics: dict[str, Any] = {}
    if evaluate_dev:
        metrics = dev_metrics(clf, spec, p, use_cache=use_cache, progress=progress)
    return clf, metrics


def _train_and_cache(
    base: LoadedModel, spec: TaskSpec, init: str, p: FinetuneParams, seed: int, fraction: float,
    save_at: Iterable[float], use_cache: bool, progress: bool, on_step: Callable[[int, float], None] | None,
) -> LoadedModel:
    """Fine-tune once, checkpointing every requested share of the updates; return the ``fraction`` one.

    With the cache on, training always runs to the end (the final model is
    cached too); without it, training stops at ``fraction``.
    """
    train = load_split(spec, "train", cap=p.train_cap, seed=TRAIN_SAMPLE_SEED)
    data = encode_examples(base.tokenizer, train.examples, spec, p.max_length)
    total = n_updates(len(data), p)
    wanted = _check_fractions([*save_at, fraction, 1.0] if use_cache else [fraction])
    at_step: dict[int, list[float]] = {}
    for f in wanted:
        at_step.setdefault(_step_of(f, total), []).append(f)
    net = build_classifier(base, spec, init, seed)
    if spec.is_regression and p.regression_bias:
        start_at_mean(net, data.labels)
    result: dict[str, LoadedModel] = {}

    def on_save(step: int, log: TrainLog) -> None:
        for f in at_step[step]:
            parts = checkpoint_parts(base, spec, init, p, seed, f)
            key = cache.key(parts)
            info = {"train_log": log.as_dict(), "step": step, "n_steps": total}
            folder = save_checkpoint(net, key, {"parts": parts, "n_train_total": train.n_total, **info}) \
                if use_cache else None
            if f == fraction:
                snapshot = copy.deepcopy(net) if step < total else net
                result["clf"] = _classifier(snapshot, base, spec, init, seed, p, key, folder, info)

    train_classifier(
        net, data, p, seed, pad_id=base.tokenizer.pad_token_id or 0,
        save_steps=at_step.keys(), on_save=on_save, on_step=on_step, progress=progress,
        stop_after=None if use_cache else max(at_step),
        desc=f"fine-tuning {spec.name} ({init}, seed {seed})",
    )
    return result["clf"]


def dev_metrics(
    classifier: LoadedModel, task: str | TaskSpec, params: Mapping[str, Any] | FinetuneParams, *,
    use_cache: bool = True, progress: bool = False,
) -> dict[str, Any]:
    """Metrics of ``classifier`` on ``task``'s dev set (capped to ``params.dev_cap``); dev logits are cached."""
    spec = task_spec(task)
    p = FinetuneParams.from_mapping(params)
    dev = load_split(spec, "dev", cap=p.dev_cap, seed=DEV_SAMPLE_SEED)
    parts = {
        "code": CODE_VERSION,
        "classifier": classifier.key,
        "task": spec.name,
        "dev_sha256": _file_checksum(dev.path),
        "dev_cap": p.dev_cap,
        "dev_sample_seed": DEV_SAMPLE_SEED,
        "max_length": p.max_length,
    }

    def compute() -> dict[str, np.ndarray]:
        logits = predict_logits(classifier, dev, task=spec, batch_size=p.eval_batch_size,
                                max_length=p.max_length, progress=progress)
        return {"logits": logits, "labels": dev.labels}

    arrays = cache.cached_arrays("glue-eval", parts, compute, enabled=use_cache)
    out: dict[str, Any] = metrics_from_logits(spec, arrays["logits"], arrays["labels"])
    out.update(score_interval(spec, arrays["logits"], arrays["labels"]))
    out["n_dev_total"] = dev.n_total
    return out


#: Bootstrap resamples (and their seed) of :func:`score_interval`.
SCORE_RESAMPLES = 2000
SCORE_SEED = 0


def constant_score(task: str | TaskSpec, labels: np.ndarray) -> float:
    """The best Table 1 score (x 100) a constant predictor gets on these examples: majority-class accuracy,
    always-positive F1 (MRPC, QQP), and 0 for Pearson r (STS-B: a constant has no correlation)."""
    spec = task_spec(task)
    if spec.is_regression:
        return 0.0
    labels = np.asarray(labels)
    return max(task_score(spec, glue_metrics(spec, np.full(labels.shape, i), labels)) for i in range(spec.num_labels))


def score_interval(task: str | TaskSpec, logits: np.ndarray, labels: np.ndarray, *,
                   n_resamples: int = SCORE_RESAMPLES, seed: int = SCORE_SEED) -> dict[str, Any]:
    """The Table 1 score's 95% interval over the dev examples and whether the classifier learned its task.

    ``score_low``/``score_high``: exact (Clopper-Pearson) for accuracy, the percentile bootstrap over
    examples for F1 and Pearson r; ``constant_score``: :func:`constant_score` on the same examples;
    ``learned``: the interval lies above the constant predictor's score, so the analyses of a
    fine-tuned classifier are about a model that learned something rather than about a constant.
    """
    from attnbook.data.glue_metrics import TABLE1_METRIC, table1_scores
    from attnbook.stats import bootstrap_indices, percentile_interval, proportion_interval

    spec = task_spec(task)
    labels = np.asarray(labels)
    pred = predictions_from_logits(spec, logits)
    if TABLE1_METRIC[spec.name] == "accuracy":
        lo, hi = proportion_interval(int(np.sum(pred == labels)), len(labels))
        lo, hi = 100 * lo, 100 * hi
    else:
        scores = np.concatenate([table1_scores(spec, pred[idx], labels[idx])  # [resample]
                                 for idx in bootstrap_indices(len(labels), n_resamples, seed)])
        lo, hi = (float(v) for v in percentile_interval(np.nan_to_num(scores)))
    floor = constant_score(spec, labels)
    return {"score_low": float(lo), "score_high": float(hi), "constant_score": floor, "learned": bool(lo > floor)}


# ---------------------------------------------------------------------------------------------- several at once


def cpu_seconds() -> float:
    """CPU seconds of this process and of its finished child processes (the workers of :func:`train_checkpoints`)."""
    import os

    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def cached_checkpoint(base: LoadedModel, task: str, init: str, params: Mapping[str, Any] | FinetuneParams,
                      seed: int, save_at: Iterable[float] = ()) -> bool:
    """Whether the classifier ``(task, init, seed)`` and its ``save_at`` snapshots are all in the cache."""
    spec = task_spec(task)
    p = FinetuneParams.from_mapping(params).for_task(spec)
    fractions = _check_fractions([1.0, *save_at])
    return all((checkpoints_root() / cache.key(checkpoint_parts(base, spec, init, p, seed, f)) / COMPLETE_FILE).exists()
               for f in fractions)


def _train_in_worker(job: dict) -> tuple[str, str, int]:
    torch.set_num_threads(1)  # one core per worker: the workers share the machine's cores
    get_finetuned(job["model"], job["task"], job["init"], job["params"], job["seed"], save_at=job["save_at"],
                  evaluate_dev=False, progress=False)
    return job["task"], job["init"], job["seed"]


def train_checkpoints(model: str, jobs: Sequence[tuple[str, str, int]], params: Mapping[str, Any], *,
                      workers: int = 1, use_cache: bool = True) -> list[tuple[str, str, int]]:
    """Train every ``(task, init, seed)`` classifier of ``jobs`` whose checkpoint (with the recipe's ``save_at``
    snapshots) is not cached yet, ``workers`` at a time, and cache them; returns the jobs it trained.

    With ``workers`` > 1 each job runs in a fresh process on one thread (``model`` must then be loadable by name
    there: the embedded model, a folder or a hub name). On two cores two one-thread runs side by side train
    faster than one run on two threads; each run seeds its own generators, so a job trains the same classifier in a
    worker as in this process up to floating-point summation order. The chapters then load the checkpoints from the
    cache (:func:`get_finetuned`). Without the cache (``use_cache=False``) nothing is trained ahead. If the worker
    processes cannot start, the jobs are trained here one after the other, with a warning."""
    if not use_cache:
        return []
    base = base_encoder(model)
    save_at = tuple(params.get("save_at", ()))
    todo = [(t, i, s) for t, i, s in dict.fromkeys(jobs) if i != "pretrained"
            and not cached_checkpoint(base, t, i, params, s, save_at)]
    shipped = [{"model": model, "task": t, "init": i, "seed": s, "params": dict(params), "save_at": save_at}
               for t, i, s in todo]
    if workers > 1 and len(todo) > 1:
        import multiprocessing
        import warnings
        from concurrent.futures import ProcessPoolExecutor

        # longest first, so the last worker does not finish far behind the others
        shipped.sort(key=lambda j: -_job_cost(j))
        try:
            with ProcessPoolExecutor(max_workers=min(workers, len(todo)),
                                     mp_context=multiprocessing.get_context("spawn")) as pool:
                return list(pool.map(_train_in_worker, shipped))
        except Exception as exc:  # noqa: BLE001 - workers could not start or died: train here instead
            warnings.warn(f"could not fine-tune in {workers} processes ({exc!r}); training one after the other",
                          RuntimeWarning, stacklevel=2)
            todo = [(t, i, s) for t, i, s in todo if not cached_checkpoint(base, t, i, params, s, save_at)]
            shipped = [j for j in shipped if (j["task"], j["init"], j["seed"]) in set(todo)]
    for job in shipped:
        get_finetuned(base, job["task"], job["init"], params, job["seed"], save_at=save_at, evaluate_dev=False,
                      progress=False)
    return [(j["task"], j["init"], j["seed"]) for j in shipped]


def _job_cost(job: dict) -> float:
    """Training examples x epochs of a job (its relative cost, for scheduling)."""
    from attnbook.data.glue import load_split

    p = FinetuneParams.from_mapping(job["params"]).for_task(task_spec(job["task"]))
    n = len(load_split(job["task"], "train", cap=p.train_cap, seed=TRAIN_SAMPLE_SEED))
    return n * float(p.epochs)
