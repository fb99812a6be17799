"""Our CoNLL-U reader against the `conllu` package (issue 33): the same trees from every local file, and the
malformed input the package lets through that ours names by file and line (why the book keeps its reader)."""
from __future__ import annotations

import io
import sys
from pathlib import Path

import conllu
import pytest
from conftest import shared_data_dir

from attnbook.core.errors import MalformedInputError
from attnbook.data.conllu import parse_conllu, read_conllu

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import libraries  # noqa: E402

FIELDS = ("ids", "words", "lemmas", "upos", "xpos", "feats", "head", "deprel", "deps", "misc", "extra")


def _metadata(comments: list[str]) -> list[str]:
    """Our raw comment lines as the package keeps them: ``key = value`` pairs (stripped), the last of a key winning."""
    pairs: dict[str, str | None] = {}
    for c in comments:
        key, value = conllu.parser.parse_pair_value(c[1:])
        pairs[key] = value
    return [f"# {k}" if v is None else f"# {k} = {v}" for k, v in pairs.items()]


def test_every_local_conllu_file_gives_the_same_trees_as_the_conllu_package():
    files = sorted(Path(shared_data_dir()).rglob("*.conllu"))
    assert len(files) >= 4, "expected UD EWT's splits and GUM's dependency files in the data directory"
    n = 0
    for path in files:
        ours, theirs = read_conllu(path), libraries.conllu_package_sentences(path)
        assert len(ours) == len(theirs), path
        for a, b in zip(ours, theirs):
            assert [getattr(a, f) for f in FIELDS] == [getattr(b, f) for f in FIELDS], (path, a.source)
            assert _metadata(a.comments) == b.comments, (path, a.source)
            n += len(a)
    assert n > 250_000  # UD EWT alone has 254,820 words


LINE = "1\ta\ta\tX\tX\t_\t0\troot\t_\t_"


@pytest.mark.parametrize("text, line, message", [
    (LINE + "\n2\tb\tb\tX\tX\t_\t1\n", 2, "10 tab-separated"),                    # 7 columns: the package pads
    (LINE + "\n2\tb\tb\tX\tX\t_\t7\tdep\t_\t_\n", 2, "outside 0..2"),              # a head beyond the sentence
    (LINE + "\n2\tb\tb\tX\tX\t_\t2\tdep\t_\t_\n", 2, "own head"),                 # a word its own head
    (LINE + "\n4\tb\tb\tX\tX\t_\t1\tdep\t_\t_\n", 2, "consecutive"),              # ids 1, 4
    (LINE + "\n# late\n2\tb\tb\tX\tX\t_\t1\tdep\t_\t_\n", 2, "comment line inside"),  # moved up by the package
])
def test_the_package_reads_what_ours_refuses_with_file_and_line(text, line, message):
    parsed = conllu.parse(text)  # the package: no error
    assert len(parsed) == 1
    with pytest.raises(MalformedInputError) as info:
        list(parse_conllu(io.StringIO(text), "x.conllu"))
    assert info.value.line == line and message in str(info.value) and "x.conllu:" in str(info.value)


def test_the_package_splits_a_field_on_two_spaces():
    """A form with two spaces in a row (legal in CoNLL-U: only tabs separate fields) is cut by the package."""
    text = "1\ta  b\ta  b\tX\tX\t_\t0\troot\t_\t_\n"
    assert [s.words for s in parse_conllu(io.StringIO(text))] == [["a  b"]]
    token = conllu.parse(text, fields=libraries.COLUMNS, field_parsers=libraries._RAW)[0][0]  # every field a string
    assert (token["form"], token["lemma"]) == ("a", "b")
