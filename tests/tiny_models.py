"""Tiny randomly initialised models built inside the tests (no download)."""
from __future__ import annotations

import torch


def tiny_classifier(n_layers=3, n_heads=4, hidden=32, seed=0, num_labels=3, dtype=torch.float32):
    """A random BertForSequenceClassification (eager attention) with weights large enough that heads matter."""
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=64,
        hidden_size=hidden,
        num_hidden_layers=n_layers,
        num_attention_heads=n_heads,
        intermediate_size=2 * hidden,
        max_position_embeddings=64,
        num_labels=num_labels,
        initializer_range=0.3,
        attn_implementation="eager",
    )
    return BertForSequenceClassification(config).to(dtype).eval()


class Named:
    """A stand-in classifier handle (``key`` and ``model``), named in cache keys by its ``key`` as a LoadedModel is."""

    def __init__(self, key: str, model=None, **attrs):
        self.key, self.model = key, model
        self.__dict__.update(attrs)

    def __digest__(self):
        return ("LoadedModel", self.key)
