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
