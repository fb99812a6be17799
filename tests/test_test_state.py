"""The test suite's own state (caches and results of the smoke book and the rehearsal) does not outlive the run."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).with_name("conftest.py")

CHILD = """
import importlib.util, multiprocessing, os, sys


def load(path):
    spec = importlib.util.spec_from_file_location("suite_conftest", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def worker_state(path):
    return load(path)._TEST_STATE


if __name__ == "__main__":
    module = load(sys.argv[1])
    cache = os.environ["ATTNBOOK_CACHE"]
    os.makedirs(cache)
    with open(os.path.join(cache, "entry.bin"), "wb") as handle:
        handle.write(b"x" * 4096)
    print(module._TEST_STATE)
    if len(sys.argv) > 2:  # a spawned worker imports the file again: it must use the run's folder, not make one
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            print(pool.apply(worker_state, (sys.argv[1],)))
"""


def _run(tmp_path, *extra):
    env = {k: v for k, v in os.environ.items() if k != "ATTNBOOK_TEST_STATE"} | {"TMPDIR": str(tmp_path)}
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    done = subprocess.run([sys.executable, str(script), str(CONFTEST), *extra], env=env, capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return [Path(line) for line in done.stdout.strip().splitlines()]


def test_the_suites_temporary_state_is_removed_when_the_run_ends(tmp_path):
    state = _run(tmp_path)[-1]
    assert state.parent == tmp_path  # the child made its state where we look
    assert not state.exists(), f"left behind: {sorted(p.name for p in state.rglob('*'))}"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("attnbook-tests-")]


def test_a_spawned_worker_shares_the_runs_state_and_leaves_no_folder(tmp_path):
    state, worker_state = _run(tmp_path, "--spawn")
    assert worker_state == state
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("attnbook-tests-")]


def test_a_long_run_keeps_the_environment_of_its_start_and_hands_its_error_to_the_fixture(monkeypatch):
    import threading

    import longruns
    import pytest

    seen, gate = {}, threading.Event()

    def run(env):
        gate.wait(30)
        seen.update(env)
        raise RuntimeError("the run failed")

    longruns.start({"probe-run": run})
    monkeypatch.setenv("ATTNBOOK_SET_BY_A_LATER_TEST", "1")
    gate.set()
    with pytest.raises(RuntimeError, match="the run failed"):
        longruns.result("probe-run", run)
    assert seen and "ATTNBOOK_SET_BY_A_LATER_TEST" not in seen


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


STOPPER = """
import sys, threading, time
sys.path.insert(0, sys.argv[1])
import longruns

pids, script = sys.argv[2], sys.argv[3]
done = {}
thread = threading.Thread(target=lambda: done.update(r=longruns.run([sys.executable, "-c", script])))
thread.start()
for _ in range(300):
    try:
        if len(open(pids).read().split()) == 2:
            break
    except FileNotFoundError:
        pass
    time.sleep(0.1)
longruns.stop()
thread.join(30)
print(done["r"].returncode)
"""


def test_stop_kills_a_long_runs_subprocess_and_what_it_started(tmp_path):
    """In a process of its own: stop() kills every long run's subprocess, so here it must not meet the suite's."""
    import time

    pids = tmp_path / "pids"
    script = ("import subprocess, sys, time, os; "
              "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
              f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{c.pid}}'); time.sleep(120)")
    done = subprocess.run([sys.executable, "-c", STOPPER, str(CONFTEST.parent), str(pids), script],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) != 0  # the run ended by the kill, not by itself
    parent, child = map(int, pids.read_text().split())
    for _ in range(100):
        if not _alive(child):
            break
        time.sleep(0.1)
    assert not _alive(parent) and not _alive(child)
