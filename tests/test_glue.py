"""GLUE readers on fixture files written by the tests (standard glue_data TSV layout)."""
from __future__ import annotations

import pytest

from attnbook.core.errors import EmptyDataError, MalformedInputError, MissingDataError, ParameterError
from attnbook.data.glue import (
    KOVALEVA_TASKS,
    TASKS,
    available,
    label_counts,
    load_split,
    read_tsv,
    subsample,
    task_spec,
)

BOM = "\ufeff"


def write(path, lines, bom=False, newline="\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((BOM if bom else "") + newline.join(lines) + newline, encoding="utf-8", newline="")
    return path


@pytest.fixture
def glue_dir(tmp_path, monkeypatch):
    """A data directory holding a few rows of every task's files."""
    root = tmp_path / "data"
    g = root / "glue"
    mrpc_header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    write(g / "MRPC" / "train.tsv", [mrpc_header, '1\t1\t2\t"Quoted" start, he said.\tHe said "quoted".',
                                     "0\t3\t4\tA cat.\tA dog."], bom=True)
    write(g / "MRPC" / "dev.tsv", [mrpc_header, "0\t5\t6\tOne.\tTwo."], bom=True)
    sts_header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"
    write(g / "STS-B" / "train.tsv", [sts_header, "0\tmain-news\tf\t2012\t1\tnone\tnone\tA man plays.\tA man is playing.\t4.750",
                                      "1\tmain-news\tf\t2012\t2\tnone\tnone\tA.\tB.\t0.000"])
    write(g / "STS-B" / "dev.tsv", [sts_header, "0\tmain-captions\tf\t2012\t1\tnone\tnone\tX.\tY.\t2.5"])
    write(g / "SST-2" / "train.tsv", ["sentence\tlabel", "a gorgeous film \t1", "dull , dull , dull \t0"])
    write(g / "SST-2" / "dev.tsv", ["sentence\tlabel", "it 's a \" charming \" journey . \t1"])
    write(g / "QQP" / "train.tsv", ["id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate", "0\t1\t2\tWhy?\tHow?\t0"])
    write(g / "QQP" / "dev.tsv", ["id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate", "0\t1\t2\tWho?\tWho is?\t1"])
    for task, a, b in (("RTE", "sentence1", "sentence2"), ("QNLI", "question", "sentence")):
        for split in ("train", "dev"):
            write(g / task / f"{split}.tsv", [f"index\t{a}\t{b}\tlabel", "0\tP.\tH.\tnot_entailment", "1\tP2.\tH2.\tentailment"])
    mnli_train = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
                  "sentence1_parse\tsentence2_parse\tsentence1\tsentence2\tlabel1\tgold_label")
    write(g / "MNLI" / "train.tsv", [mnli_train, "0\t1\t1e\tgov\t( a )\t( b )\t(ROOT a)\t(ROOT b)\tPremise.\tHypothesis.\tneutral\tneutral"])
    mnli_dev = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
                "sentence1_parse\tsentence2_parse\tsentence1\tsentence2\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label")
    row = "0\t1\t1e\tfiction\t( a )\t( b )\t(ROOT a)\t(ROOT b)\tP.\tH.\tcontradiction\tneutral\tcontradiction\tcontradiction\tcontradiction\tcontradiction"
    write(g / "MNLI" / "dev_matched.tsv", [mnli_dev, row])
    write(g / "MNLI" / "dev_mismatched.tsv", [mnli_dev, row.replace("\tcontradiction", "\tentailment")])
    monkeypatch.setenv("ATTNBOOK_DATA", str(root))
    return g


def test_every_task_reads_train_and_dev(glue_dir):
    for name in TASKS:
        for split in ("train", "dev"):
            data = load_split(name, split)
            assert len(data) >= 1 and data.n_total == len(data)
            assert data.path.name == TASKS[name].file(split)
            ex = data.examples[0]
            assert ex.text_a and (ex.text_b is None) == (name == "SST-2")
            assert ex.line == 2  # first data row is line 2 (line 1 is the header)


def test_mrpc_bom_is_stripped_and_labels_are_indices(glue_dir):
    data = load_split("MRPC", "train")
    assert data.labels.tolist() == [1, 0]
    assert data.examples[0].text_a == '"Quoted" start, he said.'  # not CSV-quoted: quotes are kept verbatim
    assert data.examples[0].text_b == 'He said "quoted".'
    # without stripping the BOM the first header column would be "\ufeffQuality" and reading would fail
    assert (glue_dir / "MRPC" / "train.tsv").read_bytes().startswith(BOM.encode())


def test_sst2_single_sentence_and_quotes(glue_dir):
    dev = load_split("SST-2", "dev")
    assert dev.examples[0].text_a == 'it \'s a " charming " journey . '
    assert dev.examples[0].text_b is None and dev.labels.tolist() == [1]


def test_stsb_is_regression(glue_dir):
    train = load_split("STS-B", "train")
    assert train.task.is_regression and train.task.num_labels == 1
    assert train.labels.dtype.kind == "f" and train.labels.tolist() == [4.75, 0.0]
    assert train.examples[0].text_a == "A man plays." and train.examples[0].text_b == "A man is playing."
    with pytest.raises(ParameterError):
        label_counts(train)


def test_nli_label_maps(glue_dir):
    rte = load_split("RTE", "dev")
    assert rte.task.labels == ("entailment", "not_entailment")
    assert rte.labels.tolist() == [1, 0]
    assert label_counts(rte) == {"entailment": 1, "not_entailment": 1}
    assert load_split("MNLI-m", "dev").labels.tolist() == [0]  # contradiction
    assert load_split("MNLI-mm", "dev").labels.tolist() == [1]  # entailment (the mismatched file)
    mnli_train = load_split("mnli", "train")  # 12-column train layout, gold label found by name
    assert mnli_train.labels.tolist() == [2] and mnli_train.examples[0].text_a == "Premise."


@pytest.mark.parametrize(
    "task,lines,bad_line,fragment",
    [
        ("SST-2", ["sentence\tlabel", "fine\t1", "too\tmany\tfields", "ok\t0"], 3, "3 tab-separated fields"),
        ("SST-2", ["sentence\tlabel", "fine\t1", "ok\t0", "missing label"], 4, "1 tab-separated"),
        ("SST-2", ["sentence\tlabel", "fine\t1", "bad label\tpositive"], 3, "label 'positive'"),
        ("RTE", ["index\tsentence1\tsentence2\tlabel", "0\ta\tb\tcontradiction"], 2, "not one of"),
        ("STS-B", ["index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore",
                   "0\tg\tf\ty\t1\ts\ts\ta\tb\t3.2", "1\tg\tf\ty\t1\ts\ts\ta\tb\thigh"], 3, "not a number"),
        ("SST-2", ["text\tlabel", "fine\t1"], 1, "header lacks"),
    ],
)
def test_malformed_rows_name_file_and_line(tmp_path, task, lines, bad_line, fragment):
    path = write(tmp_path / "bad.tsv", lines)
    with pytest.raises(MalformedInputError) as err:
        read_tsv(path, task)
    assert err.value.line == bad_line and err.value.path == path
    assert fragment in str(err.value) and f"bad.tsv:{bad_line}" in str(err.value)


def test_line_numbers_count_the_bom_file_and_blank_lines(tmp_path):
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    path = write(tmp_path / "mrpc.tsv", [header, "1\t1\t2\ta\tb", "", "1\t1\t2\ta"], bom=True)
    with pytest.raises(MalformedInputError) as err:
        read_tsv(path, "MRPC")
    assert err.value.line == 4


def test_crlf_line_endings(tmp_path):
    path = write(tmp_path / "sst.tsv", ["sentence\tlabel", "good\t1", "bad\t0"], newline="\r\n")
    assert [(e.text_a, e.label) for e in read_tsv(path, "SST-2")] == [("good", 1), ("bad", 0)]


def test_skip_malformed_warns_and_keeps_the_rest(tmp_path):
    path = write(tmp_path / "qqp.tsv", ["id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate",
                                        "0\t1\t2\tA?\tB?\t1", "1\t3\t4\tbroken line", "2\t5\t6\tC?\tD?\t0"])
    with pytest.warns(UserWarning, match=r"skipped 1 malformed row\(s\) at line\(s\) \[3\]"):
        rows = read_tsv(path, "QQP", skip_malformed=True)
    assert [r.line for r in rows] == [2, 4]


def test_qqp_skips_broken_rows_by_default(glue_dir):
    path = glue_dir / "QQP" / "dev.tsv"
    path.write_text(path.read_text() + "1\t3\t4\tonly one question\n")
    with pytest.warns(UserWarning, match=r"line\(s\) \[3\]"):
        assert len(load_split("QQP", "dev")) == 1
    with pytest.raises(MalformedInputError):
        load_split("QQP", "dev", skip_malformed=False)
    sst = glue_dir / "SST-2" / "dev.tsv"
    sst.write_text(sst.read_text() + "no label\n")
    with pytest.raises(MalformedInputError):  # every other task is strict
        load_split("SST-2", "dev")


def test_missing_files_name_the_fetch_command(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNBOOK_DATA", str(tmp_path))
    with pytest.raises(MissingDataError, match="attnbook fetch glue"):
        load_split("QQP", "train")
    assert not available("QQP", "train")


def test_empty_file(tmp_path, monkeypatch):
    write(tmp_path / "glue" / "RTE" / "dev.tsv", ["index\tsentence1\tsentence2\tlabel"])
    monkeypatch.setenv("ATTNBOOK_DATA", str(tmp_path))
    with pytest.raises(EmptyDataError):
        load_split("RTE", "dev")
    (tmp_path / "glue" / "RTE" / "dev.tsv").write_text("")
    with pytest.raises(MalformedInputError):
        load_split("RTE", "dev")


def test_subsample_is_seeded_and_keeps_file_order(glue_dir, tmp_path):
    lines = ["sentence\tlabel"] + [f"s{i}\t{i % 2}" for i in range(100)]
    examples = read_tsv(write(tmp_path / "many.tsv", lines), "SST-2")
    a, b, c = subsample(examples, 10, 0), subsample(examples, 10, 0), subsample(examples, 10, 1)
    assert a == b and a != c and len(a) == 10
    assert [e.line for e in a] == sorted(e.line for e in a)
    assert subsample(examples, 1000, 0) == examples and subsample(examples, None, 0) == examples
    with pytest.raises(ParameterError):
        subsample(examples, 0, 0)


def test_task_names():
    assert task_spec("sst2").name == "SST-2" and task_spec("MNLI").name == "MNLI-m"
    assert task_spec("mnli-mm").dev_file == "dev_mismatched.tsv"
    assert KOVALEVA_TASKS == ("MRPC", "STS-B", "SST-2", "QQP", "RTE", "QNLI", "MNLI-m")
    with pytest.raises(ParameterError, match="unknown GLUE task"):
        task_spec("CoLA")
    with pytest.raises(ParameterError):
        task_spec("SST-2").file("test")
