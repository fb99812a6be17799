"""Opening a chapter from the online book (issue 34): every chapter page's Binder and Colab buttons open the chapter's
source notebook, ``notebooks/<chapter>.ipynb``, a file the repository holds.

The links are made as the book's build makes them, with no build: Jupyter Book turns ``_config.yml`` (``repository``:
url and branch, the one setting the links come from; ``launch_buttons``) into the Sphinx configuration,
sphinx-book-theme builds each chapter page's launch buttons from it, and the book's extension
(:mod:`attnbook.chapters.sphinxext`) points them from the executed copy in ``book/`` (built, not committed) at the
source notebook. Each link's repository, branch and path are then read back out of the URL and checked against the
configuration and the checkout (``git ls-files``: the file is in the repository, not only on this disk).
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from attnbook.chapters.toc import PAGE_CHAPTER

ROOT = Path(__file__).resolve().parents[1]


def chapter_pages() -> list[str]:
    """The book's notebook pages (docnames), from ``_toc.yml``: the ones whose executed notebook is in book/."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    return [f for f in files if Path(f).name in PAGE_CHAPTER]


@pytest.fixture(scope="module")
def sphinx_config() -> dict:
    from jupyter_book.config import get_final_config

    config, _ = get_final_config(user_yaml=ROOT / "_config.yml", cli_config={"latex_individualpages": False},
                                 sourcedir=ROOT)
    return config


class _Config(dict):
    """What the theme reads of ``app.config``: items and attributes."""

    __getattr__ = dict.__getitem__


def launch_urls(config: dict, pagename: str) -> dict[str, str]:
    """The launch buttons' URLs of the page ``pagename`` (``book/01_x``) as the book's build makes them:
    sphinx-book-theme's handler, then the book's extension."""
    from sphinx_book_theme.header_buttons import update_context_with_repository_info
    from sphinx_book_theme.header_buttons.launch import add_launch_buttons

    from attnbook.chapters.sphinxext import _launch_from_sources

    app_config = _Config(html_theme_options=config["html_theme_options"], html_context={})
    app = SimpleNamespace(
        config=app_config, builder=None, outdir=str(ROOT / "_build" / "html"),
        env=SimpleNamespace(doc2path=lambda name: str(ROOT / f"{name}.ipynb"),
                            metadata={pagename: {"kernelspec": {"name": "attnbook", "language": "python"}}}),
    )
    update_context_with_repository_info(app)  # the theme's repository context (github_user, ...) from the url
    context = dict(app_config.html_context, pagename=pagename, sourcename=f"{pagename}.ipynb",
                   page_source_suffix=".ipynb", header_buttons=[])
    add_launch_buttons(app, pagename, "page.html", context, None)
    _launch_from_sources(app, pagename, "page.html", context, None)
    return {b["text"]: b["url"] for g in context["header_buttons"] if g.get("label") == "launch-buttons"
            for b in g["buttons"] if "url" in b}


def repository_file(url: str) -> tuple[str, str, str]:
    """(``org/repo``, branch, path) of the file a Binder or Colab launch URL opens."""
    parts = urlsplit(url)
    if parts.netloc == "mybinder.org":  # /v2/gh/ORG/REPO/BRANCH?urlpath=lab/tree/PATH
        _, v2, gh, org, repo, branch = parts.path.split("/", 5)
        assert (v2, gh) == ("v2", "gh"), url
        urlpath = parse_qs(parts.query)["urlpath"][0]
        assert urlpath.startswith("lab/tree/"), url  # opens in JupyterLab (launch_buttons.notebook_interface)
        return f"{org}/{repo}", branch, urlpath[len("lab/tree/"):]
    if parts.netloc == "colab.research.google.com":  # /github/ORG/REPO/blob/BRANCH/PATH
        _, github, org, repo, blob, branch, path = parts.path.split("/", 6)
        assert (github, blob) == ("github", "blob"), url
        return f"{org}/{repo}", branch, path
    raise AssertionError(f"not a Binder or Colab URL: {url}")


def tracked(path: str) -> bool:
    """Whether the checkout's repository holds ``path`` (where there is no git, whether the file exists)."""
    try:
        out = subprocess.run(["git", "ls-files", "--error-unmatch", path], cwd=ROOT, capture_output=True, text=True,
                             check=False)
    except FileNotFoundError:
        return (ROOT / path).is_file()
    if out.returncode != 0 and "not a git repository" in out.stderr:
        return (ROOT / path).is_file()
    return out.returncode == 0


def test_binder_and_colab_open_each_chapters_source_notebook(sphinx_config):
    """Every chapter page, each page of a chapter published on several included, opens its chapter's notebook."""
    settings = yaml.safe_load((ROOT / "_config.yml").read_text())
    repository = settings["repository"]
    origin = urlsplit(repository["url"]).path.strip("/")
    pages = chapter_pages()
    assert pages, "no chapter in _toc.yml"
    for page in pages:
        urls = launch_urls(sphinx_config, page)
        assert set(urls) == {"Binder", "Colab"}, f"{page}: {urls}"
        for provider, url in urls.items():
            repo, branch, path = repository_file(url)
            assert (repo, branch) == (origin, repository["branch"]), f"{page} {provider}: {url}"
            assert path == f"notebooks/{PAGE_CHAPTER[Path(page).name]}.ipynb", f"{page} {provider} opens {path}"
            assert tracked(path), f"{page} {provider}: {path} is not in the repository"


def test_each_opened_notebook_sets_itself_up_and_asks_for_a_python_kernel():
    """What Binder or Colab opens can run there: its first code cell is the set-up cell (installs attnbook, fetches
    the data), and its kernel falls back to the place's Python kernel where ``attnbook`` is not registered."""
    for page in chapter_pages():
        nb = json.loads((ROOT / "notebooks" / f"{PAGE_CHAPTER[Path(page).name]}.ipynb").read_text())
        first = next(c for c in nb["cells"] if c["cell_type"] == "code")
        assert "set-up" in first["metadata"].get("tags", []), page
        assert nb["metadata"]["kernelspec"]["language"] == "python", page


def test_the_links_follow_the_repository_setting(sphinx_config):
    """One setting: another repository and branch in ``_config.yml`` move every link with them."""
    import copy

    config = copy.deepcopy(sphinx_config)
    config["html_theme_options"].update(repository_url="https://github.com/someone/fork", repository_branch="seminar")
    page = chapter_pages()[0]
    for url in launch_urls(config, page).values():
        assert repository_file(url)[:2] == ("someone/fork", "seminar"), url
