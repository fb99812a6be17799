"""A reader's sessions in JupyterLab (issue 34), driven in Chromium by Playwright.

A real ``jupyter lab`` server from this environment serves a temporary folder holding a copy of chapter 1's notebook;
the test opens it, sets the smoke profile the way a reader would (typing into the parameters cell), runs all cells
from the Run menu and waits for the kernel to go idle. Then: the kernel is the project's named kernel (``attnbook``,
``make install`` registers it), no cell shows an error, every chart is drawn (an SVG or canvas of positive size in
its output, not only a mimetype in the notebook), a chart answers the mouse with a tooltip, and the chapter wrote its
results file. The server's environment points ``ATTNBOOK_RESULTS``/``ATTNBOOK_CACHE`` and Jupyter's own folders
(settings, workspaces, runtime) at temporary folders, so the reader's files are never touched.

A second session opens chapter 4, runs the cells that set it up and the cell of its labelling tool (an ipywidgets
widget over the reviewed attention maps), and clicks it: the tool shows a map, a class button labels it (the labels
file is written) and moves to the next map, Back returns to it with the chosen class highlighted.

Screenshots (the opened notebook, a drawn chart, its tooltip, the labelling tool before and after a click) are kept in the test's ``tmp_path``, which pytest
keeps when the test fails. The server and the kernels it started are shut down in the fixture's teardown, however
the test ends.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = "01_clark_surface_patterns"
#: the chapter whose labelling tool (an ipywidgets widget) the second test opens and clicks
WIDGET_CHAPTER = "04_kovaleva_taxonomy"
KERNEL = "attnbook"
# the browser of the page checks (tests/test_book.py): $ATTNBOOK_CHROMIUM, Debian's chromium, else Playwright's own
CHROMIUM = (os.environ.get("ATTNBOOK_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
            or shutil.which("google-chrome"))
#: seconds the whole run of the chapter may take in the browser (smoke profile: ~40 s on an idle machine)
RUN_TIMEOUT = 420

#: JupyterLab settings of the session: no news or update check (no network), nothing else changed
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                         "checkForUpdates": False},
}

#: JavaScript: where the run stands, from what the notebook shows
PROGRESS = r"""
() => {
  const cells = Array.from(document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell'));
  const prompts = cells.map(c => (c.querySelector('.jp-InputArea-prompt') || {}).textContent || '');
  const indicator = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator');
  return {cells: cells.length,
          running: prompts.filter(p => p.includes('*')).length,
          ran: prompts.filter(p => /\[\d+\]/.test(p)).length,
          status: indicator ? indicator.getAttribute('data-status') : null};
}
"""

#: JavaScript: the charts drawn in the notebook's outputs, and the error outputs shown
OUTPUTS = r"""
() => {
  const outputs = Array.from(document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output'));
  const drawn = [];
  for (const out of outputs) {
    // the interactive chart (vega-embed's SVG or canvas) if there is one, else the static SVG of the HTML
    const found = out.querySelector('.vega-embed svg.marks, .vega-embed canvas.marks')
                  || out.querySelector('.attnbook-chart .attnbook-static > svg');
    if (!found) continue;
    found.scrollIntoView({block: 'center'});
    const r = found.getBoundingClientRect();
    drawn.push({w: Math.round(r.width), h: Math.round(r.height), live: !!found.closest('.vega-embed'),
                marks: found.querySelectorAll('path, rect, circle, line, text').length});
  }
  const errors = outputs.filter(o => /Traceback \(most recent call last\)|^\w+Error: /m.test(o.textContent)
                                     && o.getAttribute('data-mime-type') === 'application/vnd.jupyter.stderr')
                        .map(o => o.textContent.slice(0, 400));
  return {drawn, errors};
}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, token: str, method: str = "GET"):
    req = urllib.request.Request(url, method=method, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        body = r.read()
        return json.loads(body) if body else None


class Lab:
    """A running JupyterLab: its URL, token, root folder, log, and the results folder its kernels write to."""

    def __init__(self, proc: subprocess.Popen, url: str, token: str, root: Path, results: Path, log: Path) -> None:
        self.proc, self.url, self.token, self.root, self.results, self.log = proc, url, token, root, results, log
        self.processes: dict = {}  # pid -> psutil.Process: the kernels (and any helper) the server started

    def api(self, path: str, method: str = "GET"):
        return _get(f"{self.url}{path}", self.token, method)

    def wait_for_kernel(self, timeout: float = 90) -> list[dict]:
        """The sessions, once the notebook's kernel has started and is idle."""
        deadline = time.time() + timeout
        while True:
            sessions = self.api("/api/sessions")
            if sessions and all(s["kernel"]["execution_state"] == "idle" for s in sessions):
                return sessions
            if time.time() > deadline:
                pytest.fail(f"no idle kernel in {timeout} s: {sessions}")
            time.sleep(0.5)

    def cpu_seconds(self) -> float:
        """CPU time the server's child processes (the kernel) have used so far."""
        import psutil

        self.note_processes()
        total = 0.0
        for p in self.processes.values():
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.Error:
                pass
        return total

    def note_processes(self) -> None:
        """Remember the server's child processes while it runs, to end any that outlive it."""
        import psutil

        try:
            self.processes.update({c.pid: c for c in psutil.Process(self.proc.pid).children(recursive=True)})
        except psutil.Error:
            pass


@pytest.fixture
def lab(tmp_path):
    """``jupyter lab`` on a free port, serving a copy of the chapter's notebook; stopped with its kernels after."""
    import psutil

    root = tmp_path / "lab"
    (root / "notebooks").mkdir(parents=True)
    for name in (CHAPTER, WIDGET_CHAPTER):
        shutil.copy2(ROOT / "notebooks" / f"{name}.ipynb", root / "notebooks")
    settings = tmp_path / "lab-settings"
    for name, value in LAB_SETTINGS.items():
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / name).write_text(json.dumps(value))
    # a short folder: the kernels' connection files live here (and a Unix socket path has at most ~100 bytes)
    runtime = Path(tempfile.mkdtemp(prefix="attnbook-lab-"))
    results = tmp_path / "results"
    token = secrets.token_hex(16)
    port = _free_port()
    env = dict(os.environ)
    for key in ("JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "ATTNBOOK_HOME", "ATTNBOOK_RESULTS_STAGING",
                "ATTNBOOK_PROFILE", "ATTNBOOK_CHARTS"):  # a reader's defaults, whatever this shell has set
        env.pop(key, None)
    env.update(
        ATTNBOOK_RESULTS=str(results), ATTNBOOK_CACHE=str(tmp_path / "cache"),
        JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"), JUPYTER_DATA_DIR=str(tmp_path / "jupyter-data"),
        JUPYTER_RUNTIME_DIR=str(runtime), JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "lab-workspaces"),
        HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
    )
    log = tmp_path / "jupyter-lab.log"
    logfile = log.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}"]
        + (["--allow-root"] if os.geteuid() == 0 else []),  # CI's machines run the suite as root
        env=env, cwd=root, stdout=logfile, stderr=subprocess.STDOUT, start_new_session=True,
    )
    server = Lab(proc, f"http://127.0.0.1:{port}", token, root, results, log)
    try:
        deadline = time.time() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"jupyter lab exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
            try:
                server.api("/api/status")
                break
            except OSError:
                if time.time() > deadline:
                    pytest.fail(f"jupyter lab did not answer in 90 s:\n{log.read_text()[-3000:]}")
                time.sleep(0.5)
        yield server
    finally:
        server.note_processes()
        try:  # the kernels first, through the server, as JupyterLab's "Shut Down All Kernels" does
            for k in server.api("/api/kernels") or []:
                server.api(f"/api/kernels/{k['id']}", method="DELETE")
        except (OSError, ValueError) as exc:  # the server is gone already: SIGTERM below finds nothing either
            print(f"shutting down the kernels through the server: {exc}")
        proc.send_signal(signal.SIGTERM)  # the server shuts down the kernels it still has, then exits
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        for p in server.processes.values():  # a kernel that outlived its server (each has its own session)
            try:
                p.kill()
            except psutil.Error:
                pass
        logfile.close()
        shutil.rmtree(runtime, ignore_errors=True)


def _launch_browser(pw):
    return pw.chromium.launch(
        executable_path=CHROMIUM,  # None: Playwright's own Chromium
        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
              "--disable-component-update", "--disable-sync"],
    )


def _open_notebook(browser, lab: Lab, chapter: str):
    """A new page showing the chapter's notebook in JupyterLab, once its parameters cell is drawn; and the list
    that collects the page's JavaScript errors."""
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page_errors: list[str] = []
    page.on("pageerror", lambda exc: page_errors.append(str(exc)))
    page.goto(f"{lab.url}/lab/tree/notebooks/{chapter}.ipynb?token={lab.token}")
    page.locator(".jp-CodeCell .cm-line", has_text='profile = "quick"').first.wait_for(timeout=90_000)
    return page, page_errors


def _set_smoke_profile(page) -> None:
    """Type the smoke profile into the parameters cell, as a reader would: click the line, select it, retype it."""
    line = page.locator(".jp-CodeCell .cm-line", has_text='profile = "quick"').first
    line.click()
    page.keyboard.press("End")
    page.keyboard.press("Shift+Home")
    page.keyboard.type('profile = "smoke"')
    page.keyboard.press("Escape")  # leave the editor (command mode), as before using the menu
    assert page.locator(".jp-CodeCell .cm-line", has_text='profile = "smoke"').count() == 1


def _run_all_from_menu(page) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()


def _wait_for_the_run(page, lab: Lab) -> dict:
    """Until no cell is queued or running and the kernel is idle (twice in a row, a second apart)."""
    deadline = time.time() + RUN_TIMEOUT
    idle_polls = 0
    state: dict = {}
    page.wait_for_timeout(1000)
    while time.time() < deadline:
        lab.note_processes()
        state = page.evaluate(PROGRESS)
        kernels = lab.api("/api/kernels")
        busy = any(k["execution_state"] != "idle" for k in kernels)
        idle_polls = idle_polls + 1 if (state["running"] == 0 and not busy and state["status"] == "idle") else 0
        if idle_polls >= 2:
            return state
        page.wait_for_timeout(1000)
    page.screenshot(path=str(lab.root.parent / "timeout.png"))
    pytest.fail(f"the chapter did not finish in {RUN_TIMEOUT} s: {state}")


def _run_cell(page, cell) -> None:
    """Select a code cell by its prompt and run it in place (Ctrl+Enter), as a reader running one cell does."""
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputPrompt").first.click()
    page.keyboard.press("Control+Enter")


def _saved_notebook(page, lab: Lab) -> dict:
    """Save from the keyboard (Ctrl+S) and read the notebook as the server wrote it."""
    path = lab.root / "notebooks" / f"{CHAPTER}.ipynb"
    before = path.stat().st_mtime_ns
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").first.click(position={"x": 5, "y": 5})
    page.keyboard.press("Control+s")
    deadline = time.time() + 30
    while path.stat().st_mtime_ns == before and time.time() < deadline:
        time.sleep(0.2)
    assert path.stat().st_mtime_ns != before, "the notebook was not saved"
    while True:  # the server may still be writing it
        try:
            return json.loads(path.read_text())
        except json.JSONDecodeError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)


@pytest.mark.integration
def test_a_reader_runs_chapter_1_in_jupyterlab(lab, tmp_path):
    from playwright.sync_api import sync_playwright

    started = time.time()
    with sync_playwright() as pw:
        browser = _launch_browser(pw)
        try:
            page, page_errors = _open_notebook(browser, lab, CHAPTER)
            # the notebook asks for the project's kernel by name, and gets it
            page.wait_for_function(
                "() => { const i = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) "
                ".jp-Notebook-ExecutionIndicator'); return i && i.getAttribute('data-status') === 'idle'; }",
                timeout=90_000)
            sessions = lab.wait_for_kernel()
            assert [s["kernel"]["name"] for s in sessions] == [KERNEL], sessions
            assert page.locator(".jp-KernelName, .jp-Toolbar-kernelName").first.inner_text().strip() == "attnbook (.venv)"

            opened = time.time()
            _set_smoke_profile(page)
            page.screenshot(path=str(tmp_path / "1-opened-smoke-profile.png"))
            _run_all_from_menu(page)
            state = _wait_for_the_run(page, lab)
            print(f"JupyterLab: notebook open with an idle kernel {opened - started:.0f} s after the browser started; "
                  f"all cells ran in {time.time() - opened:.0f} s (kernel CPU {lab.cpu_seconds():.0f} s); {state}")

            shown = page.evaluate(OUTPUTS)
            assert not shown["errors"], "error output(s) in the notebook:\n" + "\n---\n".join(shown["errors"])
            assert state["ran"] == state["cells"], f"not every code cell ran: {state}"

            nb = _saved_notebook(page, lab)
            outputs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
            errors = [f"{o['ename']}: {o['evalue']}" for o in outputs if o["output_type"] == "error"]
            assert not errors, errors
            params = next(c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", []))
            assert 'profile = "smoke"' in "".join(params["source"])
            charts = [o for o in outputs if any(k.startswith("application/vnd.vegalite") for k in o.get("data", {}))]
            assert charts, "the chapter displayed no chart"
            drawn = shown["drawn"]
            assert len(drawn) == len(charts), f"{len(charts)} charts in the notebook, {len(drawn)} drawn: {drawn}"
            blank = [d for d in drawn if d["w"] < 50 or d["h"] < 50 or d["marks"] < 5]
            assert not blank, f"charts drawn empty or too small: {blank}"
            # interactive: every chart is a live Vega view (the widget), not the HTML's static SVG
            assert all(d["live"] for d in drawn), f"static charts in JupyterLab: {drawn}"

            chart = page.locator(".jp-OutputArea-output .vega-embed").first
            chart.scroll_into_view_if_needed()
            chart.screenshot(path=str(tmp_path / "2-first-chart.png"))
            # a point of a chart answers the mouse with its tooltip (vega-tooltip's element)
            mark = page.locator(".jp-OutputArea-output .vega-embed svg.marks g.mark-symbol path").first
            mark.scroll_into_view_if_needed()
            mark.hover(force=True)
            tooltip = page.locator("#vg-tooltip-element.visible")
            tooltip.wait_for(state="visible", timeout=10_000)
            assert "head" in tooltip.inner_text()
            page.screenshot(path=str(tmp_path / "3-tooltip.png"))

            results = lab.results / f"{CHAPTER}.json"
            assert results.exists(), f"no results file in {lab.results}: {sorted(p.name for p in lab.results.glob('*'))}"
            written = json.loads(results.read_text())
            assert written["profile"] == "smoke" and written["comparisons"]
            assert not page_errors, page_errors
        finally:
            browser.close()


#: JavaScript: the labelling tool in the notebook's outputs: its text, its picture's size, its buttons' classes
TOOL = r"""
() => {
  const box = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output .widget-vbox');
  if (!box) return null;
  const img = box.querySelector('.widget-image, img');
  const buttons = Array.from(box.querySelectorAll('button'));
  return {text: (box.querySelector('.widget-html') || box).textContent,
          image: img ? {w: img.naturalWidth, h: img.naturalHeight} : null,
          buttons: buttons.map(b => ({name: b.textContent.trim(), success: b.classList.contains('mod-success')}))};
}
"""


@pytest.mark.integration
def test_a_reader_labels_maps_with_chapter_4s_tool_in_jupyterlab(lab, tmp_path):
    import re

    from playwright.sync_api import sync_playwright

    from attnbook.studies.kovaleva.patterns import CLASSES

    with sync_playwright() as pw:
        browser = _launch_browser(pw)
        try:
            page, page_errors = _open_notebook(browser, lab, WIDGET_CHAPTER)
            assert [s["kernel"]["name"] for s in lab.wait_for_kernel()] == [KERNEL]
            _set_smoke_profile(page)
            cells = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell")
            # the set-up, the parameters, the imports and the chapter's pipeline; then the tool's own cell
            tool_cell = cells.filter(has=page.locator(".cm-line", has_text="annotation_widget(")).first
            for cell in [cells.nth(i) for i in range(4)] + [tool_cell]:
                _run_cell(page, cell)
                _wait_for_the_run(page, lab)
            shown = page.evaluate(OUTPUTS)
            assert not shown["errors"], "error output(s) in the notebook:\n" + "\n---\n".join(shown["errors"])

            page.locator(".jp-OutputArea-output .widget-vbox").first.wait_for(timeout=30_000)
            before = page.evaluate(TOOL)
            first = re.search(r"map 1 of (\d+): (\S.*?), head (\d+)-(\d+)", before["text"])
            assert first, f"the tool does not show a first map with its 1-based head label: {before['text']!r}"
            n_maps = int(first.group(1))
            assert n_maps > 1 and int(first.group(3)) >= 1 and int(first.group(4)) >= 1
            assert before["image"] and before["image"]["w"] > 0 and before["image"]["h"] > 0, before
            names = [b["name"] for b in before["buttons"]]
            assert set(CLASSES) <= set(names), names
            assert not any(b["success"] for b in before["buttons"]), "a class is highlighted before any label"
            tool_cell.screenshot(path=str(tmp_path / "4-labelling-tool.png"))

            labels_file = lab.root / "notebooks" / "my_labels.json"
            assert not labels_file.exists()
            page.get_by_role("button", name=CLASSES[0], exact=True).click()
            page.wait_for_function(
                "() => { const b = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .widget-vbox "
                ".widget-html'); return b && b.textContent.includes('map 2 of'); }", timeout=15_000)
            saved = json.loads(labels_file.read_text())
            assert [e["label"] for e in saved["maps"]] == [CLASSES[0]], saved
            page.get_by_role("button", name=re.compile("Back")).click()
            page.wait_for_function(
                "() => { const b = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .widget-vbox "
                ".widget-html'); return b && b.textContent.includes('map 1 of'); }", timeout=15_000)
            after = page.evaluate(TOOL)
            assert f"label: {CLASSES[0]}" in after["text"], after["text"]
            assert [b["name"] for b in after["buttons"] if b["success"]] == [CLASSES[0]], after["buttons"]
            tool_cell.screenshot(path=str(tmp_path / "5-labelling-tool-after-a-click.png"))
            assert not page_errors, page_errors
        finally:
            browser.close()
