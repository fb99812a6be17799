"""`make bench` part ``cluster``: the smoke book built three ways in one run, each in a copy of the project and from
an empty cache of its own, one after the other on this machine:

* ``default``: ``attnbook build --profile smoke`` (no scheduler: chapters in book order, as the published build);
* ``local2``: the same with ``--scheduler local:2`` (chapters side by side on a two-worker local cluster);
* ``before``: the default build of the code before the Dask executor (:data:`BEFORE`, its own checkout), the
  baseline the default build must keep.

The serial builds compute on every core (torch's threads, as a user's build does); the two-worker build's workers and
the kernels they start compute on one thread each (Dask sets ``OMP_NUM_THREADS=1`` in its workers).

    python benchmarks/run.py --only cluster
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the last commit before the book's jobs went through Dask (its two process pools, chapters one after the other)
BEFORE = "10c3196"


def _project(home: Path, source: Path) -> None:
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(source / name, home / name)
    shutil.copytree(source / "notebooks", home / "notebooks")
    shutil.copytree(source / "book", home / "book",
                    ignore=shutil.ignore_patterns("*.ipynb", "results", "_failed", "attnbook-vega.js"))
    (home / "book" / "results").mkdir(exist_ok=True)


def timed_build(source: Path, scheduler: str | None, tmp: Path, name: str) -> dict:
    """Seconds of one smoke build of the checkout ``source`` from an empty cache (the rendering included)."""
    home = tmp / name
    home.mkdir()
    _project(home, source)
    env = dict(os.environ, ATTNBOOK_HOME=str(home),
               ATTNBOOK_RESULTS=str(home / "book" / "results"), ATTNBOOK_CACHE=str(home / "cache"),
               PYTHONPATH=str(source), TQDM_DISABLE="1")
    for key in ("ATTNBOOK_SCHEDULER", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "ATTNBOOK_THREADS"):
        env.pop(key, None)
    args = [sys.executable, "-m", "attnbook.chapters.cli", "build", "--profile", "smoke"]
    if scheduler:
        args += ["--scheduler", scheduler]
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=source, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        return {"error": (proc.stderr or proc.stdout)[-2000:]}
    return {"seconds": round(seconds, 1)}


def bench_cluster() -> dict:
    with tempfile.TemporaryDirectory(prefix="attnbook-bench-cluster-") as tmp_name:
        tmp = Path(tmp_name)
        before = tmp / "before-src"
        made = subprocess.run(["git", "worktree", "add", "--detach", str(before), BEFORE], cwd=ROOT,
                              capture_output=True, text=True)
        try:
            out = {"default": timed_build(ROOT, None, tmp, "default"),
                   "local2": timed_build(ROOT, "local:2", tmp, "local2"),
                   "before": (timed_build(before, None, tmp, "before") if made.returncode == 0
                              else {"error": f"no checkout of {BEFORE}: {made.stderr.strip()}"})}
        finally:
            if made.returncode == 0:
                subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=ROOT, capture_output=True)
    d, l, b = (out[k].get("seconds") for k in ("default", "local2", "before"))
    if d and l:
        out["local2_speedup"] = round(d / l, 2)
    if d and b:
        out["default_over_before"] = round(d / b, 2)
    return out


def rows(report: dict | None) -> list[tuple[str, str, str]]:
    if not isinstance(report, dict) or "default" not in report:
        return []
    s = lambda k: f"{report[k]['seconds'] / 60:.1f} min" if "seconds" in report.get(k, {}) else "failed"  # noqa: E731
    out = [("smoke book from an empty cache: serial vs `--scheduler local:2` (two one-thread workers)",
            f"{s('default')} vs {s('local2')}" + (f", {report['local2_speedup']:.2f}x faster"
                                                    if "local2_speedup" in report else ""), "(speed-up)"),
           (f"smoke book, default build (no scheduler) vs the build before the Dask executor ({BEFORE})",
            f"{s('default')} vs {s('before')}" + (f", ratio {report['default_over_before']:.2f}"
                                                   if "default_over_before" in report else ""),
            "within noise (±10%)")]
    return out


def plan_rows(plan: dict | None) -> list[tuple[str, str, str]]:
    """The plan's wall time with 1, 2, 8 and 64 workers (``bench_plan``'s ``workers``), per profile."""
    out = []
    for profile, p in (plan or {}).items():
        if isinstance(p, dict) and p.get("workers"):
            out.append((f"`attnbook plan --profile {profile} --workers " + " ".join(str(r["workers"]) for r in p["workers"])
                        + "`: wall time from an empty cache",
                        ", ".join(f"{r['workers']}: {r['wall time']}" for r in p["workers"]), "(cost)"))
    return out
