"""The ARCT reader and writer (attnbook.data.arct): file formats, errors that name the line, subsets, descriptions."""
from __future__ import annotations

from dataclasses import replace

import pytest

from arct_items import toy_items
from attnbook.core.errors import EmptyDataError, MalformedInputError, MissingDataError, ParameterError
from attnbook.data import arct as A
from attnbook.studies.niven_kao import cues


@pytest.fixture
def toy() -> list[A.ArctItem]:
    return toy_items()


def test_round_trip_original_format(tmp_path, toy):
    path = A.write_arct(toy, tmp_path / "train-full.txt")
    assert path.read_text().splitlines()[0].split("\t") == list(A.FIELDS)
    assert A.read_arct(path) == toy


def test_round_trip_adversarial_test_format_with_quotes(tmp_path, toy):
    items = [replace(it, flag=bool(i % 2), reason='He said "no" twice') for i, it in enumerate(toy)]
    order = ("#id", "warrant0", "warrant1", "reason", "claim", "debateTitle", "debateInfo", "correctLabelW0orW1")
    path = A.write_arct(items, tmp_path / "test-adv.csv", columns=order, flag_column="adversarial")
    lines = path.read_text().splitlines()
    assert lines[0].split("\t")[-2:] == ["correctLabelW0orW1", "adversarial"]
    assert '"He said ""no"" twice"' in lines[1]  # CSV quoting, as the shipped adversarial files
    assert A.read_arct(path) == items


def test_raw_quotes_in_original_files(tmp_path, toy):
    items = [replace(toy[0], warrant0='the "real world" matters')]
    path = A.write_arct(items, tmp_path / "x.txt")
    assert A.read_arct(path)[0].warrant0 == 'the "real world" matters'


HEADER = "\t".join(A.FIELDS)
ROW = "id{n}\tw zero\tw one\t{label}\treason\tclaim\ttitle\tinfo"


@pytest.mark.parametrize(
    "lines, line, message",
    [
        ([HEADER, ROW.format(n=1, label=0), "id2\tonly\tthree"], 3, "fields"),
        ([HEADER, ROW.format(n=1, label=0), ROW.format(n=2, label=2)], 3, "0 or 1"),
        ([HEADER, ROW.format(n=1, label=0), ROW.format(n=1, label=1)], 3, "already used"),
        ([HEADER.replace("#id", "id"), ROW.format(n=1, label=0)], 1, "#id"),
        ([HEADER.replace("\treason", ""), ROW.format(n=1, label=0)], 1, "reason"),
        ([HEADER + "\tcolour", ROW.format(n=1, label=0) + "\tred"], 1, "unknown column"),
        ([HEADER + "\tadversarial", ROW.format(n=1, label=0) + "\tyes"], 2, "True or False"),
        ([HEADER + "\tadversarial", ROW.format(n=1, label=0).replace("w zero", 'a "b" c') + "\tFalse"], 2,
         "CSV-quoted"),
        ([HEADER, ROW.format(n=1, label=0), ""], 3, "empty line"),
        ([HEADER, ROW.format(n=1, label=0).replace("w one", "")], 2, "warrant1"),
    ],
)
def test_malformed_rows_name_file_and_line(tmp_path, lines, line, message):
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MalformedInputError) as err:
        A.read_arct(path)
    assert err.value.line == line and err.value.path == path
    assert message in str(err.value) and f"bad.txt:{line}" in str(err.value)


def test_header_only_file_is_empty(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text(HEADER + "\n")
    with pytest.raises(EmptyDataError):
        A.read_arct(path)


def test_load_arct_through_the_data_directory(tmp_path, monkeypatch, toy):
    monkeypatch.setenv("ATTNBOOK_DATA", str(tmp_path))
    A.write_arct(toy, tmp_path / "arct" / "original" / "dev-full.txt")
    assert A.load_arct("dev") == toy
    with pytest.raises(MissingDataError) as err:
        A.load_arct("test")
    assert "attnbook fetch arct" in str(err.value)
    with pytest.raises(ParameterError):
        A.load_arct("validation")


def test_claim_map_reader(tmp_path):
    path = tmp_path / "claim_map.csv"
    path.write_text('original,negated\nA is good,A is bad\n"Say ""yes"", often","Say ""no"", often"\n')
    assert A.read_claim_map(path) == {"A is good": "A is bad", 'Say "yes", often': 'Say "no", often'}
    path.write_text("original,negated\nA is good,A is bad\nB only\n")
    with pytest.raises(MalformedInputError) as err:
        A.read_claim_map(path)
    assert err.value.line == 3
    path.write_text("original,negated\nA,B\nA,C\n")
    with pytest.raises(MalformedInputError, match="already maps"):
        A.read_claim_map(path)
    path.write_text("claim,negation\nA,B\n")
    with pytest.raises(MalformedInputError):
        A.read_claim_map(path)


def test_take_paired_keeps_pairs_together(toy):
    full = cues.make_adversarial(toy, {"Claim one": "Not claim one"})
    sub = A.take_paired(full, 2)
    assert [it.id for it in sub] == ["id1", "id2", "id1-adversarial", "id2-adversarial"]
    swapped = A.take_paired(cues.swap_warrants(toy), 1)
    assert [it.id for it in swapped] == ["id1", "id1_swapped"]
    assert A.take_paired(full, 0) == full and A.take(toy, 2) == toy[:2] and A.take(toy, 0) == toy


def test_labels_and_item_properties(toy):
    assert A.labels_of(toy).tolist() == [0, 1, 0, 1] and A.labels_of(toy).dtype == "int64"
    assert toy[1].correct_warrant == "people care" and toy[1].alternative_warrant == "people do not care"


def test_describe_splits_and_item_markdown(toy):
    splits = A.describe_splits({"toy": toy, "adv": cues.make_adversarial(toy, {"Claim one": "No"})})
    assert splits.set_index("file").loc["adv", "constructed copies"] == 4
    assert splits.set_index("file").loc["toy", "label 1"] == 2
    assert splits.set_index("file").loc["adv", "items"] == 8
    text = A.item_markdown(toy[1], "dev")
    assert text.startswith("**Example** (dev): *claim* Claim one — *reason* A reason.")
    assert "- warrant0: people do not care\n- warrant1: people care" in text
    assert 'The label is **1**: "people care" is the warrant' in text
