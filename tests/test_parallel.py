"""Chapters side by side on a Dask cluster (attnbook.chapters.parallel): their order, a wrong parameter, a failing
chapter, and the smoke book built through two local workers against the serial one."""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from attnbook.chapters import parallel
from attnbook.chapters.params import SPECS, load_registry
from attnbook.chapters.toc import CHAPTER_IDS
from attnbook.core import executor
from attnbook.core.errors import ChapterExecutionError, ParameterError

CH1, CH4, CH5, CH9 = "01_clark_surface_patterns", "04_kovaleva_taxonomy", "05_kovaleva_disabling", "09_across_encoders"


def test_a_chapter_waits_for_the_chapters_it_reads_and_only_those_that_run():
    load_registry()
    after = {c: SPECS[c].after for c in CHAPTER_IDS}
    waits = parallel.order(CHAPTER_IDS, after)
    assert waits[CH5] == [CH4] and waits[CH1] == [] and waits["07_arct_cues"] == []
    assert waits["08_head_atlas"] == list(CHAPTER_IDS[:6])
    assert waits[CH9] == list(CHAPTER_IDS[:3])  # it reads chapters 1-3's measurements back
    assert parallel.order([CH5, CH9], after) == {CH5: [], CH9: []}  # a chapter not built is not waited for
    with pytest.raises(ParameterError, match="reads 04_kovaleva_taxonomy, which comes after it.*book order"):
        parallel.order([CH5, CH4], after)


def test_a_wrong_parameter_fails_before_any_worker_starts_naming_the_chapter(monkeypatch):
    """Fails if the build starts a cluster first (the test has none to start: Dask's LocalCluster is replaced)."""
    monkeypatch.setattr(parallel, "_client", lambda s: pytest.fail("a cluster was started for a wrong parameter"))
    with pytest.raises(ParameterError, match="'n_segments' takes int") as info:
        parallel.run_chapters(print, executor.parse_scheduler("local:2"), "smoke", [CH1], {"n_segments": "many"})
    assert f"in chapter {CH1}" in "".join(getattr(info.value, "__notes__", []))


def _project(tmp_path: Path) -> Path:
    root = Path(__file__).resolve().parents[1]
    home = tmp_path / "project"
    home.mkdir()
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(root / name, home / name)
    shutil.copytree(root / "notebooks", home / "notebooks")
    (home / "book" / "results").mkdir(parents=True)
    return home


@pytest.mark.integration
def test_a_chapter_that_fails_on_a_worker_fails_once_naming_it(tmp_path, monkeypatch, capsys):
    """A cell that raises (here: a model that does not exist) is the chapter's own failure: reported once, with the
    chapter and its cell, not run again on another worker; its page is not written."""
    from attnbook.chapters.runner import run_all

    home = _project(tmp_path)
    monkeypatch.setenv("ATTNBOOK_HOME", str(home))
    monkeypatch.setenv("ATTNBOOK_RESULTS", str(home / "book" / "results"))
    monkeypatch.setenv(executor.SCHEDULER_ENV, "local:2")
    with pytest.raises(ChapterExecutionError, match=f"chapter {CH1} failed in cell .*no-such-model"):
        run_all("smoke", [CH1], {"model": "no-such-model"})
    out = capsys.readouterr().out
    assert out.count("FAILED") == 1 and out.count(f"{CH1} (smoke) submitted") == 1
    assert (home / "book" / "_failed" / f"{CH1}.ipynb").exists()
    assert not (home / "book" / f"{CH1}.ipynb").exists() and not list((home / "book" / "results").iterdir())


#: cells that show what the wall clock measured in this run, by page and a part of their source: their digits are
#: not compared (training seconds, a speed-up timed on the machine, CPU seconds, the run's own duration)
WALL_CLOCK_CELLS = {"04_kovaleva_taxonomy": ("cpu_seconds()",), "06_michel_pruning": ("run.speed()", "res.compare(",
                                                                                     "agreement_markdown("),
                    "07_arct_cues": ("pairwise.config_from_params(P)",)}
#: the same inside the boxes every page opens with, and in the provenance block it ends with
WALL_CLOCK_TEXT = [re.compile(p) for p in (r"run time\**:? [0-9.]+ (?:s|min)", r", [0-9.]+ (?:s|min)(?=\\n:class: note)",
                                            r"finished [0-9T:+. -]+", r"(speed gain[^\n]*?this run )[^\n<]+")]
#: what a results file holds of the wall clock
WALL_CLOCK_KEYS = ("train_seconds", "speed")
#: comparison rows that judge a number the wall clock measured (chapter 6's timed speed-up): two builds may judge
#: them differently, and with them every part of the page that tallies or lists the page's verdicts
TIMED_ROW = "speed gain"
#: those parts of a page: the findings box, the summary's "paper vs this run" line, the table and the closing words
VERDICT_SUMMARIES = ("res.compare(", "agreement_markdown(")
VERDICT_TEXT = [re.compile(p) for p in (r"```\{admonition\} Findings.*?```", r"- \*\*paper vs this run\*\*.*?(?=\\n|\")")]


def timed_verdicts(project: Path) -> dict[str, list[str]]:
    """Per chapter, the outcomes of its rows that judge a timed number (:data:`TIMED_ROW`)."""
    out = {}
    for path in sorted((project / "book" / "results").glob("*.json")):
        if not path.name.endswith(".provenance.json") and not path.name.startswith("_"):
            rows = json.loads(path.read_text()).get("comparisons", [])
            out[path.stem] = [r["verdict"] for r in rows if TIMED_ROW in str(r.get("quantity"))]
    return out


def _masked(text: str) -> str:
    for pattern in WALL_CLOCK_TEXT:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + "…", text)
    return text


def _results(path: Path) -> str:
    """A results file without its wall-clock numbers (:data:`WALL_CLOCK_KEYS`, and the comparison row that reports
    the timed speed-up)."""
    def drop(value):
        if isinstance(value, dict):
            return {k: drop(v) for k, v in value.items() if k not in WALL_CLOCK_KEYS}
        if isinstance(value, list):
            return [drop(v) for v in value if not (isinstance(v, dict) and "speed gain" in str(v.get("quantity")))]
        return value

    return json.dumps(drop(json.loads(path.read_text())), sort_keys=True)


def comparable(project: Path, timed_apart: frozenset[str] = frozenset()) -> dict[str, str]:
    """A built book's results files and executed pages, with what differs between any two runs of the same code
    taken out: the provenance files (when and where it ran), papermill's execution times, and the numbers the wall
    clock measured (:data:`WALL_CLOCK_CELLS`, :data:`WALL_CLOCK_TEXT`, :data:`WALL_CLOCK_KEYS`). Everything else of
    a page is compared as it is written: its text, tables, figures' data and the outputs' ids.

    For the chapters in ``timed_apart`` (whose timed rows two builds judged differently) the parts of the page that
    list or count its verdicts are left out too (:data:`VERDICT_SUMMARIES`, :data:`VERDICT_TEXT`); the rows
    themselves, every verdict but the timed one's, are still compared in the results file."""
    out: dict[str, str] = {}
    for path in sorted((project / "book" / "results").glob("*.json")):
        if not path.name.endswith(".provenance.json") and not path.name.startswith("_"):
            out[f"results/{path.name}"] = _results(path)
    for path in sorted((project / "book").glob("*.ipynb")):
        nb = json.loads(path.read_text())
        nb["metadata"].pop("papermill", None)
        for cell in nb["cells"]:
            for key in ("papermill", "execution"):
                cell.get("metadata", {}).pop(key, None)
            source = "".join(cell["source"])
            text = json.dumps(cell, sort_keys=True)
            if any(part in source for part in WALL_CLOCK_CELLS.get(path.stem, ())) or "chapter.provenance(" in source:
                text = re.sub(r"[0-9]+", "#", text)
            if path.stem in timed_apart:
                if any(part in source for part in VERDICT_SUMMARIES):
                    text = "(verdicts)"
                for pattern in VERDICT_TEXT:
                    text = pattern.sub("(verdicts)", text)
            cell["_compared"] = _masked(text)
        out[path.name] = "\n".join(c["_compared"] for c in nb["cells"])
    return out


def _first_difference(a: str, b: str, context: int = 160) -> str:
    """Where two compared texts first part, with some text around it, for the failure's message."""
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"…{a[max(0, i - context):i + context]!r} vs …{b[max(0, i - context):i + context]!r}"


@pytest.mark.integration
def test_the_smoke_book_built_on_two_local_workers_is_the_serial_one(smoke_book, smoke_book_dask):
    """Every chapter of the smoke book run side by side on a local cluster of two one-thread workers, from a cache
    of its own (each chapter, and chapter 4's fine-tuning jobs, computed on the workers): the results files and
    pages are those of the serial build (:func:`comparable`), and the rendered book has every page."""
    verdicts = timed_verdicts(smoke_book), timed_verdicts(smoke_book_dask)
    apart = frozenset(c for c in verdicts[0] if verdicts[0][c] != verdicts[1].get(c))
    serial, dask = comparable(smoke_book, apart), comparable(smoke_book_dask, apart)
    assert set(serial) == set(dask) and len([k for k in serial if k.startswith("results/")]) >= 9
    differ = {name: _first_difference(serial[name], dask[name]) for name in serial if serial[name] != dask[name]}
    assert not differ, f"differ between the serial and the two-worker build: {differ}"
    times = json.loads((smoke_book_dask / "times.json").read_text())
    assert set(CHAPTER_IDS) <= set(times)
    html = smoke_book_dask / "_build" / "html" / "book"
    assert all((html / f"{c}.html").exists() for c in CHAPTER_IDS)


def test_a_free_worker_takes_the_chapter_most_others_wait_for_first():
    load_registry()
    waits = parallel.order(CHAPTER_IDS, {c: SPECS[c].after for c in CHAPTER_IDS})
    first = parallel.priorities(waits)
    ranked = sorted(CHAPTER_IDS, key=first.get, reverse=True)
    assert ranked[0] == CH4  # 5, 6 and the atlas read it
    assert ranked[1:4] == list(CHAPTER_IDS[:3])  # the atlas and chapter 9 read them; then book order
    assert first["08_head_atlas"] < first["07_arct_cues"]  # nothing waits for either: book order


def test_the_cluster_page_states_the_executors_retries_and_shows_the_benchmarks_plan(tmp_path):
    """The page "Beyond one machine" says how often a lost job runs again as the executor does, and its numbers come
    from make bench's report (machine and date named), or it says there are none."""
    from attnbook.chapters.frontmatter import cluster_plan_markdown

    root = Path(__file__).resolve().parents[1]
    page = (root / "book" / "on_a_cluster.md").read_text()
    words = {1: "once", 2: "twice", 3: "three times"}
    assert f"at\nmost {words[executor.ALLOWED_FAILURES]}" in page or f"at most {words[executor.ALLOWED_FAILURES]}" in page
    assert "_generated/cluster_plan.md" in page
    assert "has not priced the profiles" in cluster_plan_markdown(tmp_path / "none.json")
    report = tmp_path / "latest.json"
    rows = lambda p: [{"profile": p, "workers": n, "wall time": f"{60 // n} min",  # noqa: E731
                       "set by": "the work / workers" if n < 8 else "a chain of chapters",
                       "chain": "04 → 05", "chain time": "5 min", "work / workers": "1 min", "hours": 1 / n}
                      for n in (1, 2, 8)]
    report.write_text(json.dumps({"machine": {"cpu": "Some CPU", "cores": 2}, "date": "2026-11-29 10:00",
                                  "plan": {"quick": {"model": "embedded", "workers": rows("quick")}},
                                  "cluster": {"default": {"seconds": 600.0}, "local2": {"seconds": 420.0}}}))
    text = cluster_plan_markdown(report)
    assert "Some CPU (2 cores)" in text and "2026-11-29 10:00" in text and "| `quick` (embedded) | 60 min (work) |" in text
    assert "10.0 min built serially and 7.0 min" in text
    # the table's cells are short (a column keeps the width of its longest word at 1,280 px); the chain is named below
    assert "| 7 min (chain) |" in text and "From 8 workers on, the `quick` profile's time is set by the chain 04 → 05" in text


def test_the_workers_and_the_chapters_they_run_draw_no_progress_bars(monkeypatch):
    """As in a serial build: the variable is set before the cluster starts (a local cluster's workers inherit it,
    and the chapters' jobs run there) and travels with each chapter (fails if the build leaves it unset)."""
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    seen = {}

    def no_cluster(s):
        seen["at start"] = os.environ.get("TQDM_DISABLE")
        raise RuntimeError("no cluster in this test")

    monkeypatch.setattr(parallel, "_client", no_cluster)
    with pytest.raises(RuntimeError, match="no cluster"):
        parallel.run_chapters(print, executor.parse_scheduler("local:2"), "smoke", [CH1])
    assert seen == {"at start": "1"}
    monkeypatch.setenv("TQDM_DISABLE", "0")  # a reader who wants the bars keeps them
    with pytest.raises(RuntimeError, match="no cluster"):
        parallel.run_chapters(print, executor.parse_scheduler("local:2"), "smoke", [CH1])
    assert seen == {"at start": "0"}
