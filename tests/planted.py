"""A small randomly initialised ``BertForMaskedLM`` planted in a Hugging Face cache under a hub name.

The paper profile loads ``bert-base-uncased`` by name; its weights cannot be downloaded here, so the tests
plant a small model with the bert-base-uncased vocabulary (the tokenizer files the embedded model ships) in a
temporary hub cache laid out as ``huggingface_hub`` lays out a download: ``models--<org>--<name>/snapshots/
<commit>/`` plus ``refs/main``. With ``HF_HUB_CACHE`` pointing there and ``HF_HUB_OFFLINE=1``, the name loads
from the cache exactly as a real download would.
"""
from __future__ import annotations

import shutil
from pathlib import Path

COMMIT = "0123456789abcdef0123456789abcdef01234567"
TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def plant_bert(cache: Path, name: str = "bert-base-uncased", *, n_layers: int = 2, n_heads: int = 4,
               hidden: int = 32, seed: int = 0, mlm_head: bool = True) -> Path:
    """Write the model under ``cache`` (a hub cache folder); returns its snapshot folder."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertModel

    from attnbook.engine.models import embedded_model_path

    snapshot = Path(cache) / f"models--{name.replace('/', '--')}" / "snapshots" / COMMIT
    snapshot.mkdir(parents=True, exist_ok=True)
    (Path(cache) / f"models--{name.replace('/', '--')}" / "refs").mkdir(exist_ok=True)
    (Path(cache) / f"models--{name.replace('/', '--')}" / "refs" / "main").write_text(COMMIT)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=30522, hidden_size=hidden, num_hidden_layers=n_layers,
                        num_attention_heads=n_heads, intermediate_size=2 * hidden, max_position_embeddings=512)
    model = (BertForMaskedLM if mlm_head else BertModel)(config)
    model.save_pretrained(snapshot, safe_serialization=True)
    source = embedded_model_path()
    for f in TOKENIZER_FILES:
        if (source / f).exists():
            shutil.copy(source / f, snapshot / f)
    return snapshot


# ------------------------------------------------------------------------------------------ data the machine lacks

#: the original GLUE layouts of the files this machine lacks (header, then one row per example)
MNLI_TRAIN = ("index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
              "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "label1", "gold_label")
MNLI_DEV = MNLI_TRAIN[:-1] + ("label2", "label3", "label4", "label5", "gold_label")
QQP = ("id", "qid1", "qid2", "question1", "question2", "is_duplicate")
QNLI = ("index", "question", "sentence", "label")
NLI3 = ("entailment", "neutral", "contradiction")


def _pairs(data: Path, n: int, offset: int) -> list[tuple[str, str]]:
    """``n`` real sentence pairs (RTE's training file) to fill the planted files with."""
    lines = (Path(data) / "glue" / "RTE" / "train.tsv").read_text(encoding="utf-8").splitlines()[1:]
    rows = [line.split("\t") for line in lines[offset: offset + n]]
    return [(r[1], r[2]) for r in rows]


def _write(path: Path, header: tuple, rows: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join("\t".join(map(str, r)) for r in [list(header), *rows]) + "\n", encoding="utf-8")


def plant_data(root: Path, real: Path, n_train: int = 48, n_dev: int = 32) -> Path:
    """A data folder for the paper profile: every dataset of ``real`` (symbolic links, nothing copied) plus tiny
    files, in the original GLUE formats, for what this machine lacks: MNLI (train, dev matched and mismatched),
    QQP (train, dev) and QNLI's training set. Their sentences are real RTE pairs with rotating labels, so they
    exercise the readers and the paper profile's code, never a paper's number. Returns ``root``."""
    root, real = Path(root), Path(real)
    root.mkdir(parents=True, exist_ok=True)
    for entry in real.iterdir():
        if entry.name != "glue":
            (root / entry.name).symlink_to(entry)
    glue = root / "glue"
    glue.mkdir()
    for entry in (real / "glue").iterdir():
        if entry.name != "QNLI":
            (glue / entry.name).symlink_to(entry)
    (glue / "QNLI").mkdir()
    (glue / "QNLI" / "dev.tsv").symlink_to(real / "glue" / "QNLI" / "dev.tsv")
    train, dev = _pairs(real, n_train, 0), _pairs(real, 2 * n_dev, n_train)
    _write(glue / "QNLI" / "train.tsv", QNLI,
           [[i, a, b, ("entailment", "not_entailment")[i % 2]] for i, (a, b) in enumerate(train)])
    _write(glue / "QQP" / "train.tsv", QQP, [[i, 2 * i, 2 * i + 1, a, b, i % 2] for i, (a, b) in enumerate(train)])
    _write(glue / "QQP" / "dev.tsv", QQP, [[i, 2 * i, 2 * i + 1, a, b, i % 2] for i, (a, b) in enumerate(dev[:n_dev])])

    def mnli(pairs, header, genres):
        out = []
        for i, (a, b) in enumerate(pairs):
            label = NLI3[i % 3]
            out.append([i, i, f"{i}e", genres[i % len(genres)], "( x )", "( y )", "(ROOT x)", "(ROOT y)", a, b,
                        *([label] * (len(header) - 11)), label])
        return out

    _write(glue / "MNLI" / "train.tsv", MNLI_TRAIN, mnli(train, MNLI_TRAIN, ("fiction", "government")))
    _write(glue / "MNLI" / "dev_matched.tsv", MNLI_DEV, mnli(dev[:n_dev], MNLI_DEV, ("fiction", "government")))
    _write(glue / "MNLI" / "dev_mismatched.tsv", MNLI_DEV, mnli(dev[n_dev:], MNLI_DEV, ("letters", "verbatim")))
    return root


# ------------------------------------------------------------------------------------------ the rehearsal's sizes

#: the GLUE recipe's sizes in the rehearsal (chapters 4-6 and the atlas share the checkpoints)
REHEARSAL_RECIPE = {"train_cap": 32, "dev_cap": 32, "epochs": 1, "max_length": 64, "seeds": [0], "random_seeds": [0]}

#: papermill overrides of the paper profile in the rehearsal: sizes only (segments, examples, epochs, seeds,
#: resamples); the model, tasks, data and every switch stay the paper profile's
REHEARSAL_SIZES: dict[str, dict] = {
    "01_clark_surface_patterns": dict(n_segments=12, max_tokens=64, batch_size=4, grad_segments=4),
    "02_clark_probing": dict(max_tokens=64, batch_size=8, syntax_sentences=40, coref_max_docs=2, coref_max_tokens=64,
                             coref_batch_size=8, probe_train_sentences=60, probe_dev_sentences=40, probe_epochs=2,
                             probe_batch_size=16, probe_hidden=16),
    "03_clark_clustering": dict(max_tokens=64, batch_size=4, n_segments=12, n_permutations=199, syntax_sentences=40,
                                syntax_max_tokens=64, syntax_batch_size=8),
    "04_kovaleva_taxonomy": dict(recipe_overrides=REHEARSAL_RECIPE, n_examples=8, max_tokens=64, batch_size=8,
                                 cv_folds=3, cnn_epochs=2, dev_caps={"default": 32}, n_resamples=200),
    "05_kovaleva_disabling": dict(recipe_overrides=REHEARSAL_RECIPE, seeds=[0], dev_caps={"default": 8},
                                  eval_caps={"default": 32}, batch_size=8, n_resamples=200, bench_examples=2),
    "06_michel_pruning": dict(recipe_overrides=REHEARSAL_RECIPE, seeds=[0], dev_cap=16, importance_cap=16,
                              batch_size=16, random_seeds=[0], n_resamples=200, speed_batch_sizes=[1, 4],
                              speed_examples=8),
    "07_arct_cues": dict(n_seeds=2, epochs=1, adversarial_epochs=1, max_length=48, train_cap=48, eval_cap=24,
                         word_seeds=2, bilstm_hidden=8, bilstm_epochs=1),
}
REHEARSAL_SIZES["08_head_atlas"] = dict(
    n_permutations=199, n_resamples=200,
    chapter_overrides={c: v for c, v in REHEARSAL_SIZES.items() if c < "07"})
