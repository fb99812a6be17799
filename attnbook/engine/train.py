"""The one training loop: every model the book trains goes through :func:`fit`.

GLUE fine-tuning (Kovaleva Table 1, the classifiers of chapters 4-6), Niven & Kao's pairwise BERT
and their BoV/BiLSTM baselines, the MLM head fitted for Clark §3.2's gradients, Clark §5's probing
classifiers and the pattern CNN of Kovaleva §4.1 differ in their data, their loss and their
:class:`Recipe`, never in the loop. A recipe says:

* the optimiser: AdamW (Loshchilov & Hutter) with decoupled weight decay on every parameter but
  biases and LayerNorm weights (:func:`param_groups`, as in BERT's fine-tuning code), ``adam_eps``,
  and the fused kernel where torch has one (``fused``: the same update, less overhead per step);
* the learning-rate schedule: ``"linear"`` (a linear warm-up over the first ``warmup`` share of the
  updates, then linear decay to zero: :func:`lr_factor`, Devlin et al.), ``"cosine"`` (cosine
  annealing over the epochs, stepped once per epoch) or ``"constant"``; ``plateau_factor``
  multiplies the learning rate after every epoch whose evaluation is worse than the one before
  (Niven & Kao's schedule for their word baselines);
* gradient clipping (``max_grad_norm``), and which epoch's parameters are kept (``select``: the
  last, or the one with the best evaluation).

:func:`fit` takes the batches epoch by epoch (so the caller decides the order and its seed), a
``loss_fn(model, batch)`` returning the loss (or the loss and per-batch counts to add up, e.g.
``{"n": examples, "correct": right}``), and optional callbacks: ``evaluate(model)`` after each epoch,
``on_step(step, loss)``, and ``on_save(step, log)`` at the updates listed in ``save_steps``
(checkpoints). It returns a :class:`TrainLog`.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import torch

from attnbook.core.errors import ModelError, ParameterError

SCHEDULES = ("linear", "cosine", "constant")


@dataclass(frozen=True)
class Recipe:
    """How to train: optimiser, learning-rate schedule, clipping and which epoch to keep (module doc)."""

    lr: float
    weight_decay: float = 0.0
    warmup: float = 0.0
    schedule: str = "linear"
    plateau_factor: float | None = None
    max_grad_norm: float | None = None
    adam_eps: float = 1e-8
    fused: bool = True
    select: str = "last"

    def __post_init__(self) -> None:
        if not self.lr > 0:
            raise ParameterError(f"lr must be positive, got {self.lr}")
        if not 0.0 <= self.warmup < 1.0:
            raise ParameterError(f"warmup is a share of the updates in [0, 1), got {self.warmup}")
        if self.schedule not in SCHEDULES:
            raise ParameterError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.select not in ("last", "best"):
            raise ParameterError(f"select must be 'last' or 'best', got {self.select!r}")
        if self.plateau_factor is not None and not 0 < self.plateau_factor < 1:
            raise ParameterError(f"plateau_factor must lie in (0, 1), got {self.plateau_factor}")


def lr_factor(step: int, total: int, warmup: float) -> float:
    """Learning-rate multiplier of update ``step`` (0-based) of ``total``: linear warm-up over the first
    ``round(warmup * total)`` updates (none when that is 0), then linear decay towards 0."""
    n_warm = int(round(warmup * total))
    if step < n_warm:
        return (step + 1) / n_warm
    return max(0.0, (total - step) / max(1, total - n_warm))


#: normalisation layers whose parameters get no weight decay, whatever they are called (ModernBERT's ``norm``,
#: ``attn_norm``, ``mlp_norm``, ``final_norm`` are LayerNorms without "LayerNorm" in their names)
_NORM_TYPES: tuple[type, ...] = tuple(t for t in (torch.nn.LayerNorm, getattr(torch.nn, "RMSNorm", None)) if t)


def param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict]:
    """AdamW groups: decay on weights, none on biases and normalisation layers (LayerNorm by name, as BERT's code,
    or any ``nn.LayerNorm``/``nn.RMSNorm`` module); frozen parameters left out."""
    norms = {id(p) for m in model.modules() if isinstance(m, _NORM_TYPES) for p in m.parameters(recurse=False)}
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        spared = name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name or id(p) in norms
        (no_decay if spared else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def make_optimizer(model: torch.nn.Module, recipe: Recipe) -> torch.optim.Optimizer:
    """AdamW over :func:`param_groups` (fused where torch supports it and the recipe asks for it)."""
    groups = param_groups(model, recipe.weight_decay)
    if not any(g["params"] for g in groups):
        raise ParameterError("the model has no trainable parameters")
    if recipe.fused:
        try:
            return torch.optim.AdamW(groups, lr=recipe.lr, eps=recipe.adam_eps, fused=True)
        except (RuntimeError, TypeError, ValueError):  # pragma: no cover - devices or versions without it
            pass
    return torch.optim.AdamW(groups, lr=recipe.lr, eps=recipe.adam_eps)


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Temporarily set torch's intra-op thread count (``0``/``None``: leave it).

    Training steps of small models are many small operations, for which intra-op threads cost more
    in synchronisation than they save (on two cores one thread trained the quick profile's ARCT
    models about twice as fast), while large batched forward passes do gain from them.
    """
    if not n:
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(old)


@dataclass
class TrainLog:
    """What happened: one loss and learning rate per update, per-epoch history, totals of the batch counts."""

    n_steps: int = 0
    losses: list[float] = field(default_factory=list)
    lrs: list[float] = field(default_factory=list)
    history: list[dict] = field(default_factory=list)
    best_epoch: int = 0
    seconds: float = 0.0
    n_train: int = 0
    counts: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


LossFn = Callable[[torch.nn.Module, Any], "torch.Tensor | tuple[torch.Tensor, Mapping[str, float]]"]


def fit(
    model: torch.nn.Module,
    epochs: Iterable[Iterable[Any]],
    loss_fn: LossFn,
    recipe: Recipe,
    *,
    total_steps: int | None = None,
    n_epochs: int | None = None,
    evaluate: Callable[[torch.nn.Module], float] | None = None,
    on_step: Callable[[int, float], None] | None = None,
    save_steps: Iterable[int] = (),
    on_save: Callable[[int, TrainLog], None] | None = None,
    stop_after: int | None = None,
    seed: int | None = None,
    threads: int | None = None,
    n_train: int = 0,
    progress: bool = False,
    desc: str = "training",
) -> TrainLog:
    """Train ``model`` in place; returns the :class:`TrainLog` (module doc).

    ``epochs`` yields, per epoch, the batches in training order. ``total_steps`` (the linear
    schedule's length; default: the number of batches, when ``epochs`` is a list of lists) and
    ``n_epochs`` (the cosine schedule's) may be given when ``epochs`` is lazy. ``stop_after`` ends
    training after that many updates while keeping the schedule of the whole run. ``seed``, when
    given, seeds torch's generator for the loop (dropout) without touching the caller's generator.
    With ``recipe.select == "best"`` the parameters of the epoch with the highest ``evaluate`` are
    restored at the end (ties keep the earlier epoch).
    """
    if recipe.select == "best" and evaluate is None:
        raise ParameterError("select='best' needs an evaluate callback")
    if recipe.schedule == "linear" and total_steps is None:
        try:
            total_steps = sum(len(e) for e in epochs)  # type: ignore[arg-type]
        except TypeError as exc:
            raise ParameterError("give total_steps when the epochs are not lists") from exc
    if recipe.schedule == "cosine" and n_epochs is None:
        try:
            n_epochs = len(epochs)  # type: ignore[arg-type]
        except TypeError as exc:
            raise ParameterError("give n_epochs when the epochs are not a list") from exc
    rng = torch.random.fork_rng(devices=[]) if seed is not None else contextlib.nullcontext()
    with rng, torch_threads(threads):
        if seed is not None:
            torch.manual_seed(int(seed))
        return _loop(model, epochs, loss_fn, recipe, total_steps, n_epochs, evaluate, on_step, set(save_steps),
                     on_save, stop_after, n_train, progress, desc)


def _loop(model, epochs, loss_fn, recipe, total_steps, n_epochs, evaluate, on_step, save_steps, on_save, stop_after,
          n_train, progress, desc) -> TrainLog:
    from tqdm.auto import tqdm

    optimizer = make_optimizer(model, recipe)
    per_step = per_epoch = None
    if recipe.schedule == "linear":
        per_step = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s: lr_factor(s, int(total_steps), recipe.warmup))
    elif recipe.schedule == "cosine":
        per_epoch = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(1, int(n_epochs)))
    params = [p for p in model.parameters() if p.requires_grad]  # clipped in the model's order
    log = TrainLog(n_train=n_train)
    best_metric, best_state, last_metric = float("-inf"), None, None
    start = time.perf_counter()
    bar = tqdm(total=total_steps, desc=desc, disable=not progress, leave=False)
    step = 0
    try:
        for epoch, batches in enumerate(epochs, start=1):
            model.train()
            sums: dict[str, float] = {}
            loss_sum = weight_sum = 0.0
            for batch in batches:
                out = loss_fn(model, batch)
                loss, counts = (out if isinstance(out, tuple) else (out, {}))
                if not torch.isfinite(loss):
                    raise ModelError(f"training diverged at update {step + 1}: loss {loss.item()}; lower the lr")
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if recipe.max_grad_norm:
                    torch.nn.utils.clip_grad_norm_(params, recipe.max_grad_norm)
                log.lrs.append(float(optimizer.param_groups[0]["lr"]))
                optimizer.step()
                if per_step is not None:
                    per_step.step()
                step += 1
                value = float(loss.detach())
                log.losses.append(value)
                log.n_steps = step
                weight = float(counts.get("n", 1.0))
                loss_sum += value * weight
                weight_sum += weight
                for k, v in counts.items():
                    sums[k] = sums.get(k, 0.0) + float(v)
                bar.update(1)
                if on_step is not None:
                    on_step(step, value)
                if step in save_steps and on_save is not None:
                    log.seconds = time.perf_counter() - start
                    model.eval()
                    on_save(step, log)
                    model.train()
                if stop_after is not None and step >= stop_after:
                    break
            if per_epoch is not None:
                per_epoch.step()
            entry = {"epoch": epoch, "loss": loss_sum / weight_sum if weight_sum else float("nan"), **sums}
            for k, v in sums.items():
                log.counts[k] = log.counts.get(k, 0.0) + v
            if evaluate is not None:
                metric = float(evaluate(model))
                entry["metric"] = metric
                if recipe.plateau_factor is not None and last_metric is not None and metric < last_metric:
                    for g in optimizer.param_groups:
                        g["lr"] *= recipe.plateau_factor
                last_metric = metric
                if recipe.select == "best" and metric > best_metric:
                    best_metric, log.best_epoch, best_state = metric, epoch, _trainable_state(model)
            if recipe.select == "last":
                log.best_epoch = epoch
            log.history.append(entry)
            if stop_after is not None and step >= stop_after:
                break
    finally:
        bar.close()
        model.eval()
    if best_state is not None:
        model.load_state_dict(best_state, strict=False)
    log.seconds = time.perf_counter() - start
    return log


def _trainable_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Copies of the parameters that train and of every buffer (e.g. batch-norm statistics)."""
    names = {n for n, p in model.named_parameters() if p.requires_grad}
    names |= {n for n, _ in model.named_buffers()}
    return {k: v.detach().clone() for k, v in model.state_dict().items() if k in names}


def epochs_of(make_epoch: Callable[[int], Sequence[Any]], n_epochs: int) -> list[Sequence[Any]]:
    """``[make_epoch(0), make_epoch(1), ...]``: a convenience for callers whose order is cheap to draw up front."""
    return [make_epoch(e) for e in range(n_epochs)]
