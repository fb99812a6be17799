"""Profiles, parameters and the papermill runner: clear errors, failing chapters named, outputs kept."""
from __future__ import annotations

import json

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from attnbook.chapters.params import PROFILES, chapter_params, register_chapter
from attnbook.core.errors import ChapterExecutionError, ParameterError
from attnbook.chapters.runner import parse_overrides, resolve_chapter, run_chapter

ROOT = Path(__file__).resolve().parents[1]


def test_profiles_define_the_same_parameters():
    from attnbook.chapters.params import CHAPTERS, load_registry

    load_registry()
    assert CHAPTERS, "no chapter registered"
    for chapter, profiles in CHAPTERS.items():
        assert set(profiles) == set(PROFILES)
        assert len({type(v) for v in profiles.values()}) == 1, chapter  # one typed class: the same names
        assert all(v.chapter == chapter and v.profile == name for name, v in profiles.items())


def test_unknown_profile_and_parameter():
    with pytest.raises(ParameterError, match="unknown profile 'fast'.*smoke, quick, paper"):
        chapter_params("01_clark_surface_patterns", "fast")
    with pytest.raises(ParameterError, match="unknown parameter 'n_segs'.*n_segments"):
        chapter_params("01_clark_surface_patterns", "smoke", {"n_segs": 3})
    with pytest.raises(ParameterError, match="unknown chapter"):
        chapter_params("99_nothing", "smoke")
    p = chapter_params("01_clark_surface_patterns", "smoke", {"n_segments": 7, "seed": None})
    assert p.n_segments == 7 and p.seed == chapter_params("01_clark_surface_patterns", "smoke").seed
    with pytest.raises(AttributeError, match="known"):
        p.nope


def test_register_rejects_inconsistent_profiles():
    from attnbook.chapters.spec import Chapter

    from dataclasses import dataclass

    from attnbook.core.parameters import Parameters

    @dataclass(frozen=True, kw_only=True)
    class A(Parameters):
        a: int

    @dataclass(frozen=True, kw_only=True)
    class B(Parameters):
        b: int

    def bad(profiles, cid="99_bad"):
        return Chapter(cid, "Bad", "Nowhere", profiles=profiles)

    with pytest.raises(ValueError, match="one Parameters subclass"):
        register_chapter(bad({"smoke": A(a=1), "quick": A(a=1), "paper": B(b=1)}))
    with pytest.raises(ValueError, match="one Parameters subclass"):
        register_chapter(bad({"smoke": {"a": 1}, "quick": {"a": 1}, "paper": {"a": 1}}))
    with pytest.raises(ValueError, match="exactly"):
        register_chapter(bad({"smoke": A(a=1)}))
    with pytest.raises(ValueError, match="two-digit number"):
        register_chapter(bad({"smoke": A(a=1), "quick": A(a=1), "paper": A(a=1)}, cid="zz_bad"))


def test_parse_overrides_types():
    got = parse_overrides(["n=3", "x=0.5", "flag=true", "model=bert-base-uncased", "l=[1, 2]"])
    assert got == {"n": 3, "x": 0.5, "flag": True, "model": "bert-base-uncased", "l": [1, 2]}
    with pytest.raises(ParameterError, match="key=value"):
        parse_overrides(["novalue"])


def _fake_project(tmp_path: Path, fail: bool) -> Path:
    home = tmp_path / "proj"
    (home / "notebooks").mkdir(parents=True, exist_ok=True)
    (home / "book").mkdir(exist_ok=True)
    (home / "_toc.yml").write_text("format: jb-book\nroot: book/intro\n")
    nb = new_notebook()
    params = new_code_cell('profile = "quick"\nn_segments = None')
    params.metadata["tags"] = ["parameters"]
    body = "raise ValueError('planted failure')" if fail else "print('ok', profile, n_segments)"
    nb.cells = [new_markdown_cell("# t"), params, new_code_cell("x = 1"), new_code_cell(body)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, home / "notebooks" / "01_clark_surface_patterns.ipynb")
    return home


@pytest.mark.integration
def test_failing_chapter_is_named_and_good_output_survives(tmp_path, monkeypatch):
    home = _fake_project(tmp_path, fail=False)
    monkeypatch.setenv("ATTNBOOK_HOME", str(home))
    out = run_chapter("01", "smoke", {"n_segments": 3})
    good = out.read_text()
    assert "ok smoke 3" in good
    with pytest.raises(ParameterError, match="unknown parameter.*bogus"):
        run_chapter("01", "smoke", {"bogus": 1})
    _fake_project(tmp_path, fail=True)  # same chapter now fails in its last cell
    with pytest.raises(ChapterExecutionError) as info:
        run_chapter("01", "smoke")
    err = info.value
    assert err.chapter == "01_clark_surface_patterns" and err.cell == 4 and err.ename == "ValueError"
    assert "planted failure" in str(err) and "cell 4" in str(err)
    assert out.read_text() == good  # the last good page is untouched
    assert (home / "book" / "_failed" / "01_clark_surface_patterns.ipynb").exists()
    assert sorted(p.name for p in (home / "book").iterdir()) == ["01_clark_surface_patterns.ipynb", "_failed"]


def _results_project(tmp_path: Path, run: str, fail: bool) -> Path:
    """A chapter that writes its results files in its third cell and fails (or not) in its last."""
    home = _fake_project(tmp_path, fail=False)
    nb = nbformat.read(home / "notebooks" / "01_clark_surface_patterns.ipynb", as_version=4)
    nb.cells[2] = new_code_cell(
        "from attnbook.chapters.results import ChapterResults\n"
        f"res = ChapterResults('01_clark_surface_patterns', {{'profile': profile}}, {{'name': 'm'}})\n"
        f"res.add('run', {run!r})\nres.save()")
    nb.cells[3] = new_code_cell("raise ValueError('late failure')" if fail else "print('done')")
    nbformat.write(nb, home / "notebooks" / "01_clark_surface_patterns.ipynb")
    return home


@pytest.mark.integration
def test_results_of_a_failed_chapter_are_not_published(tmp_path, monkeypatch):
    """Regression (issue 17, defect 7): the results file was written by the cell that saved it, so a chapter
    failing in a later cell left its old page beside new numbers; now page and results land together."""
    results = tmp_path / "results"
    monkeypatch.setenv("ATTNBOOK_RESULTS", str(results))
    home = _results_project(tmp_path, "first", fail=False)
    monkeypatch.setenv("ATTNBOOK_HOME", str(home))
    run_chapter("01", "smoke")
    saved = json.loads((results / "01_clark_surface_patterns.json").read_text())
    assert saved["numbers"]["run"] == "first"
    _results_project(tmp_path, "second", fail=True)
    with pytest.raises(ChapterExecutionError):
        run_chapter("01", "smoke")
    again = json.loads((results / "01_clark_surface_patterns.json").read_text())
    assert again["numbers"]["run"] == "first"  # the failed run's numbers were not published
    assert sorted(p.name for p in results.iterdir()) == ["01_clark_surface_patterns.json",
                                                          "01_clark_surface_patterns.provenance.json"]


def test_resolve_chapter_names():
    assert resolve_chapter("01") == "01_clark_surface_patterns"
    assert resolve_chapter("surface") == "01_clark_surface_patterns"
    with pytest.raises(ParameterError, match="unknown chapter"):
        resolve_chapter("42")


def test_notebooks_are_stored_without_outputs_and_have_one_parameters_cell():
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        tagged = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
        assert len(tagged) == 1, f"{path.name}: {len(tagged)} cells tagged 'parameters'"
        assert "profile = " in tagged[0].source
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, f"{path.name} has outputs"


def test_notebook_parameters_match_the_profile_table():
    from attnbook.chapters.params import CHAPTERS, load_registry
    from attnbook.chapters.runner import notebook_parameters

    load_registry()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        names = notebook_parameters(path) - {"profile"}
        assert names == set(CHAPTERS[path.stem]["quick"].names()), path.name


def test_paper_profile_is_bert_base_everywhere_and_sizes_grow():
    """The paper profile names the papers' model in every chapter and never uses smaller data than quick."""
    from attnbook.chapters.params import chapter_params
    from attnbook.chapters.profiles import PAPER_MODEL
    from attnbook.chapters.runner import available_chapters

    assert PAPER_MODEL == "bert-base-uncased"
    for chapter in available_chapters():
        paper, quick = chapter_params(chapter, "paper"), chapter_params(chapter, "quick")
        assert paper.model == PAPER_MODEL, chapter
        for name in ("n_segments", "n_examples", "n_seeds", "probe_train_sentences", "word_seeds"):
            if hasattr(quick, name) and isinstance(getattr(quick, name), int):
                assert getattr(paper, name) >= getattr(quick, name), (chapter, name)


@pytest.mark.integration
def test_published_page_has_one_parameters_cell_and_no_kernel_stderr(tmp_path, monkeypatch, capsys):
    """Regression (issue 21): the page showed the notebook's parameters cell and papermill's injected one,
    and warnings the kernel wrote to stderr (with local paths) were published."""
    home = _fake_project(tmp_path, fail=False)
    nb = nbformat.read(home / "notebooks" / "01_clark_surface_patterns.ipynb", as_version=4)
    nb.cells[3] = new_code_cell("import sys, warnings\nprint('noise from /home/someone', file=sys.stderr)\n"
                                "warnings.warn('a warning')\nprint('ok', profile, n_segments)")
    nbformat.write(nb, home / "notebooks" / "01_clark_surface_patterns.ipynb")
    monkeypatch.setenv("ATTNBOOK_HOME", str(home))
    page = nbformat.read(run_chapter("01", "smoke", {"n_segments": 3}), as_version=4)
    tagged = [c for c in page.cells if {"parameters", "injected-parameters"} & set(c.metadata.get("tags", []))]
    assert len(tagged) == 1 and tagged[0].metadata.tags == ["parameters", "hide-input"]  # folded on the page
    assert tagged[0].source.splitlines() == ['profile = "smoke"', "n_segments = 3"]
    outputs = [o for c in page.cells for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("name") == "stderr"]
    assert any("ok smoke 3" in o.get("text", "") for o in outputs)
    log = home / "_build" / "logs" / "01_clark_surface_patterns.stderr.txt"
    assert "noise from /home/someone" in log.read_text() and "a warning" in log.read_text()
    assert "1 stderr message(s) kept off the page" in capsys.readouterr().out
