"""Fine-tuning and the checkpoint cache, on tiny random BERTs and fixture tasks written here."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import torch
from conftest import make_tiny_bert

from attnbook.chapters.profiles.glue import FINETUNE_PROFILES
from attnbook.core import cache
from attnbook.core.cache import key as cache_key
from attnbook.core.errors import MissingDataError, ParameterError
from attnbook.data.glue import load_split
from attnbook.engine.checkpoints import (
    COMPLETE_FILE,
    CheckpointCorruptWarning,
    checkpoints_root,
    load_checkpoint,
    save_checkpoint,
)
from attnbook.engine.classifiers import build_classifier
from attnbook.engine.evaluate import constant_score, evaluate, metrics_from_logits, predict_logits, score_interval
from attnbook.engine.finetune import (
    FinetuneParams,
    checkpoint_parts,
    get_finetuned,
    n_updates,
    start_at_mean,
    training_batches,
)
from attnbook.engine.models import check_attentions, wrap_model

POS = ["good", "great", "fine", "nice", "happy", "love"]
NEG = ["bad", "awful", "poor", "sad", "hate", "dull"]
FILLER = ["the", "film", "a", "story", "is", "was", "really", "this", "plot", "and"]


def _sst_lines(n: int, seed: int) -> list[str]:
    """A separable sentiment task: the label is whether a positive cue word occurs."""
    rng = np.random.default_rng(seed)
    lines = ["sentence\tlabel"]
    for i in range(n):
        label = i % 2
        words = list(rng.choice(FILLER, size=4)) + [str(rng.choice(POS if label else NEG))]
        rng.shuffle(words)
        lines.append(" ".join(words) + f"\t{label}")
    return lines


def _sts_lines(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"
    lines = [header]
    for i in range(n):
        a = " ".join(rng.choice(FILLER, size=4))
        score = float(rng.integers(0, 6))
        b = a if score >= 3 else " ".join(rng.choice(FILLER, size=4))
        lines.append(f"{i}\tg\tf\t2012\t{i}\tnone\tnone\t{a}\t{b}\t{score:.3f}")
    return lines


@pytest.fixture
def env(tmp_path, monkeypatch):
    """Fixture GLUE data (SST-2, STS-B, RTE dev only) and an empty cache."""
    g = tmp_path / "data" / "glue"
    for folder, files in {
        "SST-2": {"train.tsv": _sst_lines(32, 0), "dev.tsv": _sst_lines(16, 1)},
        "STS-B": {"train.tsv": _sts_lines(24, 0), "dev.tsv": _sts_lines(12, 1)},
        "RTE": {"dev.tsv": ["index\tsentence1\tsentence2\tlabel", "0\ta b\tb\tentailment", "1\tc d\te\tnot_entailment"]},
    }.items():
        (g / folder).mkdir(parents=True)
        for name, lines in files.items():
            (g / folder / name).write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("ATTNBOOK_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path / "cache"))
    return tmp_path


@pytest.fixture
def base(tokenizer):
    return wrap_model(make_tiny_bert(tokenizer, n_layers=2, n_heads=2, hidden=32, seed=0), tokenizer, "tiny")


SMALL = dict(train_cap=None, dev_cap=None, max_length=32, epochs=2, batch_size=8, lr=1e-3, warmup=0.1,
             group_by_length=True, eval_batch_size=16)


class StepCounter:
    def __init__(self):
        self.steps, self.losses = 0, []

    def __call__(self, step, loss):
        self.steps += 1
        self.losses.append(loss)


def _same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


# ---- schedule and batching -------------------------------------------------------------------
def test_training_batches_cover_each_epoch_once():
    lengths = np.random.default_rng(0).integers(3, 60, size=45)
    for group in (False, True):
        batches = training_batches(lengths, 8, n_steps=12, seed=3, group_by_length=group)
        assert len(batches) == 12
        epoch = np.concatenate(batches[:6])  # ceil(45 / 8) = 6 batches per epoch
        assert sorted(epoch.tolist()) == list(range(45))
        again = training_batches(lengths, 8, n_steps=12, seed=3, group_by_length=group)
        assert all(np.array_equal(a, b) for a, b in zip(batches, again))
    padded = lambda bs: sum(len(b) * lengths[b].max() for b in bs)  # noqa: E731
    assert padded(training_batches(lengths, 8, 6, 0, True)) < padded(training_batches(lengths, 8, 6, 0, False))
    assert n_updates(45, FinetuneParams(batch_size=8, epochs=1.5)) == 9


def test_params_from_profiles():
    for name, profile in FINETUNE_PROFILES.items():
        p = FinetuneParams.from_mapping(profile)
        assert p.batch_size == (8 if name == "smoke" else 32)
    assert FinetuneParams.from_mapping(FINETUNE_PROFILES["paper"]).epochs == 3
    with pytest.raises(ParameterError, match="unknown fine-tuning parameter"):
        FinetuneParams.from_mapping({"learning_rate": 1e-5})
    with pytest.raises(ParameterError):
        FinetuneParams(warmup=1.5)


def test_mnli_matched_and_mismatched_share_one_model(base):
    p = FinetuneParams()
    assert checkpoint_parts(base, "MNLI-m", "pretrained", p, 0) == checkpoint_parts(base, "MNLI-mm", "pretrained", p, 0)
    assert checkpoint_parts(base, "QNLI", "pretrained", p, 0) != checkpoint_parts(base, "RTE", "pretrained", p, 0)


def test_the_checkpoint_key_holds_the_code_of_the_training_closure(env, base):
    """A checkpoint is keyed on the code of engine/finetune.py's import closure (the train loop, the classifiers, the
    data readers, the checkpoint files), not on a hand-kept version string; its meta.json still reads as plain JSON."""
    import json

    from attnbook.core import code_keys
    from attnbook.engine import finetune

    covered = code_keys.code_key("attnbook.engine.finetune")
    for module in ("attnbook.engine.train", "attnbook.engine.classifiers", "attnbook.data.glue",
                   "attnbook.engine.checkpoints"):
        assert module in covered.modules
    assert not hasattr(finetune, "CODE_VERSION")
    parts = checkpoint_parts(base, "SST-2", "pretrained_ft", FinetuneParams.from_mapping(SMALL), 0)
    assert parts["code"] == covered.hash == finetune.training_code()
    clf, _ = get_finetuned(base, "SST-2", "pretrained_ft", SMALL, 0, progress=False, evaluate_dev=False)
    meta = json.loads((checkpoints_root() / cache_key(parts) / "meta.json").read_text())
    assert meta["parts"]["code"] == covered.hash and meta["parts"]["task"] == "SST-2"


def test_per_task_train_caps(env, base):
    caps = FinetuneParams.from_mapping({**SMALL, "train_cap": {"SST-2": 16, "default": 8}})
    assert caps.for_task("sst2").train_cap == 16 and caps.for_task("STS-B").train_cap == 8
    with pytest.raises(ParameterError, match="train_cap names no value for RTE"):
        FinetuneParams(train_cap={"SST-2": 4}).for_task("RTE")
    # changing another task's cap leaves this task's checkpoint key alone
    other = FinetuneParams.from_mapping({**SMALL, "train_cap": {"SST-2": 16, "default": 4}})
    key = lambda p, task: cache_key(checkpoint_parts(base, task, "random_ft", p, 0))  # noqa: E731
    assert key(caps, "SST-2") == key(other, "SST-2") and key(caps, "STS-B") != key(other, "STS-B")
    counter = StepCounter()
    clf, _ = get_finetuned(base, "SST-2", "random_ft", caps, 0, on_step=counter, progress=False, evaluate_dev=False)
    assert clf.classifier.train_log["n_train"] == 16 and counter.steps == 4  # 2 epochs x 16 / 8


def test_per_task_recipes_resolve_lr_epochs_and_batch_size(base):
    p = FinetuneParams.from_mapping({**SMALL, "lr": {"RTE": 5e-5, "default": 1e-4},
                                     "epochs": {"MRPC": 2, "default": 1}, "batch_size": {"STS-B": 16, "default": 32}})
    assert (p.for_task("RTE").lr, p.for_task("SST-2").lr) == (5e-5, 1e-4)
    assert (p.for_task("MRPC").epochs, p.for_task("RTE").epochs) == (2, 1)
    assert (p.for_task("STS-B").batch_size, p.for_task("MRPC").batch_size) == (16, 32)
    with pytest.raises(ParameterError, match="lr names no value for RTE"):
        FinetuneParams(lr={"SST-2": 1e-4}).for_task("RTE")
    with pytest.raises(ParameterError, match="lr must be positive"):
        FinetuneParams(lr={"SST-2": 0.0})
    # a task's checkpoint key moves with its own resolved recipe only
    other = FinetuneParams.from_mapping({**SMALL, "lr": {"RTE": 1e-5, "default": 1e-4},
                                         "epochs": {"MRPC": 2, "default": 1}, "batch_size": {"STS-B": 16, "default": 32}})
    key = lambda q, task: cache_key(checkpoint_parts(base, task, "random_ft", q, 0))  # noqa: E731
    assert key(p, "SST-2") == key(other, "SST-2") and key(p, "RTE") != key(other, "RTE")


def test_regression_head_starts_at_the_mean_score(tokenizer):
    net = build_classifier(wrap_model(make_tiny_bert(tokenizer, n_layers=1, n_heads=2, hidden=16, seed=0), tokenizer,
                                      "tiny"), "STS-B", "pretrained", 0)
    start_at_mean(net, np.array([1.0, 2.0, 4.5], dtype=np.float32))
    assert float(net.classifier.bias.detach()) == pytest.approx(2.5)
    clf = build_classifier(wrap_model(make_tiny_bert(tokenizer, n_layers=1, n_heads=2, hidden=16, seed=0), tokenizer,
                                      "tiny"), "SST-2", "pretrained", 0)
    with pytest.raises(ParameterError, match="regression head"):
        start_at_mean(clf, np.array([0, 1]))


def test_bf16_training_runs_and_differs_only_by_precision(env, base):
    counter = StepCounter()
    p = {**SMALL, "bf16": True, "train_cap": 16, "epochs": 1}
    clf, _ = get_finetuned(base, "SST-2", "random_ft", p, 0, on_step=counter, progress=False, evaluate_dev=False)
    assert counter.steps == 2 and all(np.isfinite(counter.losses))
    assert all(t.dtype == torch.float32 for t in clf.model.state_dict().values() if t.is_floating_point())
    fp32 = get_finetuned(base, "SST-2", "random_ft", {**p, "bf16": False}, 0, progress=False, evaluate_dev=False)[0]
    assert clf.key != fp32.key  # precision is part of the recipe, so of the checkpoint key


def test_score_interval_sets_the_score_beside_the_constant_predictor():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, size=400)
    labels[:60] = 1  # a majority class
    const = np.tile([0.0, 1.0], (400, 1)).astype(np.float32)
    floor = constant_score("SST-2", labels)
    assert floor == pytest.approx(100 * max(labels.mean(), 1 - labels.mean()))
    out = score_interval("SST-2", const, labels)
    assert out["constant_score"] == floor and "learned" not in out  # the decision lives in heads_off.learned
    assert out["score_low"] <= 100 * labels.mean() <= out["score_high"]
    # F1 task: always "paraphrase" is the floor; Pearson: 0 is the floor and the bootstrap gives the interval
    assert constant_score("MRPC", labels) == pytest.approx(100 * 2 * labels.mean() / (1 + labels.mean()))
    scores = rng.normal(size=300)
    sts = score_interval("STS-B", (scores + rng.normal(scale=0.5, size=300))[:, None], scores)
    assert sts["constant_score"] == 0.0 and sts["score_low"] < sts["score_high"]


def test_metrics_from_logits_flags_constant_classifiers():
    labels = np.array([0, 1, 1, 1])
    const = metrics_from_logits("MRPC", np.tile([0.3, -0.2], (4, 1)), labels)
    assert const["top_class_share"] == 1.0 and const["f1"] == 0.0 and const["score"] == 0.0 and const["n"] == 4
    mixed = metrics_from_logits("MRPC", np.array([[1, 0], [0, 1], [0, 1], [1, 0]]), labels)
    assert mixed["top_class_share"] == 0.5 and mixed["accuracy"] == 0.75
    assert "top_class_share" not in metrics_from_logits("STS-B", np.array([[1.0], [2.0], [0.5]]), np.array([1.0, 2.5, 0.0]))


# ---- initialisations -------------------------------------------------------------------------
def test_initialisations(base):
    pre = build_classifier(base, "SST-2", "pretrained", seed=0)
    enc = base.model.state_dict()
    assert all(torch.equal(pre.bert.state_dict()[k], v) for k, v in enc.items())
    assert _same_weights(pre, build_classifier(base, "SST-2", "pretrained", seed=0))  # seeded head
    other = build_classifier(base, "SST-2", "pretrained", seed=1)
    assert not torch.equal(pre.classifier.weight, other.classifier.weight)
    assert pre.classifier.weight.shape == (2, 32) and torch.all(pre.classifier.bias == 0)

    rnd = build_classifier(base, "STS-B", "random_ft", seed=0)
    assert rnd.classifier.weight.shape == (1, 32)
    assert _same_weights(rnd, build_classifier(base, "STS-B", "random_ft", seed=0))
    word = rnd.bert.embeddings.word_embeddings.weight
    assert not torch.equal(word, base.model.embeddings.word_embeddings.weight)
    std = base.model.config.initializer_range
    assert word.std().item() == pytest.approx(std, rel=0.05)  # N(0, initializer_range)
    assert torch.all(rnd.bert.encoder.layer[0].output.LayerNorm.weight == 1)
    with pytest.raises(ParameterError):
        build_classifier(base, "SST-2", "finetuned", seed=0)


def test_classifier_keeps_attention_interface(env, base):
    clf, _ = get_finetuned(base, "SST-2", "pretrained", SMALL, 0, evaluate_dev=False, progress=False)
    assert clf.model.config._attn_implementation == "eager"
    check_attentions(clf)  # one [batch, head, query, key] map per layer, through the attention interface
    assert clf.n_layers == 2 and clf.classifier.task == "SST-2"


# ---- training --------------------------------------------------------------------------------
def test_tiny_bert_overfits_a_tiny_task(env, base):
    params = {**SMALL, "epochs": 25, "lr": 3e-3}
    counter = StepCounter()
    clf, dev = get_finetuned(base, "SST-2", "random_ft", params, 0, on_step=counter, progress=False)
    assert counter.steps == n_updates(32, FinetuneParams.from_mapping(params)) == 100
    first, last = np.mean(counter.losses[:8]), np.mean(counter.losses[-8:])
    assert last < 0.2 * first
    train = load_split("SST-2", "train")
    m = evaluate(clf, train, batch_size=16)
    assert m["accuracy"] == 1.0 and m["n"] == 32
    assert dev["n"] == 16 and 0.0 <= dev["accuracy"] <= 1.0 and dev["score"] == 100 * dev["accuracy"]


def test_regression_loss_falls(env, base):
    counter = StepCounter()
    clf, dev = get_finetuned(base, "STS-B", "pretrained_ft", {**SMALL, "epochs": 8}, 0, on_step=counter,
                             progress=False)
    assert np.mean(counter.losses[-3:]) < np.mean(counter.losses[:3])
    assert set(dev) >= {"pearson", "spearman", "score", "n"} and dev["n"] == 12
    logits = predict_logits(clf, load_split("STS-B", "dev"))
    assert logits.shape == (12, 1)


def test_predict_logits_is_order_independent(env, base):
    clf, _ = get_finetuned(base, "SST-2", "pretrained", SMALL, 0, evaluate_dev=False, progress=False)
    exs = load_split("SST-2", "dev").examples
    batched = predict_logits(clf, exs, batch_size=5)
    one_by_one = np.concatenate([predict_logits(clf, [e], batch_size=1) for e in exs])
    np.testing.assert_allclose(batched, one_by_one, atol=1e-5)
    reversed_ = predict_logits(clf, exs[::-1], batch_size=16)
    np.testing.assert_allclose(reversed_[::-1], batched, atol=1e-5)


def test_pretrained_row_needs_no_training_file(env, base):
    counter = StepCounter()
    clf, m = get_finetuned(base, "RTE", "pretrained", SMALL, 0, on_step=counter, progress=False)
    assert counter.steps == 0 and m["n"] == 2 and clf.classifier.train_log is None
    with pytest.raises(MissingDataError, match="attnbook fetch glue"):
        get_finetuned(base, "RTE", "pretrained_ft", SMALL, 0, progress=False)


# ---- the checkpoint cache --------------------------------------------------------------------
def test_cache_is_reused(env, base):
    first = StepCounter()
    clf1, m1 = get_finetuned(base, "SST-2", "pretrained_ft", SMALL, 0, on_step=first, progress=False)
    second = StepCounter()
    clf2, m2 = get_finetuned(base, "SST-2", "pretrained_ft", SMALL, 0, on_step=second, progress=False)
    assert first.steps == 8 and second.steps == 0
    assert _same_weights(clf1.model, clf2.model) and m1 == m2
    assert clf2.classifier.train_log["n_steps"] == 8
    third = StepCounter()  # another seed is another checkpoint
    get_finetuned(base, "SST-2", "pretrained_ft", SMALL, 1, on_step=third, progress=False)
    assert third.steps == 8
    assert len([p for p in checkpoints_root().iterdir() if not p.name.startswith(".")]) == 2


def test_intermediate_checkpoints(env, base):
    counter = StepCounter()
    final, _ = get_finetuned(base, "SST-2", "pretrained_ft", SMALL, 0, save_at=(0.25, 0.5), on_step=counter,
                             progress=False)
    assert counter.steps == 8
    quarter, _ = get_finetuned(base, "SST-2", "pretrained_ft", SMALL, 0, fraction=0.25, on_step=counter,
                               progress=False)
    half, _ = get_finetuned(base, "SST-2", "pretrained_ft", SMALL, 0, fraction=0.5, on_step=counter,
                            progress=False)
    assert counter.steps == 8  # both came from the cache
    assert (quarter.classifier.step, half.classifier.step, final.classifier.step) == (2, 4, 8)
    assert not _same_weights(quarter.model, half.model) and not _same_weights(half.model, final.model)
    # without the cache, training stops at the requested share and writes nothing
    fresh = StepCounter()
    with cache.disabled():
        nocache, _ = get_finetuned(base, "SST-2", "pretrained_ft", SMALL, 5, fraction=0.5,
                                   on_step=fresh, progress=False, evaluate_dev=False)
    assert fresh.steps == 4 and nocache.path is None


def test_reproducible_training(env, base):
    with cache.disabled():
        a, _ = get_finetuned(base, "SST-2", "random_ft", SMALL, 3, progress=False, evaluate_dev=False)
        b, _ = get_finetuned(base, "SST-2", "random_ft", SMALL, 3, progress=False, evaluate_dev=False)
    assert _same_weights(a.model, b.model)


def test_error_while_saving_leaves_no_checkpoint(env, base, monkeypatch):
    import attnbook.engine.checkpoints as ft

    def boom(path):
        raise OSError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(ft, "sha256_file", boom)
        with pytest.raises(OSError, match="disk full"):
            get_finetuned(base, "SST-2", "pretrained_ft", SMALL, 0, progress=False)
    assert list(checkpoints_root().iterdir()) == []  # neither the checkpoint nor its temporary folder
    counter = StepCounter()
    get_finetuned(base, "SST-2", "pretrained_ft", SMALL, 0, on_step=counter, progress=False)
    assert counter.steps == 8


def _key(base, seed=0):
    return cache_key(checkpoint_parts(base, "SST-2", "pretrained_ft", FinetuneParams.from_mapping(SMALL), seed))


def test_corrupt_checkpoint_is_retrained(env, base):
    get_finetuned(base, "SST-2", "pretrained_ft", SMALL, 0, progress=False)
    weights = checkpoints_root() / _key(base) / "model.safetensors"
    blob = bytearray(weights.read_bytes())
    blob[-10] ^= 0xFF
    weights.write_bytes(bytes(blob))
    counter = StepCounter()
    with pytest.warns(CheckpointCorruptWarning, match="fails its checksum"):
        get_finetuned(base, "SST-2", "pretrained_ft", SMALL, 0, on_step=counter, progress=False)
    assert counter.steps == 8
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the retrained checkpoint is whole again
        assert load_checkpoint(_key(base), reference=base.model.state_dict()) is not None


def test_checkpoint_without_marker_is_not_complete(env, base):
    get_finetuned(base, "SST-2", "pretrained_ft", SMALL, 0, progress=False)
    (checkpoints_root() / _key(base) / COMPLETE_FILE).unlink()
    with pytest.warns(CheckpointCorruptWarning):
        assert load_checkpoint(_key(base), reference=base.model.state_dict()) is None


CHILD = textwrap.dedent(
    """
    import sys, time
    import attnbook.engine.checkpoints as ft
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(vocab_size=30522, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=128, num_labels=2)
    model = BertForSequenceClassification(config)   # about 8 MB of weights

    def stall(path):  # called once the weights are on disk, before COMPLETE and the rename
        print("WRITING", flush=True)
        time.sleep(600)

    ft.sha256_file = stall
    ft.save_checkpoint(model, sys.argv[1], {"note": "killed"})
    """
)


def test_killed_writer_leaves_nothing_that_loads(env, base, tmp_path):
    key = "killed-checkpoint"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    proc = subprocess.Popen([sys.executable, str(script), key], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        assert proc.stdout.readline().strip() == "WRITING"
        partial = list(checkpoints_root().glob(f".{key}.tmp-*"))
        assert len(partial) == 1 and (partial[0] / "model.safetensors").stat().st_size > 1_000_000
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert not (checkpoints_root() / key).exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_checkpoint(key) is None  # absent, not half-read
    # the next complete write of that key removes the dead writer's leftovers
    model = build_classifier(base, "SST-2", "pretrained_ft", 0)
    save_checkpoint(model, key, {"note": "ok"})
    assert list(checkpoints_root().glob(f".{key}.tmp-*")) == []
    loaded, meta = load_checkpoint(key)
    assert meta == {"note": "ok"} and _same_weights(loaded, model)


# ---- training and the attention interface ----------------------------------------------------
def test_training_leaves_the_global_rng_alone(env, base):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    with cache.disabled():
        get_finetuned(base, "SST-2", "random_ft", SMALL, 0, progress=False, evaluate_dev=False)
    assert torch.equal(torch.rand(3), expected)


def test_classifier_attention_can_be_replaced_through_the_interface(env, base):
    """Chapters 5-6 disable or mask heads by registering an attention function; the classifier must honour it."""
    from transformers import AttentionInterface
    from transformers.models.bert.modeling_bert import eager_attention_forward

    clf, _ = get_finetuned(base, "SST-2", "pretrained", SMALL, 0, evaluate_dev=False, progress=False)
    seen = []

    def spy(module, query, key, value, attention_mask, **kwargs):
        seen.append(module.layer_idx)
        out, weights = eager_attention_forward(module, query, key, value, attention_mask, **kwargs)
        return out, weights

    AttentionInterface.register("attnbook_test_spy", spy)
    exs = load_split("SST-2", "dev").examples[:4]
    before = predict_logits(clf, exs)
    clf.model.set_attn_implementation("attnbook_test_spy")
    try:
        after = predict_logits(clf, exs)
    finally:
        clf.model.set_attn_implementation("eager")
    assert sorted(set(seen)) == [0, 1]  # every layer's attention went through the registered function
    np.testing.assert_allclose(before, after, atol=1e-6)


def test_recipe_is_the_profile_entry_with_the_chapters_model_and_overrides():
    """Chapters 4-6 and the atlas take their fine-tuning recipe from ``glue.recipe`` (one place), so a papermill
    ``recipe_overrides`` changes sizes alike for all of them; the model and tasks stay chapter parameters."""
    from attnbook.chapters.params import chapter_params
    from attnbook.chapters.profiles import glue

    p5 = chapter_params("05_kovaleva_disabling", "paper", {"model": "embedded",
                                                           "recipe_overrides": {"train_cap": 16, "epochs": 1}})
    r = glue.recipe(p5)
    assert r["model"] == "embedded" and r["train_cap"] == 16 and r["epochs"] == 1
    assert r["lr"] == FINETUNE_PROFILES["paper"]["lr"] and r["tasks"] == FINETUNE_PROFILES["paper"]["tasks"]
    p4 = chapter_params("04_kovaleva_taxonomy", "paper", {"finetune": "smoke"})
    assert glue.recipe(p4)["train_cap"] == FINETUNE_PROFILES["smoke"]["train_cap"]
    with pytest.raises(ParameterError, match="cannot be changed.*train_cap"):
        glue.recipe(p5.replace(recipe_overrides={"tasks": ["RTE"]}))
    with pytest.raises(ParameterError, match="cannot be changed"):
        glue.recipe(p5.replace(recipe_overrides={"learning_rate": 1e-5}))


@pytest.mark.integration
def test_a_worker_killed_mid_fine_tuning_runs_its_job_again_and_leaves_nothing_half_written(env, tmp_path,
                                                                                           monkeypatch):
    """Issue 51: a worker of a two-worker local cluster dies while it writes a classifier (its process ends); the
    job runs again on another worker, no temporary file stays in the cache, and the classifier is the one this process
    trains on its own."""
    import executor_jobs as J
    from planted import plant_bert

    from attnbook.core import executor
    from attnbook.engine import finetune as F
    from attnbook.engine.checkpoints import checkpoints_root

    plant_bert(tmp_path / "hub", n_layers=2, n_heads=2, hidden=32)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    recipe = {**SMALL, "epochs": 2, "save_at": [0.5, 1.0]}
    job = {"model": "bert-base-uncased", "task": "SST-2", "init": "pretrained_ft", "seed": 0, "params": recipe,
           "save_at": recipe["save_at"], "marker": str(tmp_path / "killed")}
    monkeypatch.setenv(executor.SCHEDULER_ENV, "local:2")
    try:
        done = executor.run_jobs(J.train_dies_once, [job], names=["fine-tuning SST-2 (pretrained_ft, seed 0)"])
    finally:
        executor._close("local:2")
    assert (tmp_path / "killed").exists() and done == [("SST-2", "pretrained_ft", 0)]
    assert int((tmp_path / "killed").read_text()) != os.getpid()  # it died in a worker
    assert not [p.name for p in checkpoints_root().rglob("*") if ".tmp-" in p.name]  # nothing half-written stays
    base = F.base_encoder("bert-base-uncased")
    with monkeypatch.context() as m:
        m.setattr(F, "_train_and_cache", lambda *a, **k: pytest.fail("the job's classifier was not cached"))
        clustered, _ = F.get_finetuned(base, "SST-2", "pretrained_ft", recipe, 0, save_at=recipe["save_at"],
                                       evaluate_dev=False)
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path / "serial"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as a worker trains
    try:
        serial, _ = F.get_finetuned(base, "SST-2", "pretrained_ft", recipe, 0, save_at=recipe["save_at"],
                                    evaluate_dev=False)
    finally:
        torch.set_num_threads(threads)
    a, b = clustered.model.state_dict(), serial.model.state_dict()
    assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_classifiers_trained_side_by_side_are_cached_once(env, tmp_path, monkeypatch):
    """Issue 18: chapter 4 fine-tunes Table 1's classifiers ``workers`` at a time in one-thread processes; what
    they cache is what the chapters then load (nothing is trained twice), and a second call trains nothing."""
    from planted import plant_bert

    from attnbook.engine import finetune as F

    plant_bert(tmp_path / "hub", n_layers=2, n_heads=2, hidden=32)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    recipe = {**SMALL, "epochs": 1, "save_at": [0.5, 1.0]}
    jobs = [("SST-2", "pretrained_ft", 0), ("SST-2", "pretrained_ft", 1), ("STS-B", "random_ft", 0),
            ("SST-2", "pretrained", 0)]
    done = F.train_checkpoints("bert-base-uncased", jobs, recipe, workers=2)
    assert sorted(done) == sorted(jobs[:3])  # the untrained classifier needs no training
    base = F.base_encoder("bert-base-uncased")
    assert all(F.cached_checkpoint(base, t, i, recipe, s, recipe["save_at"]) for t, i, s in jobs[:3])
    assert F.train_checkpoints("bert-base-uncased", jobs, recipe, workers=2) == []
    monkeypatch.setattr(F, "_train_and_cache", lambda *a, **k: pytest.fail("retrained a cached classifier"))
    clf, _ = F.get_finetuned(base, "SST-2", "pretrained_ft", recipe, 1, save_at=recipe["save_at"], evaluate_dev=False)
    assert clf.classifier.seed == 1


def test_loaded_checkpoint_computes_what_was_saved(env, base):
    """``load_checkpoint`` skips the random initialisation the stored weights replace: the loaded classifier has
    the saved parameters and buffers and gives the saved model's logits exactly."""
    model = build_classifier(base, "SST-2", "pretrained_ft", 3).eval()
    save_checkpoint(model, "no-init-check", {"note": "ok"})
    loaded, _ = load_checkpoint("no-init-check")
    assert _same_weights(loaded, model)
    assert all(torch.equal(a, b) for a, b in zip(loaded.buffers(), model.buffers()))
    ids = torch.randint(1000, 3000, (3, 11))
    with torch.no_grad():
        assert torch.equal(loaded(input_ids=ids).logits, model(input_ids=ids).logits)


# ---- compact checkpoints (issue 30) and the snapshots a recipe asks for ---------------------------------------


def test_fine_tuned_checkpoints_are_stored_compact_and_rebuilt_within_tolerance(env, base):
    """A fine-tuned classifier is stored as float16 changes against its encoder (half of float32's bytes); the
    rebuild it loads gives the trained classifier's logits within the tolerance, the run that trained it computes
    with the rebuild (so this run and the next agree exactly), and the write recorded the measured difference."""
    import json

    from safetensors import safe_open

    from attnbook.engine import checkpoints as C

    clf, _ = get_finetuned(base, "SST-2", "pretrained_ft", SMALL, 0, progress=False, evaluate_dev=False)
    folder = checkpoints_root() / clf.classifier.checkpoint_key
    with safe_open(str(folder / C.WEIGHTS_FILE), framework="pt") as fh:
        header = fh.metadata()
        dtypes = {fh.get_tensor(k).dtype for k in fh.keys() if fh.get_tensor(k).is_floating_point()}
    assert header["format"] == "compact" and dtypes == {torch.float16}
    deltas = json.loads(header["deltas"])
    assert deltas and all(k.startswith("bert.") for k in deltas) and "classifier.weight" not in deltas
    record = json.loads((folder / C.STORED_FILE).read_text())
    assert 0 <= record["max_abs_logit_difference"] <= C.COMPACT_TOLERANCE
    again, _ = get_finetuned(base, "SST-2", "pretrained_ft", SMALL, 0, progress=False, evaluate_dev=False)
    assert _same_weights(clf.model, again.model)  # the training run already used the rebuild
    ids = torch.randint(1000, 3000, (3, 9))
    with torch.no_grad():
        assert torch.equal(clf.model(input_ids=ids).logits, again.model(input_ids=ids).logits)


def test_compact_rebuild_is_close_to_the_trained_weights_and_half_the_size(base):
    """The stored change loses only float16's rounding of the change: every rebuilt weight lies within 2^-11 of
    its change (plus float32's own rounding), and the stored tensors take half the bytes."""
    from attnbook.engine import checkpoints as C

    model = build_classifier(base, "SST-2", "pretrained_ft", 0)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1e-3 * torch.randn_like(p))
    state = model.state_dict()
    reference = C._reference_of(model, base.model.state_dict())
    stored, deltas = C.compact_state(state, reference)
    rebuilt = C.rebuild_state(stored, deltas, reference, {k: v.dtype for k, v in state.items()})
    for name in deltas:
        change = (state[name] - reference[name]).abs()
        assert torch.all((rebuilt[name] - state[name]).abs() <= change * 2 ** -11 + 1e-6)
    nbytes = lambda d: sum(t.numel() * t.element_size() for t in d.values())  # noqa: E731
    floats = {k: v for k, v in state.items() if v.is_floating_point()}
    assert nbytes({k: stored[k] for k in floats}) * 2 == nbytes(floats)


def test_compact_checkpoint_refuses_a_different_encoder_or_no_encoder(env, base, tokenizer):
    """A compact checkpoint rebuilt on another encoder than it was written with fails the reload check (probe
    logits) and is trained again, with a warning; without an encoder it cannot be rebuilt at all."""
    model = build_classifier(base, "SST-2", "pretrained_ft", 0)
    save_checkpoint(model, "compact-check", {"note": "ok"}, reference=base.model.state_dict())
    other = make_tiny_bert(tokenizer, n_layers=2, n_heads=2, hidden=32, seed=1)
    with pytest.warns(CheckpointCorruptWarning, match="probe logits"):
        assert load_checkpoint("compact-check", reference=other.state_dict()) is None
    with pytest.warns(CheckpointCorruptWarning, match="reference"):
        assert load_checkpoint("compact-check") is None
    loaded, meta = load_checkpoint("compact-check", reference=base.model.state_dict())
    assert meta == {"note": "ok"}


def test_a_rebuild_outside_the_tolerance_is_stored_exactly(env, base, monkeypatch):
    """When float16 would move the logits by more than the tolerance, the checkpoint is written in float32 and says
    why (never a lossy checkpoint past the tolerance)."""
    import json

    from attnbook.engine import checkpoints as C

    monkeypatch.setattr(C, "COMPACT_TOLERANCE", 0.0)
    model = build_classifier(base, "SST-2", "random_ft", 0)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1e-3 * torch.randn_like(p))
    folder = save_checkpoint(model, "exact-check", {"note": "ok"}, reference={})
    record = json.loads((folder / C.STORED_FILE).read_text())
    assert record["format"] == "exact" and "differ" in record["why"]
    loaded, _ = load_checkpoint("exact-check", reference={})
    assert _same_weights(loaded, model)


def test_snapshots_are_written_only_for_the_classifiers_the_recipe_names(env, base):
    """``save_at`` as a mapping asks for snapshots of some tasks' and seeds' pre-trained + fine-tuned classifiers
    only (chapter 6's): the other classifiers write their final checkpoint alone."""
    from attnbook.engine.jobs import snapshots

    save_at = {"tasks": ["SST-2"], "seeds": [0], "at": [0.5]}
    assert snapshots(save_at, "SST-2", "pretrained_ft", 0) == (0.5,)
    assert snapshots(save_at, "SST-2", "pretrained_ft", 1) == ()
    assert snapshots(save_at, "STS-B", "pretrained_ft", 0) == ()
    assert snapshots(save_at, "SST-2", "random_ft", 0) == ()
    assert snapshots([0.25, 0.5], "STS-B", "random_ft", 3) == (0.25, 0.5)
    with pytest.raises(ParameterError, match="save_at"):
        snapshots({"at": [0.5], "task": ["SST-2"]}, "SST-2", "pretrained_ft", 0)
    recipe = {**SMALL, "save_at": save_at}
    get_finetuned(base, "SST-2", "pretrained_ft", recipe, 0, save_at=save_at, progress=False, evaluate_dev=False)
    get_finetuned(base, "SST-2", "pretrained_ft", recipe, 1, save_at=save_at, progress=False, evaluate_dev=False)
    assert len([p for p in checkpoints_root().iterdir() if not p.name.startswith(".")]) == 3  # 2 finals + 1 snapshot
    counter = StepCounter()
    get_finetuned(base, "SST-2", "pretrained_ft", recipe, 0, fraction=0.5, on_step=counter, progress=False,
                  evaluate_dev=False)
    assert counter.steps == 0


def test_quick_recipe_snapshots_are_the_ones_chapter_6_reads():
    """The quick and paper recipes write exactly the snapshots chapter 6 analyses (its task, first seed, its
    checkpoint shares): none unread, none missing."""
    from attnbook.chapters.params import chapter_params
    from attnbook.chapters.profiles import glue

    for profile in ("smoke", "quick", "paper"):
        p = chapter_params("06_michel_pruning", profile)
        save_at = glue.recipe(p)["save_at"]
        assert save_at["tasks"] == [p.task] and save_at["seeds"] == p.seeds[:1]
        assert sorted(save_at["at"]) == sorted(p.checkpoints)


def test_weights_missing_from_a_folder_are_drawn_the_same_in_every_load(tmp_path, monkeypatch):
    """A model folder without some weights (the planted test model has no pooler, like many exported sentence
    encoders) gets them drawn at random by from_pretrained: seeded, so two loads (two worker processes) hold the
    same encoder whatever the global random state; otherwise a classifier trained in a worker would not be the one
    its compact checkpoint is rebuilt on here."""
    from planted import plant_bert

    from attnbook.engine.models import load_encoder

    plant_bert(tmp_path / "hub", n_layers=2, n_heads=2, hidden=32)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    torch.manual_seed(1)
    a = load_encoder("bert-base-uncased").model.state_dict()
    torch.manual_seed(2)
    b = load_encoder("bert-base-uncased").model.state_dict()
    assert "pooler.dense.weight" in a and all(torch.equal(a[k], b[k]) for k in a)


def test_a_task_the_recipe_trains_on_fewer_seeds_is_trained_and_analysed_on_those_only():
    """Issue 30: the quick recipe trains RTE (which it does not make learn) on one seed; Table 1's jobs, chapter 5's
    classifiers and chapter 6's runs all ask through ``seeds_for``, so nobody trains RTE's other seeds."""
    from attnbook.chapters.params import chapter_params
    from attnbook.chapters.profiles import glue
    from attnbook.engine.jobs import seeds_for
    from attnbook.studies.kovaleva import table1

    recipe = {"seeds": [0, 1, 2], "task_seeds": {"RTE": [0]}}
    assert seeds_for(recipe, "RTE") == [0] and seeds_for(recipe, "SST-2") == [0, 1, 2]
    assert seeds_for(recipe, "RTE", [1, 2]) == [0]  # a chapter asking for other seeds gets the one there is
    assert seeds_for({"seeds": [0, 1]}, "RTE") == [0, 1]
    quick = glue.recipe(chapter_params("04_kovaleva_taxonomy", "quick"))
    jobs = table1.jobs(["SST-2", "RTE"], quick)
    assert [s for t, i, s in jobs if t == "RTE" and i == "pretrained_ft"] == [0]
    assert [s for t, i, s in jobs if t == "SST-2" and i == "pretrained_ft"] == [0, 1, 2]


def test_bf16_auto_follows_the_hardware_and_the_key_holds_the_precision_used(monkeypatch):
    """Issue 30 on an AVX2-only machine: bfloat16 autocast is emulated there and trains several times slower than
    float32, so the smoke and quick recipes ask for ``"auto"``; it resolves to whether the device runs bfloat16
    natively, the checkpoint key holds the resolved value (a float32 book never reads a bfloat16 classifier), and
    the chapter's sentence says which precision ran and why."""
    from attnbook.chapters.params import chapter_params
    from attnbook.chapters.profiles import glue
    from attnbook.engine import precision

    recipe = glue.recipe(chapter_params("04_kovaleva_taxonomy", "quick"))
    assert recipe["bf16"] == "auto" and chapter_params("07_arct_cues", "quick").bf16 == "auto"
    for native in (True, False):
        monkeypatch.setattr(precision, "native_bf16", lambda device="cpu", native=native: native)
        p = FinetuneParams.from_mapping(recipe)
        assert p.bf16 is native and p.training_parts()["bf16"] is native
        sentence = precision.training_sentence("auto", p.bf16)
        assert ("bfloat16 autocast" in sentence) == native and ("float32:" in sentence) == (not native)
    assert FinetuneParams.from_mapping({**recipe, "bf16": True}).bf16 is True
    with pytest.raises(ParameterError, match="auto"):
        FinetuneParams.from_mapping({**recipe, "bf16": "fast"})
    assert precision.native_bf16("cpu") in (True, False)
