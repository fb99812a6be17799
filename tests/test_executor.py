"""The book's jobs on Dask (attnbook.core.executor): where they run, what a lost worker and a bad input do."""
from __future__ import annotations

import os

import pytest

import executor_jobs as J
from attnbook.core import executor
from attnbook.core.errors import ParameterError


def test_the_scheduler_forms_and_a_wrong_one_names_them():
    parse = executor.parse_scheduler
    assert parse("") == parse(None) == executor.Scheduler("default")
    assert parse("local") == executor.Scheduler("local") and parse("local:3") == executor.Scheduler("local", 3)
    assert parse("tcp://10.0.0.5:8786") == executor.Scheduler("address", address="tcp://10.0.0.5:8786")
    assert parse("slurm:64").workers == 64 and parse("pbs").kind == "pbs"
    for wrong in ("local:0", "local:x", "kubernetes", "slurm:-1"):
        with pytest.raises(ParameterError, match="unknown scheduler.*local:N.*tcp://host:8786"):
            parse(wrong)


def test_by_default_one_worker_runs_the_jobs_here_in_order(monkeypatch):
    monkeypatch.delenv(executor.SCHEDULER_ENV, raising=False)
    got = executor.run_jobs(J.square, [{"x": x} for x in range(4)], names=[f"job {x}" for x in range(4)])
    assert [g[0] for g in got] == [0, 1, 4, 9] and {g[1] for g in got} == {os.getpid()}
    with pytest.raises(ValueError, match="4 jobs but 3 names"):
        executor.run_jobs(J.square, [{"x": x} for x in range(4)], names=["a", "b", "c"])


@pytest.mark.integration
def test_two_local_workers_give_the_serial_results_and_a_lost_worker_s_job_runs_again(tmp_path, monkeypatch):
    """A worker that dies mid-job (its process ends) has the job run again elsewhere; the results are the serial
    ones, in the order of the jobs."""
    monkeypatch.setenv(executor.SCHEDULER_ENV, "local:2")
    try:
        got = executor.run_jobs(J.square, [{"x": x} for x in range(5)], names=[f"job {x}" for x in range(5)])
        assert [g[0] for g in got] == [0, 1, 4, 9, 16] and os.getpid() not in {g[1] for g in got}
        marker = tmp_path / "died"
        jobs = [{"x": x, "marker": str(marker)} for x in range(3)]
        assert executor.run_jobs(J.dies_once, jobs, names=[f"job {x}" for x in range(3)]) == [0, 10, 20]
        assert marker.exists() and int(marker.read_text()) != os.getpid()  # it did die, in a worker
    finally:
        executor._close("local:2")


@pytest.mark.integration
def test_a_bad_input_fails_once_naming_the_job(tmp_path, monkeypatch):
    """Fails on a scheduler that retries every error: a job whose input is wrong runs once, and the error keeps the
    book's message (the fix) and names the job."""
    calls = tmp_path / "calls"
    calls.mkdir()
    for scheduler, workers in (("", 1), ("", 2), ("local:2", 1)):
        monkeypatch.setenv(executor.SCHEDULER_ENV, scheduler)
        before = len(os.listdir(calls))
        try:
            with pytest.raises(ParameterError, match="not a GLUE task; give one of") as info:
                executor.run_jobs(J.bad_input, [{"task": "SST2", "calls": str(calls)}, {"task": "SST2", "calls": str(calls)}],
                                  names=["chapter 4: fine-tuning SST2 (pretrained_ft, seed 0)", "second"],
                                  workers=workers)
        finally:
            executor._close("local:2")
        assert "chapter 4: fine-tuning SST2 (pretrained_ft, seed 0)" in "".join(getattr(info.value, "__notes__", []))
        assert len(os.listdir(calls)) - before <= 2  # once per job at most: never retried


def test_temporaries_name_their_host_and_another_hosts_are_never_judged_gone(tmp_path):
    """A cache on a shared filesystem: a sweep on one machine must not remove another machine's work in flight
    (its pid means nothing here). Fails on names that carry only the pid."""
    from attnbook.core import io

    prefix = io.temp_prefix("x.npz")
    assert prefix == f".x.npz.tmp-{os.getpid()}@{io.HOST}-"
    dead = 2 ** 22 + 12345  # above the usual pid range: no such process
    assert io.writer_alive(tmp_path / f".x.npz.tmp-{os.getpid()}@{io.HOST}-abc")
    assert not io.writer_alive(tmp_path / f".x.npz.tmp-{dead}@{io.HOST}-abc")
    assert io.writer_alive(tmp_path / f".x.npz.tmp-{dead}@another.host-abc")  # not ours to judge
    assert not io.writer_alive(tmp_path / f".x.npz.tmp-{dead}-abc")  # the older names: this machine's
    with io.atomic_path(tmp_path / "y.json") as tmp:
        assert tmp.name.startswith(io.temp_prefix("y.json"))
        tmp.write_text("{}")
