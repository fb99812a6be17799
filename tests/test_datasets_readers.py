"""The readers through Hugging Face ``datasets`` (attnbook.data.hf, glue, arct, wiki): the same examples as the
readers they replaced, typed Datasets cached by content, tokenisation by ``Dataset.map``, and tasks named the
Hugging Face way (a tiny ``datasets`` cache built here, offline) with one clear error for an unknown name."""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import make_tiny_bert, shared_data_dir

from attnbook.core import cache
from attnbook.core.errors import MalformedInputError, ParameterError
from attnbook.core.paths import cache_dir
from attnbook.data import arct, glue, hf, wiki

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from readers import old_read_arct, old_read_articles, old_read_tsv, old_subsample  # noqa: E402  (the readers before datasets)


def same(old, new, digest=False):
    """Equal example by example, with the same Python types (an int label is not a float one), so the content
    digest that names cache entries (``cache.digest``, checked with ``digest``) is the same and no cached result
    is recomputed."""
    assert len(old) == len(new)
    for i, (a, b) in enumerate(zip(old, new)):
        assert a == b and [type(v) for v in vars(a).values()] == [type(v) for v in vars(b).values()], i
    if digest:
        assert cache.digest(list(old)) == cache.digest(list(new))


@pytest.fixture
def real_data(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNBOOK_DATA", shared_data_dir())
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path / "cache"))
    return Path(shared_data_dir())


# ---- the same data as before, example by example ----------------------------------------------------------------
@pytest.mark.parametrize("use_cache", [True, False])
def test_glue_splits_equal_the_old_reader(real_data, use_cache):
    """Every GLUE task and split present locally, whole and under the caps the profiles use; with the cache on, read
    twice (built, then memory-mapped from the cache); with it off (built in memory, nothing written), the dev sets."""
    present = [(t, s) for t in glue.TASKS for s in ("train", "dev") if glue.available(t, s)]
    assert len(present) >= 9  # SST-2, MRPC, STS-B, RTE train+dev, QNLI dev
    with contextlib.nullcontext() if use_cache else cache.disabled():
        for task, split in present if use_cache else [(t, s) for t, s in present if s == "dev"]:
            spec = glue.task_spec(task)
            old = old_read_tsv(glue.task_path(task, split), spec, spec.skip_malformed)
            for again in range(2 if use_cache else 1):
                new = glue.read_tsv(glue.task_path(task, split), task, skip_malformed=spec.skip_malformed)
                same(old, new, digest=not again)
                whole = glue.load_split(task, split)
                assert whole.examples == new and whole.n_total == len(old) and whole.path == glue.task_path(task, split)
                for cap in (32, 1000, 8000):
                    got = glue.load_split(task, split, cap=cap, seed=0)
                    same(old_subsample(old, cap, 0), got.examples)
                    assert got.n_total == len(old) and got.dataset.num_rows == len(got.examples)
    assert (cache_dir() / hf.FOLDER).is_dir() == use_cache  # cache off: nothing written


def test_arct_and_wiki_equal_the_old_readers(real_data):
    for name in arct.FILES:
        same(old_read_arct(arct.arct_file(name)), arct.load_arct(name), digest=True)
        same(old_read_arct(arct.arct_file(name)), arct.load_arct(name))  # from the cache
    for unk in ("[UNK]", "<UNK>"):
        old = [a for name in ("test_raw", "valid")
               for a in old_read_articles(real_data / "wiki" / Path(*wiki.WIKI_FILES[name]), name, unk)]
        same(old, wiki.load_articles(("test_raw", "valid"), unk), digest=True)
        same(old, wiki.load_articles(("test_raw", "valid"), unk))  # from the cache
    assert len(wiki.load_articles()) == 122


# ---- typed Datasets, cached by content ---------------------------------------------------------------------------
def test_datasets_are_typed(real_data):
    from datasets import ClassLabel, List, Value

    sst = glue.glue_dataset("SST-2", "dev")
    assert sst.features["label"] == ClassLabel(names=["0", "1"]) and "text_b" not in sst.features
    assert sst.num_rows == 872 and sst.features["label"].int2str(sst[0]["label"]) in ("0", "1")
    rte = glue.glue_dataset("RTE", "dev")
    assert rte.features["label"].names == ["entailment", "not_entailment"] and rte.features["text_b"] == Value("string")
    assert glue.glue_dataset("STS-B", "dev").features["label"] == Value("float64")
    a = arct.arct_dataset("test-adv-negated")
    assert a.features["label"].names == ["warrant0", "warrant1"] and a.features["flag"] == Value("bool")
    assert arct.arct_dataset("dev")[0]["flag"] is None
    w = wiki.wiki_dataset()
    assert w.features["paragraphs"] == List(Value("string")) and w.num_rows == 122


def test_cache_follows_the_file_content(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "dev.tsv"
    path.write_text("sentence\tlabel\na fine film\t1\n")
    first = glue.tsv_dataset(path, "SST-2")
    assert all(Path(f).is_relative_to(tmp_path / "cache" / hf.FOLDER) for f in hf.split_files(first))
    assert glue.tsv_dataset(path, "SST-2").cache_files == first.cache_files  # read back, not rebuilt
    path.write_text("sentence\tlabel\na fine film\t1\na dull one\t0\n")
    assert [e.label for e in glue.read_tsv(path, "SST-2")] == [1, 0]
    with pytest.raises(MalformedInputError, match=r"dev.tsv:2"):
        path.write_text("sentence\tlabel\nno label\tmaybe\n")
        glue.read_tsv(path, "SST-2")
    path.write_text("sentence\tlabel\nok\t1\nbroken\n")
    with pytest.warns(UserWarning, match=r"line\(s\) \[3\]"):
        glue.read_tsv(path, "SST-2", skip_malformed=True)
    with pytest.warns(UserWarning, match=r"line\(s\) \[3\]"):  # warned again when read from the cache
        assert len(glue.read_tsv(path, "SST-2", skip_malformed=True)) == 1


def test_map_tokenisation_equals_the_examples_encoding(real_data, tokenizer):
    from attnbook.engine.finetune import encode_split
    from attnbook.engine.inputs import encode_examples

    for task, cap in (("RTE", None), ("SST-2", 300), ("STS-B", 100)):
        split = glue.load_split(task, "dev", cap=cap)
        want = encode_examples(tokenizer, split.examples, split.task, 64)
        for _ in range(2):  # tokenised, then from datasets' cache
            got = encode_split(tokenizer, split, 64)
            assert got.input_ids == want.input_ids and got.token_type_ids == want.token_type_ids
            assert got.labels.dtype == want.labels.dtype and np.array_equal(got.labels, want.labels)


# ---- tasks named the Hugging Face way ----------------------------------------------------------------------------
ROWS = {"train": [("a good film", 1), ("a bad film", 0), ("great acting", 1), ("dull and slow", 0)] * 4,
        "validation": [("fine", 1), ("awful", 0), ("lovely", 1), ("boring", 0)]}


def _tiny_builder():
    import datasets

    class TinyReviews(datasets.GeneratorBasedBuilder):
        """What ``load_dataset("acme/tiny_reviews")`` leaves in the datasets cache after a download."""

        def _info(self):
            return datasets.DatasetInfo(features=datasets.Features(
                {"idx": datasets.Value("int32"), "text": datasets.Value("string"),
                 "label": datasets.ClassLabel(names=["neg", "pos"])}))

        def _split_generators(self, dl_manager):
            return [datasets.SplitGenerator(name=s, gen_kwargs={"split": s}) for s in ROWS]

        def _generate_examples(self, split):
            for i, (text, label) in enumerate(ROWS[split]):
                yield i, {"idx": i, "text": text, "label": label}

    return TinyReviews


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A Hugging Face datasets cache holding ``acme/tiny_reviews`` (config ``default``), offline."""
    import datasets

    root = tmp_path / "hf-datasets"
    with hf.quiet():
        _tiny_builder()(cache_dir=str(root), dataset_name="tiny_reviews", repo_id="acme/tiny_reviews",
                        config_name="default", hash="0123abcd").download_and_prepare()
    assert (root / "acme___tiny_reviews" / "default").is_dir()
    monkeypatch.setenv("HF_DATASETS_CACHE", str(root))
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)  # never the network, whatever the environment
    monkeypatch.setenv("ATTNBOOK_CACHE", str(tmp_path / "cache"))
    return root


def test_a_cached_hub_dataset_is_a_task(hub):
    from datasets import load_dataset

    spec = glue.task_spec("acme/tiny_reviews")
    assert isinstance(spec, glue.HubTaskSpec) and (spec.repo, spec.config) == ("acme/tiny_reviews", None)
    assert (spec.text_a, spec.text_b, spec.label, spec.labels) == ("text", None, "label", ("neg", "pos"))
    assert (spec.train_file, spec.dev_file) == ("train", "validation") and glue.task_spec(spec.name) is spec
    dev = glue.load_split("acme/tiny_reviews", "dev")
    assert [(e.text_a, e.label) for e in dev.examples] == ROWS["validation"] and dev.n_total == 4
    assert [e.line for e in dev.examples] == [1, 2, 3, 4]
    assert dev.dataset.features["label"].names == ["neg", "pos"]
    train = glue.load_split("acme/tiny_reviews", "train", cap=5, seed=0)
    assert train.examples == old_subsample(glue.load_split("acme/tiny_reviews", "train").examples, 5, 0)
    assert glue.task_path(spec, "train").suffix == ".arrow" and glue.available(spec, "dev")
    assert [e.text_a for e in glue.read_tsv(glue.task_path(spec, "dev"), spec)] == [t for t, _ in ROWS["validation"]]
    assert glue.task_name("acme/tiny_reviews") == "acme/tiny_reviews"
    assert load_dataset("acme/tiny_reviews", cache_dir=str(hub))["train"].num_rows == 16  # what the user would run
    from attnbook.data.glue_metrics import TABLE1_METRIC

    assert TABLE1_METRIC["acme/tiny_reviews"] == "accuracy" and TABLE1_METRIC["SST-2"] == "accuracy"


def test_glue_hub_names_are_the_local_files(real_data):
    assert glue.task_spec("glue/sst2") is glue.TASKS["SST-2"]
    assert glue.task_spec("nyu-mll/glue/stsb") is glue.TASKS["STS-B"]
    assert glue.task_name("glue/sst2") == "SST-2" and glue.task_name("sst2") == "sst2"
    from attnbook.chapters.params import chapter_params

    p = chapter_params("04_kovaleva_taxonomy", "smoke", {"tasks": ["glue/sst2"], "table1_tasks": ["glue/rte"]})
    assert p.tasks == ["SST-2"] and p.table1_tasks == ["RTE"]
    assert chapter_params("04_kovaleva_taxonomy", "smoke", {"tasks": "glue/sst2"}).tasks == ["SST-2"]
    assert chapter_params("04_kovaleva_taxonomy", "smoke").tasks == ["SST-2", "STS-B"]  # the profile, untouched


def test_an_unknown_name_is_one_clear_error_before_any_model_work(hub, real_data, monkeypatch, tmp_path):
    from attnbook.chapters import runner
    from attnbook.chapters.params import chapter_params

    assert chapter_params("04_kovaleva_taxonomy", "smoke", {"tasks": ["acme/tiny_reviews"]}).tasks == \
        ["acme/tiny_reviews"]
    with pytest.raises(ParameterError) as err:
        glue.task_spec("acme/no_such_reviews")
    text = str(err.value)
    assert "load_dataset('acme/no_such_reviews')" in text and str(hub) in text and "acme___no_such_reviews/" in text
    assert "SST-2" in text and "HF_DATASETS_CACHE" in text
    with pytest.raises(ParameterError, match="GLUE's QQP.*attnbook fetch glue_large"):
        glue.task_spec("glue/qqp")  # not local here, not cached
    with pytest.raises(ParameterError, match="unknown GLUE task 'SST-3'"):
        glue.task_spec("SST-3")
    monkeypatch.setattr("papermill.execute_notebook", lambda *a, **k: pytest.fail("a notebook was started"))
    with pytest.raises(ParameterError, match="acme/no_such_reviews"):
        runner.run_chapter("04_kovaleva_taxonomy", "smoke", {"tasks": ["acme/no_such_reviews"]},
                           output_dir=tmp_path / "book")


def test_columns_are_found_or_named():
    from datasets import ClassLabel, Features, Value

    pair = Features({"premise": Value("string"), "hypothesis": Value("string"), "label": ClassLabel(names=["a", "b"])})
    assert hf.text_label_columns(pair, "x") == ("premise", "hypothesis", "label")
    score = Features({"id": Value("int64"), "s1": Value("string"), "s2": Value("string"), "score": Value("float32")})
    assert hf.text_label_columns(score, "x") == ("s1", "s2", "score")
    with pytest.raises(ParameterError, match="text column"):
        hf.text_label_columns(Features({"text": Value("string")}), "x")
    assert hf.hub_candidates("glue/sst2") == [("glue", "sst2"), ("glue/sst2", None)]
    assert hf.hub_candidates("nyu-mll/glue/sst2") == [("nyu-mll/glue", "sst2")]


def test_a_hub_task_fine_tunes_and_scores(hub, tokenizer, monkeypatch):
    """The engine fine-tunes and scores a classifier on the cached dataset, as on a book task."""
    from attnbook.engine.finetune import get_finetuned
    from attnbook.engine.models import wrap_model

    base = wrap_model(make_tiny_bert(tokenizer, n_layers=1, n_heads=2, hidden=16), tokenizer, "tiny")
    params = {"train_cap": None, "dev_cap": None, "max_length": 16, "epochs": 1, "batch_size": 8, "lr": 1e-3,
              "warmup": 0.1, "group_by_length": True, "eval_batch_size": 8}
    clf, metrics = get_finetuned(base, "acme/tiny_reviews", "pretrained_ft", params, seed=0, progress=False)
    assert clf.classifier.task == "acme/tiny_reviews" and clf.model.config.id2label == {0: "neg", 1: "pos"}
    assert metrics["n"] == 4 and 0 <= metrics["accuracy"] <= 1 and metrics["score"] == 100 * metrics["accuracy"]
    again, _ = get_finetuned(base, "acme/tiny_reviews", "pretrained_ft", params, seed=0, progress=False)
    assert again.classifier.checkpoint_key == clf.classifier.checkpoint_key  # the cached checkpoint, loaded


@pytest.mark.integration
def test_chapter_4_runs_on_glue_by_hub_name_and_on_a_cached_hub_dataset(hub, real_data, monkeypatch, tmp_path):
    """Issue 33: the smoke profile runs chapter 4 with ``tasks=glue/sst2`` (the local GLUE files under their hub
    name) and Table 1 also on ``acme/tiny_reviews`` (a datasets cache built here; the kernel is offline); the
    results name both tasks. A name that is neither local nor cached was refused above before any notebook ran."""
    import json

    from attnbook.chapters import runner

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("ATTNBOOK_RESULTS", str(tmp_path / "results"))
    runner.run_chapter("04_kovaleva_taxonomy", "smoke",
                       {"tasks": ["glue/sst2"], "table1_tasks": ["glue/sst2", "acme/tiny_reviews"]},
                       output_dir=tmp_path / "book")
    results = json.loads((tmp_path / "results" / "04_kovaleva_taxonomy.json").read_text())
    assert results["params"]["tasks"] == ["SST-2"]
    text = json.dumps(results)
    assert "acme/tiny_reviews" in text and "SST-2" in text


def test_load_rest_is_the_complement_of_the_capped_sample(real_data):
    """Issue 32: chapter 5 tests the head chosen on a capped dev sample on the dev examples outside it; those are
    exactly the rows the cap left out (file order), at most ``limit`` of them, and none when nothing was capped."""
    whole = glue.load_split("SST-2", "dev").examples
    sample = glue.load_split("SST-2", "dev", cap=96, seed=7)
    rest = glue.load_rest("SST-2", "dev", cap=96, seed=7)
    assert len(sample) + len(rest) == len(whole) == rest.n_total
    kept = set(glue.sample_indices(len(whole), 96, 7))
    assert rest.examples == [e for i, e in enumerate(whole) if i not in kept]
    limited = glue.load_rest("SST-2", "dev", cap=96, seed=7, limit=50)
    assert len(limited) == 50 and all(e in rest.examples for e in limited.examples)
    assert limited.examples == glue.load_rest("SST-2", "dev", cap=96, seed=7, limit=50).examples  # seeded
    assert len(glue.load_rest("SST-2", "dev", cap=None)) == 0 and len(glue.load_rest("SST-2", "dev", cap=5000)) == 0
