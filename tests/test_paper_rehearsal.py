"""The paper path, rehearsed end to end (issue 19): every chapter executes with ``profile=paper`` on a small
randomly initialised ``BertForMaskedLM`` planted in a temporary Hugging Face cache as ``bert-base-uncased``
(offline), with tiny MNLI/QQP/QNLI-train files in their original formats beside the real data, overriding only
sizes through papermill parameters (:data:`planted.REHEARSAL_SIZES`).

What it checks: the paper profile's code path runs - the hub name resolves to a cached snapshot, chapter 1 uses
the checkpoint's own MLM head, chapter 4 learns the pattern classes from the embedded model's labelled maps and
says it transfers them, the seven Table 1 tasks and Michel's MNLI matched/mismatched section run, and every
results file records the model and the device. What it cannot check: any number of the real bert-base weights.
"""
from __future__ import annotations

import json
from pathlib import Path

import longruns
import pytest
from planted import REHEARSAL_SIZES

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def paper_run() -> dict:
    """The rehearsal (:func:`longruns.paper_rehearsal`), started in the background when collection ended."""
    return longruns.result("paper_run", longruns.paper_rehearsal)


def _results(run: dict, chapter: str) -> tuple[dict, dict]:
    folder = run["results"]
    return (json.loads((folder / f"{chapter}.json").read_text()),
            json.loads((folder / f"{chapter}.provenance.json").read_text()))


@pytest.mark.integration
def test_every_chapter_runs_the_paper_profile_on_the_planted_model(paper_run):
    for chapter in REHEARSAL_SIZES:
        results, prov = _results(paper_run, chapter)
        assert results["profile"] == "paper" and results["comparisons"], chapter
        assert prov["model"]["name"] == "bert-base-uncased", chapter
        assert prov["model"]["revision"] == "0123456789abcdef0123456789abcdef01234567", chapter
        assert prov["model"]["device"] == "cpu", chapter
        assert "not bert-base-uncased's 12 x 12, 768" in prov["model"]["shape_note"], chapter
        assert (paper_run["home"] / "book" / f"{chapter}.ipynb").exists()


@pytest.mark.integration
def test_paper_run_uses_berts_own_mlm_head_and_states_the_label_transfer(paper_run):
    ch1, _ = _results(paper_run, "01_clark_surface_patterns")
    assert ch1["numbers"]["mlm_head"]["source"] == "pretrained"
    (row,) = [r for r in ch1["comparisons"] if r["quantity"].startswith("MLM head")]
    assert "checkpoint's own MLM head" in row["note"]
    ch4, _ = _results(paper_run, "04_kovaleva_taxonomy")
    taxonomy = [r for r in ch4["comparisons"] if r["experiment"].startswith("§4.1")]
    assert taxonomy and all(r["verdict"] == "not comparable" and "another model" in r["rule"] for r in taxonomy)
    page = (paper_run["home"] / "book" / "04_kovaleva_patterns.ipynb").read_text()  # §4.1's page of chapter 4
    assert "The pattern labels describe another model" in page


@pytest.mark.integration
def test_paper_run_covers_every_table1_task_and_mnli_mismatched(paper_run):
    ch4, _ = _results(paper_run, "04_kovaleva_taxonomy")
    rows = " ".join(r["quantity"] for r in ch4["comparisons"])
    for task in ("MRPC", "STS-B", "SST-2", "QQP", "RTE", "QNLI", "MNLI-m"):
        assert task in rows, f"Table 1 has no {task} row"
    ch6, _ = _results(paper_run, "06_michel_pruning")
    assert "MNLI-mm" in json.dumps(ch6), "Michel's mismatched (out-of-domain) section did not run"


@pytest.mark.integration
def test_the_chapters_provenance_lists_every_cache_entry_the_run_made(paper_run):
    """Each chapter lists the cache entries it read or wrote (checkpoints trained in worker processes included), so
    ``attnbook cache prune --unused`` after this run would remove nothing this run made."""
    from attnbook.core import cache_admin

    record = cache_admin.book_record(paper_run["results"])
    assert set(REHEARSAL_SIZES) <= set(record.profiles) and not record.unrecorded
    made = cache_admin.entries(paper_run["home"].parent / "cache")
    assert any(e.kind == cache_admin.CHECKPOINT_KIND for e in made) and len(made) > 20
    report = cache_admin.prune(paper_run["home"].parent / "cache", unused_by=record, dry_run=True)
    assert [e.name for e in report.removed] == []
    assert all(record.uses.get(e.name) for e in made)
