"""A toy GUM document (OntoGUM .conll + UD .conllu) with a known answer for every coreference baseline.

Positions are document words:

    S1: Mary(0) met(1) two(2) doctors(3) .(4)
    S2: The(5) doctors(6) saw(7) her(8) cat(9) and(10) Mary(11) smiled(12) .(13)
    S3: She(14) thanked(15) them(16) .(17)

clusters: 1 = Mary, her, Mary, She; 2 = two doctors, The doctors, them; 3 = her cat.
Used by tests/test_gum.py and tests/test_coref.py.
"""
from __future__ import annotations

from pathlib import Path


TOY_CONLL = [
    ("Mary", "(1)"), ("met", "_"), ("two", "(2"), ("doctors", "2)"), (".", "_"),
    ("The", "(2"), ("doctors", "2)"), ("saw", "_"), ("her", "(3|(1)"), ("cat", "3)"),
    ("and", "_"), ("Mary", "(1)"), ("smiled", "_"), (".", "_"),
    ("She", "(1)"), ("thanked", "_"), ("them", "(2)"), (".", "_"),
]


TOY_CONLLU = """# newdoc id = toy
# sent_id = toy-1
# text = Mary met two doctors.
1	Mary	Mary	PROPN	NNP	Number=Sing	2	nsubj	_	_
2	met	meet	VERB	VBD	Tense=Past	0	root	_	_
3	two	two	NUM	CD	NumType=Card	4	nummod	_	_
4	doctors	doctor	NOUN	NNS	Number=Plur	2	obj	_	_
5	.	.	PUNCT	.	_	2	punct	_	_

# sent_id = toy-2
# text = The doctors saw her cat and Mary smiled.
1	The	the	DET	DT	Definite=Def	2	det	_	_
2	doctors	doctor	NOUN	NNS	Number=Plur	3	nsubj	_	_
3	saw	see	VERB	VBD	Tense=Past	0	root	_	_
4	her	her	PRON	PRP$	Gender=Fem|Number=Sing|Person=3|Poss=Yes	5	nmod:poss	_	_
5	cat	cat	NOUN	NN	Number=Sing	3	obj	_	_
6	and	and	CCONJ	CC	_	8	cc	_	_
7	Mary	Mary	PROPN	NNP	Number=Sing	8	nsubj	_	_
8	smiled	smile	VERB	VBD	Tense=Past	3	conj	_	_
9	.	.	PUNCT	.	_	3	punct	_	_

# sent_id = toy-3
# text = She thanked them.
1	She	she	PRON	PRP	Case=Nom|Gender=Fem|Number=Sing|Person=3	2	nsubj	_	_
2	thanked	thank	VERB	VBD	Tense=Past	0	root	_	_
3	them	they	PRON	PRP	Case=Acc|Number=Plur|Person=3	2	obj	_	_
4	.	.	PUNCT	.	_	2	punct	_	_

"""


def conll_text(rows, begin: str = "# begin document \n") -> str:
    body = "".join(f"{i}\t{form}\t{cell}\n" for i, (form, cell) in enumerate(rows))
    return begin + body + "# end document\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def make_data_dir(root: Path, names: list[str], splits_md: str) -> None:
    gum = root / "coref" / "gum"
    write(gum / "splits.md", splits_md)
    for name in names:
        write(gum / "coref_ontogum_conll" / f"{name}.conll", conll_text(TOY_CONLL))
        write(gum / "dep_conllu" / f"{name}.conllu", TOY_CONLLU)


def toy_files(folder: Path, name: str = "toy") -> tuple[Path, Path]:
    """The toy document's ``.conll`` and ``.conllu`` files, written into ``folder``."""
    return write(folder / f"{name}.conll", conll_text(TOY_CONLL)), write(folder / f"{name}.conllu", TOY_CONLLU)
