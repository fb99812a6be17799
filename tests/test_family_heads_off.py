"""Chapters 5 and 6's machinery on a tiny random model of every encoder family (:mod:`tiny_families`).

What is checked, per family: the interventions of :mod:`attnbook.engine.interventions` (``head_mask``,
``disable_heads``: the registered attention function for BERT's layout, hooks for the other families) as the
chapters call them (gate tensors, bool arrays) against the public handle's calls (``attnbook.heads.masked`` /
``disabled`` with head lists; the one engine, checked against weight edits in ``test_families.py``), stacked and
per-token gates, the maps a disabled head returns, the per-example gate gradients of
:mod:`attnbook.engine.mask_gradients` against its per-batch ``batch_gradients`` on one-example batches, the fast sweeps of :mod:`attnbook.engine.sweeps` against the naive ones (one full
forward per configuration), physical pruning (:mod:`attnbook.engine.pruning`) against the masked model, classifiers
built and fine-tuned from the base model folder (:mod:`attnbook.engine.classifiers`, :mod:`attnbook.engine.finetune`),
Kovaleva's disabling check and word matching without segment ids. Models run in float64 (ModernBERT in float32:
its eager attention gives NaN where a local window holds only padding in float64) on one thread.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_families import FAMILIES, SENTENCES, one_thread, plant, planted  # noqa: F401  (fixtures)

from attnbook.engine import heads as handle
from attnbook.engine import sweeps
from attnbook.engine.families import family_of
from attnbook.engine.interventions import (
    Intervention,
    disable_heads,
    head_mask,
    intervene,
    tile_batch,
)
from attnbook.engine.models import prepare_model

L, H = 3, 4


@pytest.fixture(scope="module", autouse=True)
def _one_thread(one_thread):
    yield


def dtype_of(family):
    return torch.float32 if family == "modernbert" else torch.float64


def tol(family):
    return 1e-5 if family == "modernbert" else 1e-9


def load(folder, family, head="masked-lm"):
    from transformers import (
        AutoModelForMaskedLM,
        AutoModelForSequenceClassification,
        AutoTokenizer,
    )

    cls = AutoModelForMaskedLM if head == "masked-lm" else AutoModelForSequenceClassification
    model = cls.from_pretrained(folder, attn_implementation="eager").to(dtype_of(family)).eval()
    return prepare_model(model), AutoTokenizer.from_pretrained(folder)


def encode(tokenizer, sentences=(SENTENCES[0], SENTENCES[13][:20], SENTENCES[7])):
    return dict(tokenizer(list(sentences), padding=True, return_tensors="pt"))


def out(model, enc):
    with torch.no_grad():
        return model(**enc).logits


def heads_for(family):
    """Head 2 at every depth, and head 4 of layer 1 (not for ALBERT, whose depths share one layer)."""
    return [(layer, 1) for layer in range(L)] + ([] if family == "albert" else [(0, 3)])


def gate_without(heads, dtype):
    gate = torch.ones(L, H, dtype=dtype)
    for layer, head in heads:
        gate[layer, head] = 0
    return gate


def n_hooks(model):
    return sum(len(m._forward_pre_hooks) + len(m._forward_hooks) for m in model.modules())


def pair_batches(tokenizer, n=8, batch_size=4):
    first, second = SENTENCES[:n], SENTENCES[10:10 + n]
    return sweeps.classification_batches(tokenizer, first, second, [i % 3 for i in range(n)], batch_size=batch_size)


# ---------------------------------------------------------------------------------------------- interventions
@pytest.mark.parametrize("family", FAMILIES)
def test_the_chapters_calls_agree_with_the_public_handle(family, planted):
    model, tokenizer = load(planted(family), family)
    enc = encode(tokenizer)
    heads = heads_for(family)
    dtype = dtype_of(family)
    hooks = n_hooks(model)
    base = out(model, enc)
    with torch.no_grad():
        with handle.masked(model, heads):
            ref_masked = model(**enc).logits
        with handle.disabled(model, heads):
            ref_disabled = model(**enc).logits
        with head_mask(model, gate_without(heads, dtype)):
            masked = model(**enc).logits
        with disable_heads(model, heads):
            disabled = model(**enc).logits
        with disable_heads(model, []), head_mask(model, torch.ones(L, H, dtype=dtype)):
            nothing = model(**enc).logits
    torch.testing.assert_close(masked, ref_masked, atol=tol(family), rtol=1e-7)
    torch.testing.assert_close(disabled, ref_disabled, atol=tol(family), rtol=1e-7)
    assert torch.equal(nothing, base)  # identity interventions change nothing, bit for bit
    assert not torch.allclose(disabled, base, atol=1e-4) and not torch.allclose(disabled, masked, atol=1e-4)
    assert n_hooks(model) == hooks and model.config._attn_implementation == "eager"  # all undone
    from attnbook.engine.interventions import uses_attention_interface

    assert uses_attention_interface(model) == (family in ("bert", "roberta", "xlm-roberta", "electra"))


@pytest.mark.parametrize("family", FAMILIES)
def test_stacked_and_per_token_gates(family, planted):
    """Configurations stacked along a tiled batch give each copy its own result; a per-token gate constant over the
    tokens is the per-example gate."""
    model, tokenizer = load(planted(family), family)
    enc = encode(tokenizer)
    dtype = dtype_of(family)
    g = torch.Generator().manual_seed(0)
    masks = torch.rand(3, L, H, generator=g, dtype=torch.float64).to(dtype)
    off = torch.rand(3, L, H, generator=g) > 0.6
    with torch.no_grad():
        with head_mask(model, masks):
            stacked = model(**tile_batch(enc, 3)).logits.reshape(3, *enc["input_ids"].shape, -1)
        with disable_heads(model, off):
            stacked_off = model(**tile_batch(enc, 3)).logits.reshape(3, *enc["input_ids"].shape, -1)
        for k in range(3):
            with head_mask(model, masks[k]):
                torch.testing.assert_close(stacked[k], model(**enc).logits, atol=tol(family), rtol=1e-6)
            with disable_heads(model, off[k]):
                torch.testing.assert_close(stacked_off[k], model(**enc).logits, atol=tol(family), rtol=1e-6)
        per_example = masks  # one gate set per example of the (untiled) batch of 3
        seq = enc["input_ids"].shape[1]
        with intervene(model, Intervention("mask", per_example)):
            expected = model(**enc).logits
        with intervene(model, Intervention("mask", per_example[:, None].expand(3, seq, L, H).clone(), per_token=True)):
            got = model(**enc).logits
    torch.testing.assert_close(got, expected, atol=tol(family), rtol=1e-6)


@pytest.mark.parametrize("family", FAMILIES)
def test_maps_of_disabled_and_masked_heads(family, planted):
    """A disabled head's map is uniform over the keys each real query may see (not padding; inside the window of a
    ModernBERT local layer); a masked head's map is zero; the layer's other heads are untouched."""
    model, tokenizer = load(planted(family), family)
    enc = encode(tokenizer)
    heads = [(0, 1), (1, 2)]
    with torch.no_grad():
        plain = model(**enc, output_attentions=True).attentions
        with disable_heads(model, heads):
            off = model(**enc, output_attentions=True).attentions
        with head_mask(model, gate_without([(0, 3)], dtype_of(family))):
            gated = model(**enc, output_attentions=True).attentions
    mask = enc["attention_mask"].bool()
    window = getattr(model.config, "sliding_window", None)
    for layer, head in heads:
        local = family == "modernbert" and model.config.layer_types[layer] == "sliding_attention"
        for b in range(3):
            n = int(mask[b].sum())
            pos = torch.arange(n)
            allowed = torch.ones(n, n, dtype=torch.bool)
            if local:
                allowed = (pos[:, None] - pos[None, :]).abs() <= window
            expected = allowed.to(off[layer].dtype) / allowed.sum(-1, keepdim=True)
            torch.testing.assert_close(off[layer][b, head, :n, :n], expected, atol=1e-6, rtol=0)
            assert torch.all(off[layer][b, head, :n, n:] == 0)
    assert torch.equal(off[0][:, [0, 2, 3]], plain[0][:, [0, 2, 3]])
    assert torch.all(gated[0][:, 3] == 0) and torch.equal(gated[0][:, :3], plain[0][:, :3])


@pytest.mark.parametrize("family", FAMILIES)
def test_mask_gradients_are_batch_gradients_of_one_example_batches(family, planted):
    """E|dL/dxi| per example (mask_gradients) = the summed |dL/dgate| of one-example batches (batch_gradients, the
    public importance) over the number of examples."""
    from attnbook.engine.inputs import Batch
    from attnbook.engine.mask_gradients import batch_gradients, mask_gradients

    model, tokenizer = load(planted(family, "classifier"), family, "classifier")
    enc = encode(tokenizer)
    labels = torch.tensor([0, 2, 1])
    batches = [Batch(enc["input_ids"][i:i + 1], enc["attention_mask"][i:i + 1], None, labels[i:i + 1])
               for i in range(3)]

    def loss(outputs, gold):
        return torch.nn.functional.cross_entropy(outputs, gold, reduction="none")

    got = mask_gradients(model, batches, loss)
    reference = batch_gradients(
        model, [{"input_ids": b.input_ids, "attention_mask": b.attention_mask, "labels": b.labels} for b in batches],
        lambda m, batch: loss(m(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits,
                              batch["labels"]).sum())
    np.testing.assert_allclose(got, reference / 3, atol=1e-6 if family == "modernbert" else 1e-12, rtol=1e-5)
    assert got.shape == (L, H) and got.max() > 0
    per_token = mask_gradients(model, batches, loss, granularity="token")
    assert per_token.shape == (L, H) and np.all(np.isfinite(per_token)) and per_token.max() > 0


# ---------------------------------------------------------------------------------------------------- sweeps
@pytest.mark.parametrize("family", FAMILIES)
def test_fast_sweeps_equal_naive(family, planted):
    model, tokenizer = load(planted(family, "classifier"), family, "classifier")
    model.float()  # sweeps run as the chapters run them
    batches = pair_batches(tokenizer)
    runner = sweeps.fast_runner(model)
    assert isinstance(runner, sweeps.EncoderStack if family in sweeps.BERT_LAYOUT else sweeps.LayerReplay)
    if isinstance(runner, sweeps.LayerReplay):  # the last layer for the first query alone
        assert runner.first is not None and sweeps.LayerReplay(model, first_only=False).first is None
    for mode in ("disable", "mask"):
        check = sweeps.fast_path_check(model, batches, mode)
        assert check["n_configs"] == L * H and check["n_examples"] == 8
        assert check["max_abs_output_diff"] < 1e-5
        fast = sweeps.sweep_layers(model, batches, mode, fast=True, configs_per_forward=2)
        naive = sweeps.sweep_layers(model, batches, mode, fast=False)
        np.testing.assert_allclose(fast.outputs, naive.outputs, atol=1e-5)
        assert np.abs(fast.outputs - fast.baseline_outputs[None]).max() > 1e-4  # switching layers off mattered
    one = sweeps.sweep_all_but_one(model, batches, "mask", fast=True)
    np.testing.assert_allclose(one.outputs, sweeps.sweep_all_but_one(model, batches, "mask", fast=False).outputs,
                               atol=1e-5)
    assert model.config._attn_implementation == "eager" and n_hooks(model) == n_hooks(prepare_model(model))


@pytest.mark.parametrize("overrides", [{"share_att_key": False}, {"pos_att_type": ["c2p"], "position_buckets": -1},
                                       {"relative_attention": False}])
def test_deberta_first_query_layer_variants(overrides, tmp_path):
    """DeBERTa's last layer for query 0 (:func:`attnbook.engine.layers.first_query_layer`) with its own positional
    projections, content-to-position only without buckets, and no relative attention: the fast sweep's outputs
    are the naive ones."""
    folder = plant("deberta-v2", tmp_path / "deberta", "classifier", **overrides)
    model, tokenizer = load(folder, "deberta-v2", "classifier")
    for mode in ("disable", "mask"):
        assert sweeps.fast_path_check(model.float(), pair_batches(tokenizer, 4), mode)["max_abs_output_diff"] < 1e-5


# --------------------------------------------------------------------------------------------------- pruning
@pytest.mark.parametrize("family", FAMILIES)
def test_pruning_removes_weights_and_computes_the_masked_model(family, planted):
    from attnbook.engine.pruning import (
        heads_to_prune,
        kept_heads,
        pruned_copy,
        pruning_speed,
    )

    model, tokenizer = load(planted(family, "classifier"), family, "classifier")
    enc = encode(tokenizer)
    importance = np.random.default_rng(1).random((L, H))
    heads = heads_to_prune(model, importance, 0.5)
    if family == "albert":  # one shared layer: a head goes at every depth or not at all
        assert len({tuple(hs) for hs in heads.values()}) == 1 and set(heads) == set(range(L))
    assert all(0 < len(hs) < H for hs in heads.values())
    pruned = pruned_copy(model, heads)
    removed = [(layer, h) for layer, hs in heads.items() for h in hs]
    assert kept_heads(pruned) == {layer: [h for h in range(H) if (layer, h) not in removed] for layer in range(L)}
    assert sum(p.numel() for p in pruned.parameters()) < sum(p.numel() for p in model.parameters())
    gate = gate_without(removed, dtype_of(family))
    with torch.no_grad(), head_mask(model, gate):
        expected = model(**enc).logits
    torch.testing.assert_close(out(pruned, enc), expected, atol=tol(family), rtol=1e-7)
    other = torch.rand(L, H, generator=torch.Generator().manual_seed(2), dtype=torch.float64).to(gate.dtype)
    with torch.no_grad():  # interventions keep the original numbering after pruning
        with head_mask(pruned, other):
            a = pruned(**enc).logits
        with head_mask(model, other * gate):
            b = model(**enc).logits
        keep = [(layer, h) for layer in range(L) for h in range(H) if (layer, h) not in removed][:2]
        with disable_heads(pruned, keep):
            c = pruned(**enc).logits
        with head_mask(model, gate), disable_heads(model, keep):
            d = model(**enc).logits
    torch.testing.assert_close(a, b, atol=tol(family), rtol=1e-7)
    torch.testing.assert_close(c, d, atol=tol(family), rtol=1e-7)
    for mode in ("disable", "mask"):  # the fast sweep of a pruned model (MPNet: its position bias sliced too)
        assert sweeps.fast_path_check(pruned.float(), pair_batches(tokenizer, 4), mode)["max_abs_output_diff"] < 1e-5
    pool = {k: v for k, v in encode(tokenizer).items()}
    table = pruning_speed(model.float(), pool, importance=importance, share=0.5, batch_sizes=(2,), n_examples=4,
                          repeats=1)
    assert list(table["batch_size"]) == [2] and int(table["n_pruned"].iloc[0]) == len(removed)


# ----------------------------------------------------------------------------------------------- classifiers
GLUE_SST = ["sentence\tlabel"] + [f"{' '.join(SENTENCES[i].split()[:6])}\t{i % 2}" for i in range(24)]


@pytest.fixture
def sst(tmp_path, monkeypatch):
    """A tiny SST-2 (train and dev) and an empty cache."""
    folder = tmp_path / "data" / "glue" / "SST-2"
    folder.mkdir(parents=True)
    (folder / "train.tsv").write_text("\n".join(GLUE_SST) + "\n")
    (folder / "dev.tsv").write_text("\n".join(GLUE_SST[:13]) + "\n")
    monkeypatch.setenv("ATTNBOOK_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path / "cache"))
    return tmp_path


@pytest.mark.parametrize("family", FAMILIES)
def test_classifier_from_the_base_model_folder(family, planted, sst):
    """Every family's own sequence classifier and pooling, from the base model's folder: the encoder's weights are
    copied (a pooler the classifier's encoder lacks is left out), the head is drawn new, fine-tuning runs, and the
    cached checkpoint loads back to the same outputs and takes the inputs every engine call passes."""
    from attnbook.data.glue import load_split
    from attnbook.engine.classifiers import (
        INITS,
        build_classifier,
        head_modules,
        output_layer,
    )
    from attnbook.engine.evaluate import predict_logits
    from attnbook.engine.finetune import get_finetuned
    from attnbook.engine.models import load_encoder

    base = load_encoder(str(planted(family)), device="cpu")
    fam = family_of(base.model)
    enc = dict(base.tokenizer(["a cat", "the dog sat"], padding=True, return_tensors="pt"))
    enc["token_type_ids"] = torch.zeros_like(enc["input_ids"])  # what engine batches may carry
    built = {init: build_classifier(base, "SST-2", init, seed=0) for init in INITS}
    clf = built["pretrained"]
    assert type(clf).__name__ == fam.classifier_class and output_layer(clf).out_features == 2
    assert all(torch.equal(clf.base_model.state_dict()[k], v) for k, v in base.model.state_dict().items()
               if k in clf.base_model.state_dict())
    assert not any(p is q for m in head_modules(clf) for p in m.parameters() for q in base.model.parameters())
    rnd = built["random_ft"].get_input_embeddings().weight
    assert not torch.equal(rnd, base.model.get_input_embeddings().weight)
    with torch.no_grad():
        assert clf(**enc).logits.shape == (2, 2)
    params = {"train_cap": None, "dev_cap": None, "max_length": 32, "epochs": 1, "batch_size": 8, "lr": 1e-3,
              "warmup": 0.1, "eval_batch_size": 16}
    tuned, metrics = get_finetuned(base, "SST-2", "pretrained_ft", params, 0, progress=False)
    assert metrics["n"] == 12 and tuned.classifier.train_log["n_steps"] == 3
    again, _ = get_finetuned(base, "SST-2", "pretrained_ft", params, 0, evaluate_dev=False, progress=False)
    assert again.path is not None and again.model is not tuned.model  # read back from the cache
    dev = load_split("SST-2", "dev").examples
    np.testing.assert_allclose(predict_logits(again, dev), predict_logits(tuned, dev), atol=1e-6)
    with torch.no_grad():
        assert again.model(**enc).logits.shape == (2, 2)


def test_parameter_groups_spare_every_norm(planted):
    from transformers import AutoModelForSequenceClassification

    from attnbook.engine.train import param_groups

    model = AutoModelForSequenceClassification.from_pretrained(planted("modernbert", "classifier"))
    decay, spared = (g["params"] for g in param_groups(model, 0.01))
    norms = [p for n, p in model.named_parameters() if "norm" in n]
    assert norms and all(any(p is q for q in spared) for p in norms)
    assert not any(any(p is q for q in decay) for p in norms)


# ------------------------------------------------------------------------------------------ chapter 5's checks
@pytest.mark.parametrize("family", FAMILIES)
def test_disable_check_and_word_match(family, planted):
    from attnbook.engine.models import wrap_model
    from attnbook.studies.kovaleva.disabling import disable_check
    from attnbook.studies.kovaleva.word_match import (
        hurting_heads_match,
        segment_ids,
        separator_ids,
    )

    model, tokenizer = load(planted(family, "classifier"), family, "classifier")
    clf = wrap_model(model.float(), tokenizer, f"tiny {family}")
    batches = pair_batches(tokenizer)
    check = disable_check(clf, batches[0], layer=0, head=1)
    assert check["uniform_error"] < 1e-6 and check["other_heads_change"] == 0
    b = batches[0]
    segments = segment_ids(b, separator_ids(tokenizer))
    real = b.attention_mask.bool()
    assert torch.all(segments[real].unique() == torch.tensor([0, 1]))  # two sentences in every pair batch
    if b.token_type_ids is not None and bool((b.token_type_ids != 0).any()):  # the tokenizer's own segment ids
        from attnbook.studies.kovaleva.word_match import segments_from_separators

        assert torch.equal(segments_from_separators(b.input_ids, separator_ids(tokenizer))[real], segments[real])
    delta = np.random.default_rng(0).normal(size=(L, H))
    match = hurting_heads_match(clf, batches, delta, top_k=3)
    assert match["share"].shape == (L, H) and match["n_queries"] > 0 and len(match["hurting"]) == 3


def test_segments_from_separators():
    from attnbook.studies.kovaleva.word_match import segments_from_separators

    ids = torch.tensor([[0, 5, 6, 2, 2, 7, 8, 2, 1, 1],   # <s> a b </s></s> c d </s> <pad> <pad>
                        [0, 5, 2, 7, 2, 1, 1, 1, 1, 1],   # [CLS] a [SEP] c [SEP] pad...
                        [0, 5, 6, 7, 1, 1, 1, 1, 1, 1]])  # no separator: one sentence
    got = segments_from_separators(ids, [2])
    assert got.tolist() == [[0, 0, 0, 0, 0, 1, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1, 1, 1, 1, 1], [0] * 10]


# ----------------------------------------------------------------------------------------------- regression
def test_chapter_6_runs_on_roberta_and_distilbert(planted, sst):
    """Before the engine spoke every family, chapter 6 stopped on a RoBERTa (its base model's pooler did not fit
    the classifier) and on a DistilBERT (the fast sweep knew only BERT's ``encoder.layer``), and chapter 5's word
    matching on any tokenizer without segment ids."""
    from attnbook.engine.classifiers import build_classifier
    from attnbook.engine.models import load_encoder
    from attnbook.studies.kovaleva.word_match import word_match_shares

    base = load_encoder(str(planted("roberta")), device="cpu")
    clf = build_classifier(base, "SST-2", "pretrained", seed=0)
    batches = pair_batches(base.tokenizer)
    assert batches[0].token_type_ids is None
    fast = sweeps.sweep_single_heads(clf, batches, "mask", fast=True)
    naive = sweeps.sweep_single_heads(clf, batches, "mask", fast=False)
    np.testing.assert_allclose(fast.outputs, naive.outputs, atol=1e-5)
    assert word_match_shares(clf, batches, sep_ids=[base.tokenizer.sep_token_id])["n_queries"] > 0
    model, tokenizer = load(planted("distilbert", "classifier"), "distilbert", "classifier")
    check = sweeps.fast_path_check(model.float(), pair_batches(tokenizer), "disable")
    assert check["max_abs_output_diff"] < 1e-5
