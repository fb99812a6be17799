"""The offline classroom (issue 34): every chapter's set-up cells, in a kernel with no network at all.

For each chapter (and the front-matter page) the script takes the notebook's cells through its set-up cell (the one
that resolves the parameters and loads the model: what a reader runs first in JupyterLab), executes them with
papermill in the book's kernel set-up, and reports the seconds. The whole run is inside a network namespace of its
own (``unshare -n``: not even a loopback route to the outside), with ``HF_HUB_OFFLINE`` *unset*, so a set-up cell that
tried to download would fail or wait, not pass quietly. A second pass points ``ATTNBOOK_DATA`` at an empty folder and
runs chapter 1 on: it must stop within a minute with the error that names ``attnbook fetch`` and the mirror
(``ATTNBOOK_DATA_MIRROR``), shown without a traceback.

    python benchmarks/offline_setup.py            # re-runs itself under ``unshare -n`` where it can
    python benchmarks/offline_setup.py --json out.json

Writes the table to stdout (and the numbers to ``--json``); ``benchmarks/README.md`` keeps the last table.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
MODEL_CALLS = ("load_encoder(", "base_encoder(", "heads.load(")


def network_reachable() -> bool:
    """Whether anything outside can be reached (a DNS lookup of the model hub, then a TCP connect)."""
    try:
        socket.create_connection(("huggingface.co", 443), timeout=3).close()
        return True
    except OSError:
        return False


def setup_cells(path: Path) -> nbformat.NotebookNode:
    """``path`` cut after its first code cell that loads the model (the parameters cell kept, tagged)."""
    nb = nbformat.read(str(path), as_version=4)
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    last = next(i for i in code if any(call in nb.cells[i].source for call in MODEL_CALLS))
    nb.cells = nb.cells[: last + 1]
    return nb


def run_cells(nb: nbformat.NotebookNode, profile: str, env: dict[str, str | None]) -> tuple[float, str | None]:
    """Seconds to execute ``nb`` in a fresh kernel (papermill, the book's IPC kernels), and the error shown, if any."""
    import papermill as pm

    from attnbook.chapters.runner import ipc_kernel_manager

    saved = dict(os.environ)
    for key, value in env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    try:
        with tempfile.TemporaryDirectory() as tmp:
            src, out = Path(tmp) / "in.ipynb", Path(tmp) / "out.ipynb"
            nbformat.write(nb, str(src))
            start = time.perf_counter()
            error = None
            try:
                pm.execute_notebook(str(src), str(out), parameters={"profile": profile}, progress_bar=False,
                                    kernel_name="python3", language="python", log_output=False, cwd=tmp,
                                    kernel_manager_class=ipc_kernel_manager())
            except pm.PapermillExecutionError as exc:
                shown = [o for c in nbformat.read(str(out), as_version=4).cells if c.cell_type == "code"
                         for o in c.get("outputs", []) if o.get("output_type") == "error"]
                error = "\n".join(shown[0].get("traceback", [])) if shown else str(exc)
            return time.perf_counter() - start, error
    finally:
        os.environ.clear()
        os.environ.update(saved)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not args.inside and shutil.which("unshare"):
        probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
        if probe.returncode == 0:
            return subprocess.call(["unshare", "-n", sys.executable, __file__, "--inside", *sys.argv[1:]])
        print("unshare -n is not allowed here: running with the machine's network", file=sys.stderr)
    online = network_reachable()
    env = {"HF_HUB_OFFLINE": None, "TRANSFORMERS_OFFLINE": None, "HF_DATASETS_OFFLINE": None}
    pages = sorted((ROOT / "notebooks").glob("0*.ipynb")) + sorted((ROOT / "notebooks" / "pages").glob("*.ipynb"))
    rows = []
    for path in pages:
        seconds, error = run_cells(setup_cells(path), args.profile, env)
        rows.append({"page": path.stem, "seconds": round(seconds, 1), "error": error})
    with tempfile.TemporaryDirectory() as empty:
        first = ROOT / "notebooks" / "01_clark_surface_patterns.ipynb"
        nb = nbformat.read(str(first), as_version=4)
        seconds, error = run_cells(nb, "smoke", {**env, "ATTNBOOK_DATA": empty})
    plain = error or ""
    missing = {"page": "01 with no data", "seconds": round(seconds, 1), "error": plain,
               "names_fetch": "attnbook fetch" in plain and "ATTNBOOK_DATA_MIRROR" in plain,
               "under_a_minute": seconds < 60, "traceback_shown": "Traceback" in plain or "File " in plain}
    report = {"network_reachable": online, "profile": args.profile, "setup": rows, "no_data": missing}
    print(f"network reachable from the kernels: {online}")
    print("| page | set-up cells (s) | error |\n|---|---|---|")
    for r in rows:
        print(f"| {r['page']} | {r['seconds']} | {'none' if not r['error'] else r['error'].splitlines()[-1][:80]} |")
    print(f"| chapter 1, no data | {missing['seconds']} | names `attnbook fetch` and the mirror: "
          f"{missing['names_fetch']}; traceback shown: {missing['traceback_shown']} |")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    ok = (not online and all(r["error"] is None for r in rows) and missing["names_fetch"]
          and missing["under_a_minute"] and not missing["traceback_shown"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
