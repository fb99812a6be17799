"""A chapter notebook sets itself up in a fresh environment (issue 21): its set-up cell installs attnbook and fetches
the chapter's data from a mirror, then the chapter runs in the smoke profile.

The fresh environment is a new virtualenv that sees this one's third-party packages (torch, transformers, ... through
a folder of links, so nothing large is installed again) but not attnbook, with an empty data directory; attnbook
comes from this checkout (``ATTNBOOK_SOURCE``) and the data from a ``file://`` mirror of the upstream files built
from the reference copy (``ATTNBOOK_DATA_MIRROR``)."""
from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

from attnbook.chapters.datasets import CHAPTER_DATASETS, missing_datasets, setup_cell
from attnbook.data.manifest import Manifest

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = "01_clark_surface_patterns"


def _mirror(root: Path, datasets, shared: Path) -> Path:
    manifest = Manifest.load()
    for e in manifest.entries(datasets):
        assert e.recipe is None, f"{e.key} is rebuilt by a recipe: choose a chapter whose data are plain files"
        url = manifest.sources[e.source]["upstream"]
        target = root / urllib.parse.urlsplit(url).path.lstrip("/") / e.upstream_path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(e.target(shared), target)
    return root


def _fresh_venv(path: Path) -> Path:
    """A virtualenv whose ``site-packages`` links every third-party package of this one, attnbook left out."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, capture_output=True)
    ours = Path(site.getsitepackages()[0])
    links = path / "third-party"
    links.mkdir()
    for item in ours.iterdir():
        if "attnbook" in item.name.lower():
            continue  # the package under test (and its editable-install finder) must not be importable
        (links / item.name).symlink_to(item)
    fresh_site = next(path.glob("lib/python*/site-packages"))
    (fresh_site / "third-party.pth").write_text(str(links) + "\n")
    return path / "bin" / "python"


def _source_copy(dest: Path) -> Path:
    """The package's source (what pip builds from) copied out of the checkout, so the build's ``build/`` and
    ``*.egg-info`` folders land there and not in the working tree."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(ROOT / "attnbook", dest / "attnbook", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


@pytest.mark.integration
def test_a_chapter_installs_attnbook_and_fetches_its_data_in_a_fresh_environment(tmp_path, smoke_book):
    """Chapter 1's set-up cell installs attnbook and fetches the chapter's data in a fresh environment; the chapter
    then runs there with the smoke profile and writes a results file identical, byte for byte, to the smoke book's
    (its own install, data, cache and kernel): the suite's determinism check, which used to be a third run."""
    shared = Path(os.environ["ATTNBOOK_DATA"])
    python = _fresh_venv(tmp_path / "venv")
    probe = subprocess.run([str(python), "-c", "import importlib.util as u; print(u.find_spec('attnbook'))"],
                           cwd=tmp_path, capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == "None"  # really fresh: attnbook is not importable there
    data = tmp_path / "data"
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTNBOOK_", "VIRTUAL_ENV", "PYTHON"))}
    env.update(ATTNBOOK_DATA=str(data), ATTNBOOK_CACHE=str(tmp_path / "cache"), ATTNBOOK_HOME=str(work),
               ATTNBOOK_RESULTS=str(work / "results"), ATTNBOOK_SOURCE=str(_source_copy(tmp_path / "src")),
               ATTNBOOK_DATA_MIRROR=str(_mirror(tmp_path / "mirror", CHAPTER_DATASETS[CHAPTER], shared)),
               HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PIP_NO_BUILD_ISOLATION="0",  # build with the linked setuptools (2 s) instead of fetching one (10 s)
               PATH=f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    out = work / f"{CHAPTER}.ipynb"
    run = subprocess.run([str(python), "-m", "papermill", str(ROOT / "notebooks" / f"{CHAPTER}.ipynb"), str(out),
                          "-p", "profile", "smoke", "--kernel", "python3", "--cwd", str(work)],
                         env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-4000:]
    installed = subprocess.run([str(python), "-c", "import attnbook; print(attnbook.__file__)"], cwd=tmp_path,
                               capture_output=True, text=True, check=True).stdout
    assert str(tmp_path / "venv") in installed  # installed into the fresh environment, not linked to this checkout
    assert missing_datasets(CHAPTER, data) == []
    for e in Manifest.load().entries(CHAPTER_DATASETS[CHAPTER]):
        assert e.target(data).read_bytes() == e.target(shared).read_bytes(), e.key
    nb = json.loads(out.read_text())
    setup = next(c for c in nb["cells"] if "set-up" in c["metadata"].get("tags", []))
    said = "".join("".join(o.get("text", "")) for o in setup["outputs"])  # nbformat keeps text as a list of lines
    assert f"{CHAPTER} reads wiki" in said
    written = (work / "results" / f"{CHAPTER}.json").read_bytes()
    results = json.loads(written)
    assert results["profile"] == "smoke" and results["comparisons"]
    assert written == (smoke_book / "book" / "results" / f"{CHAPTER}.json").read_bytes()
    assert not (ROOT / "build").exists()  # nothing of the install was written into the checkout


def test_every_chapter_has_its_set_up_cell_before_its_parameters():
    from attnbook.chapters.runner import available_chapters

    for chapter in available_chapters():
        cells = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text())["cells"]
        tags = [c["metadata"].get("tags", []) for c in cells]
        first_code = next(i for i, c in enumerate(cells) if c["cell_type"] == "code")
        assert "set-up" in tags[first_code] and "remove-cell" in tags[first_code], chapter
        assert "parameters" in tags[first_code + 1], chapter
        assert "".join(cells[first_code]["source"]) == setup_cell(chapter), f"{chapter}: set-up cell out of date"


def test_ensure_data_is_silent_when_everything_is_here(capsys):
    """In the book's own build the set-up cell must leave no output on the page: nothing printed, no value shown."""
    from attnbook.chapters.datasets import ensure_data

    assert missing_datasets(CHAPTER) == []
    assert ensure_data(CHAPTER) is None
    assert capsys.readouterr().out == ""
