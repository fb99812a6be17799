"""The executed notebook becomes a page: one parameters cell, stderr moved to a log, progress while running."""
from __future__ import annotations

import json
import time

from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from attnbook.chapters.params import chapter_params
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
               "params": chapter_params("01_clark_surface_patterns", "quick").replace(
                   n_segments=1000, max_tokens=128, grad_segments=200).as_dict(),
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


# ---- the top of the page: findings first, the run's box folded, bookkeeping folded -------------------------------

def _claim(experiment: str, quantity: str, outcome: str, kind: str = "claim", low=None, high=None, paper="1.0",
           ours="2.0"):
    from attnbook.verdict import Comparison

    return Comparison(experiment, quantity, paper, ours, outcome, rule="r", low=low, high=high, kind=kind).as_dict()


def _bullets(box: str) -> list[str]:
    body = box.split("```")[1]
    return [ln for ln in body.splitlines() if ln.startswith("- ")]


def test_findings_box_shows_one_row_per_section_with_its_numbers_outcome_and_link():
    """The findings box: one bullet per section of the paper, in page order, the section's first decided claim (the
    paper's number, this run's with its interval, the outcome's colour), linked to the section's target; the book's
    own questions and what was not reproduced are not the paper's findings."""
    from attnbook.chapters.anchors import experiment_anchor
    from attnbook.chapters.summary import findings_markdown

    rows = [_claim("§3.1 position", "undecided share", "inconclusive", low=0.1, high=0.9),
            _claim("§3.1 position", "previous-token heads", "disagrees", paper="4 of 144", ours="1 of 72 [1, 1]",
                   low=1, high=1),
            _claim("§3.1 position", "next-token heads", "agrees"),
            _claim("§3.2 tokens", "[SEP] share", "agrees", paper="0.5", ours="0.48", low=0.4, high=0.55),
            _claim("book", "own question", "agrees", kind="own"),
            _claim("§5 (WMT)", "BLEU", "not comparable", kind="not reproduced")]
    results = {"chapter": "01_clark_surface_patterns", "comparisons": rows}
    box = findings_markdown(results)
    assert box.startswith("```{admonition} Findings\n:class: attnbook-findings")
    bullets = _bullets(box)
    assert len(bullets) == 2
    first, second = bullets
    link = experiment_anchor("01_clark_surface_patterns", "§3.1 position")
    assert f"[§3.1 position](#{link})" in first and "previous-token heads: paper 4 of 144; this run 1 of 72 [1, 1]" \
        in first and 'attnbook-outcome-disagrees">disagrees<' in first
    assert "[1, 1] [1, 1]" not in first  # an interval the shown number gives is not repeated
    assert "[§3.2 tokens](#ch01-row-s3-2-tokens)" in second and "paper 0.5; this run 0.48 [0.4, 0.55]" in second
    assert "own question" not in box and "BLEU" not in box
    assert findings_markdown(results) == box  # deterministic
    # a section whose target was not placed is named, not linked (no link without a target)
    assert "[§3.2 tokens]" not in findings_markdown(results, linked=["§3.1 position"])


def test_findings_box_keeps_five_sections_decided_first_and_names_the_rest():
    from attnbook.chapters.summary import MAX_FINDINGS, findings, findings_markdown
    from attnbook.verdict import Comparison

    outcomes = ["inconclusive", "agrees", "not comparable", "disagrees", "agrees", "inconclusive", "partly agrees",
                "agrees"]
    rows = [_claim(f"§{k + 1}", f"q{k}", o) for k, o in enumerate(outcomes)]
    chosen, rest = findings([Comparison.from_dict(r) for r in rows])
    # the five decided sections, in page order; the undecided and not comparable ones are left for the table
    assert [r.experiment for r in chosen] == ["§2", "§4", "§5", "§7", "§8"] and MAX_FINDINGS == 5
    assert rest == ["§1", "§3", "§6"]
    box = findings_markdown({"chapter": "06_michel_pruning", "comparisons": rows})
    assert len(_bullets(box)) == 5 and ("3 more sections (3 rows): [§1](#ch06-row-s1), [§3](#ch06-row-s3), "
                                        "[§6](#ch06-row-s6); each in the table at the end.") in box
    few = findings_markdown({"chapter": "06_michel_pruning", "comparisons": rows[:2]})
    assert len(_bullets(few)) == 2 and "more section" not in few


def test_findings_box_of_a_chapter_without_claims_shows_its_own_questions():
    """Chapters 8 and 9 test the book's own questions only: their box lists those, with their own outcome words."""
    from attnbook.chapters.summary import findings_markdown

    rows = [_claim("atlas: syntax", "syntax heads are pattern heads", "agrees", kind="own"),
            _claim("atlas: pruning", "pruned heads are broad", "inconclusive", kind="own")]
    box = findings_markdown({"chapter": "08_head_atlas", "comparisons": rows})
    assert box.startswith("```{admonition} Findings: the book's own questions")
    assert len(_bullets(box)) == 2 and ">supported<" in box and ">undecided<" in box
    empty = findings_markdown({"chapter": "08_head_atlas", "comparisons": []})
    assert _bullets(empty) == ["- No paper's claim and no question of the book is compared on this page."]


def test_the_boxes_come_right_under_the_title_before_the_introduction(tmp_path):
    from attnbook.chapters.summary import SUMMARY_TAG

    nb = _executed()
    nb["cells"][0]["source"] = "# 1. Title (§3.1)\n\nA long introduction.\n\n## Paper vs this run"
    path, log = tmp_path / "nb.ipynb", tmp_path / "log.txt"
    path.write_text(json.dumps(nb))
    results, prov = _results(["agrees", "disagrees"])
    (tmp_path / "r.json").write_text(json.dumps(results))
    (tmp_path / "r.provenance.json").write_text(json.dumps(prov))
    for _ in range(2):  # a second tidy neither splits again nor adds a box
        tidy(path, log, results=tmp_path / "r.json")
    cells = json.loads(path.read_text())["cells"]
    assert cells[0]["source"] == "# 1. Title (§3.1)"
    assert SUMMARY_TAG in cells[1]["metadata"]["tags"]
    box = cells[1]["source"]
    assert box.index("{admonition} Findings") < box.index("{admonition} This run: quick profile, embedded-x")
    fences = [ln for ln in box.split("\n") if ln.startswith("```{")]
    assert len(fences) == 2 and not any("`" in ln[3:] for ln in fences)  # a backtick in the info would end no fence
    assert ":class: note dropdown attnbook-summary" in box  # the run's facts folded under their one-line title
    assert "[§3](#ch01-row-s3)" in box  # linked: place_targets put the target on the page
    assert cells[2]["source"].startswith("A long introduction.")
    assert "(ch01-row-s3)=\n## Paper vs this run" in cells[2]["source"]
    assert sum(SUMMARY_TAG in c["metadata"].get("tags", []) for c in cells) == 1


def _bookkeeping_notebook() -> dict:
    nb = _executed()
    setup = new_code_cell('CHAPTER = "x"\nP = chapter.setup(CHAPTER, profile, globals())\n'
                          'res = ChapterResults(CHAPTER, P)')
    imports = new_code_cell("import numpy as np\nfrom attnbook.chapters import chapter")
    removed = new_code_cell("# set-up\nensure_data('x')")
    removed.metadata["tags"] = ["remove-cell", "set-up"]
    result = new_code_cell("stats = run.statistics()\nres.add('n', len(stats))\nstats")
    save = new_code_cell("res.compare(*rows)\nchapter.finish(res)")
    prov = new_code_cell("chapter.provenance(res)")
    nb["cells"] = [nb["cells"][0], removed, nb["cells"][1], nb["cells"][2], imports, setup,
                   new_markdown_cell("## First section"), result, save, prov]
    return json.loads(json.dumps(nb))


def test_parameters_set_up_and_results_file_cells_are_folded_on_the_page_only(tmp_path):
    """The parameters cell, the set-up cells after it and the cells that only write the results files get
    ``hide-input`` (their input behind a toggle, outputs shown); a cell with a result keeps its input; a removed cell
    keeps its tags; the parameters cell is still the one ``parameters`` cell the page check counts."""
    path, log = tmp_path / "nb.ipynb", tmp_path / "log.txt"
    source = _bookkeeping_notebook()
    path.write_text(json.dumps(source))
    out = tidy(path, log)
    cells = json.loads(path.read_text())["cells"]
    tags = [c["metadata"].get("tags", []) for c in cells]
    assert tags[1] == ["remove-cell", "set-up"]
    assert tags[2] == ["parameters", "hide-input"]  # the injected cell is merged away
    assert [("hide-input" in t) for t in tags[3:]] == [True, True, False, False, True, True]
    assert out["folded"] == [2, 3, 4, 7, 8]
    assert sum("parameters" in t for t in tags) == 1
    code = lambda nb: [c["source"] for c in nb if c["cell_type"] == "code"]  # noqa: E731
    assert code(cells)[2:] == code(source["cells"])[3:]  # the cells' code as it was (the parameters merged aside)
    tidy(path, log)
    assert [c["metadata"].get("tags", []).count("hide-input") for c in json.loads(path.read_text())["cells"]] \
        == [t.count("hide-input") for t in tags]  # a second tidy adds no second tag
