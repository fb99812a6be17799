"""The executed notebook becomes a page: one parameters cell, stderr moved to a log, progress while running."""
from __future__ import annotations

import json
import time

from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from attnbook.chapters.publish import Progress, cells_done, merge_parameters, take_stderr, tidy


def _executed() -> dict:
    nb = new_notebook()
    params = new_code_cell('# Parameters (papermill: -p name value)\nprofile = "quick"\n'
                           'n_segments = None      # number of segments\nlabel = "a # b"  # a hash in a string\n')
    params.metadata["tags"] = ["parameters"]
    injected = new_code_cell('# Parameters\nprofile = "paper"\nn_segments = 1000\nextra = [1, 2]\n')
    injected.metadata["tags"] = ["injected-parameters"]
    body = new_code_cell("x = 1")
    body.outputs = [{"output_type": "stream", "name": "stderr", "text": "UserWarning: /home/me/x.py\n"},
                    {"output_type": "stream", "name": "stdout", "text": "fine\n"}]
    nb.cells = [new_markdown_cell("# t"), params, injected, body]
    return json.loads(json.dumps(nb))


def test_injected_values_replace_the_shown_ones_and_keep_comments():
    nb = _executed()
    merged = merge_parameters(nb)
    assert merged == {"profile": '"paper"', "n_segments": "1000", "extra": "[1, 2]"}
    assert [c["metadata"].get("tags") for c in nb["cells"] if c["cell_type"] == "code"][:1] == [["parameters"]]
    assert not any("injected-parameters" in c["metadata"].get("tags", []) for c in nb["cells"])
    lines = nb["cells"][1]["source"].splitlines()
    assert lines[1] == 'profile = "paper"'
    assert lines[2].startswith("n_segments = 1000 ") and lines[2].endswith("# number of segments")
    assert lines[2].index("#") == 'n_segments = None      # number of segments'.index("#")  # same column
    assert lines[3] == 'label = "a # b"  # a hash in a string'  # not injected: unchanged
    assert lines[4] == "extra = [1, 2]"  # a parameter only papermill knew is still shown
    untouched = _executed()
    del untouched["cells"][2]
    assert merge_parameters(untouched) == {} and len(untouched["cells"]) == 3


def test_stderr_moves_to_the_log_and_stdout_stays(tmp_path):
    nb = _executed()
    taken = take_stderr(nb)
    assert len(taken) == 1 and "/home/me/x.py" in taken[0] and "cell 3" in taken[0]
    assert nb["cells"][3]["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "fine\n"}]
    path, log = tmp_path / "nb.ipynb", tmp_path / "logs" / "ch.stderr.txt"
    path.write_text(json.dumps(_executed()))
    assert tidy(path, log)["stderr"] == 1 and "UserWarning" in log.read_text()
    assert "stderr" not in path.read_text()
    assert tidy(path, log)["stderr"] == 0 and not log.exists()  # a clean rerun leaves no stale log


def test_progress_reports_the_running_cell(tmp_path):
    path = tmp_path / "run.ipynb"
    assert cells_done(path) is None
    nb = _executed()
    nb["cells"][0]["metadata"]["papermill"] = {"status": "completed"}
    nb["cells"][1]["metadata"]["papermill"] = {"status": "completed"}
    path.write_text(json.dumps(nb))
    assert cells_done(path) == (2, 4, "t")  # the heading above the running cell names the section
    lines: list[str] = []
    with Progress("04_x", path, every=0.05, write=lines.append):
        time.sleep(0.3)
    assert lines and all(line.startswith("[attnbook] 04_x: cell 3 of 4 (t), 0 min") for line in lines)


def _row(outcome: str):
    from attnbook.verdict import Comparison

    return Comparison("§3", "q", 1.0, 1.0, outcome, rule="r")


def _results(verdicts: list[str], model: str = "embedded-x") -> tuple[dict, dict]:
    rows = [_row(v).as_dict() for v in verdicts]
    results = {"chapter": "01_clark_surface_patterns", "profile": "quick", "comparisons": rows,
               "params": {"n_segments": 1000, "max_tokens": 128, "grad_segments": 200},
               "numbers": {"mlm_head": {"source": "fitted on the frozen encoder"}}}
    prov = {"model": {"name": model, "n_layers": 6, "n_heads": 12, "device": "cpu", "shape_note": ""},
            "run_seconds": 75.0, "machine": "x86_64 Linux, 2 cores"}
    return results, prov


def test_summary_box_is_generated_from_the_run_and_goes_under_the_title(tmp_path):
    """Issue 21: each page starts with a box of the run's profile, model, sizes, run time, deviations and the
    outcome counts of its comparison table, all read from the results files the chapter wrote."""
    from attnbook.chapters.summary import SUMMARY_TAG, outcome_text, summary_markdown

    assert outcome_text([_row("agrees")] * 2 + [_row("partly agrees"), _row("not comparable")]) \
        == ("4 rows: 2 agree, 1 partly agree, 1 not comparable (each judged at 95%: about 0.2 of the 3 judged claims "
            "would come out against the paper by chance alone)")
    results, prov = _results(["agrees", "disagrees", "disagrees"])
    box = summary_markdown(results, prov, seconds=130)
    assert box.startswith("```{admonition} This run") and "1,000 WikiText-2 segments of at most 128" in box
    assert "2.2 min" in box and "3 rows: 1 agree, 2 disagree" in box
    assert "instead of the papers' bert-base-uncased" in box and "MLM head fitted" in box
    results["numbers"]["mlm_head"]["source"] = "pretrained"
    own = summary_markdown(results, dict(prov, model=dict(prov["model"], name="bert-base-uncased")))
    assert "instead of the papers'" not in own and "MLM head fitted" not in own and "1.2 min" in own
    path, log = tmp_path / "nb.ipynb", tmp_path / "log.txt"
    path.write_text(json.dumps(_executed()))
    (tmp_path / "r.json").write_text(json.dumps(results))
    (tmp_path / "r.provenance.json").write_text(json.dumps(prov))
    for _ in range(2):  # a rerun replaces the box, never adds a second
        assert tidy(path, log, results=tmp_path / "r.json", seconds=5)["summary"]
    cells = json.loads(path.read_text())["cells"]
    boxes = [i for i, c in enumerate(cells) if SUMMARY_TAG in c["metadata"].get("tags", [])]
    assert boxes == [1] and "5 s" in cells[1]["source"]


def test_summary_box_leaves_out_lines_the_parameters_cannot_fill():
    """A chapter run with another parameter table (the runner's tests plant one) still gets its box."""
    from attnbook.chapters.summary import summary_markdown

    results, prov = _results(["agrees"])
    results["params"] = {"run": "first"}
    box = summary_markdown(results, prov)
    assert "data and sizes" not in box and "1 row: 1 agree" in box


def test_summary_box_counts_the_papers_claims_and_names_the_rest_apart():
    """Issue 32: the box under the title counted the book's own questions and the experiments not reproduced as "not
    comparable" rows of the paper (old: "4 rows: 1 agree, 3 not comparable")."""
    from attnbook import verdict
    from attnbook.chapters.summary import outcome_text

    rows = [_row("agrees"), _row("agrees").replace(kind=verdict.OWN), _row("inconclusive").replace(kind=verdict.OWN),
            _row("not comparable").replace(kind=verdict.NOT_REPRODUCED)]
    assert outcome_text(rows) == ("1 claim of the paper: 1 agree (each judged at 95%: about 0.1 of the 1 judged claim "
                                  "would come out against the paper by chance alone); 2 of the book's own questions: "
                                  "1 supported, 1 undecided; 1 not reproduced")
    assert outcome_text(rows[:1]).startswith("1 row: 1 agree (each judged at 95%")
