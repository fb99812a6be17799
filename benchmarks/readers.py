"""`make bench` part ``readers``: the corpora read through Hugging Face ``datasets`` (issue 33) against the readers
they replaced, and those readers themselves, kept here as the reference.

The functions ``old_*`` are the GLUE, ARCT and WikiText parsers as they were before the readers moved to ``datasets``
(commit 7b1b9b5), copied unchanged in behaviour: ``tests/test_datasets_readers.py`` checks the book's readers give the
same examples in the same order, and :func:`bench_readers` times both. Each time is taken in a fresh process (a
chapter reads its corpora once per process, so import and first-use costs count), the median of ``repeats``
processes:

* ``before``: the old parser on the file;
* ``first read``: the book's reader with an empty cache (parses the file, builds the typed Dataset, saves it);
* ``cached``: the book's reader again, from the Dataset it saved (memory-mapped Arrow, then the typed view).

Both sides include turning rows into the book's typed objects (``Example``, ``ArctItem``, ``Article``). Importing
``datasets`` (and ``pyarrow``) is paid once per process whatever it reads, so it is timed apart (``import``) and not
counted in the reads.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from attnbook.core.errors import MalformedInputError
from attnbook.data import arct, glue, wiki

HERE = Path(__file__).resolve().parent

def _old_parse_label(spec, raw, path, line):
    raw = raw.strip()
    if spec.labels is None:
        value = float(raw)
        if not np.isfinite(value):
            raise MalformedInputError(path, line, "not finite")
        return value
    return spec.labels.index(raw)


def old_read_tsv(path, spec, skip_malformed=False):
    examples, path = [], Path(path)
    with open(path, encoding="utf-8-sig", newline="") as fh:
        header = fh.readline().rstrip("\r\n").split("\t")
        i_a, i_label = header.index(spec.text_a), header.index(spec.label)
        i_b = header.index(spec.text_b) if spec.text_b else None
        for line_no, raw in enumerate(fh, start=2):
            row = raw.rstrip("\r\n")
            if not row.strip():
                continue
            fields = row.split("\t")
            try:
                if len(fields) != len(header):
                    raise MalformedInputError(path, line_no, "field count")
                label = _old_parse_label(spec, fields[i_label], path, line_no)
            except (MalformedInputError, ValueError):
                if not skip_malformed:
                    raise
                continue
            examples.append(glue.Example(fields[i_a], fields[i_b] if i_b is not None else None, label, line_no))
    return examples


def old_subsample(examples, n, seed):
    if n is None or n >= len(examples):
        return list(examples)
    keep = np.sort(np.random.default_rng(seed).choice(len(examples), size=n, replace=False))
    return [examples[i] for i in keep]


def _old_unquote(field):
    return field[1:-1].replace('""', '"') if '"' in field else field


def old_read_arct(path):
    with open(path, encoding="utf-8", newline="") as fh:
        lines = fh.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    header = lines[0].rstrip("\r").split("\t")
    col = {name: i for i, name in enumerate(header)}
    extra = [h for h in header if h not in arct.FIELDS]
    flag_col = col[extra[0]] if extra else None
    items = []
    for raw in lines[1:]:
        parts = raw.rstrip("\r").split("\t")
        if flag_col is not None:
            parts = [_old_unquote(p) for p in parts]
        flag = None if flag_col is None else parts[flag_col].strip() == "True"
        items.append(arct.ArctItem(
            id=parts[col["#id"]], warrant0=parts[col["warrant0"]], warrant1=parts[col["warrant1"]],
            label=int(parts[col["correctLabelW0orW1"]].strip()), reason=parts[col["reason"]], claim=parts[col["claim"]],
            debate_title=parts[col["debateTitle"]], debate_info=parts[col["debateInfo"]], flag=flag))
    return items


_TITLE = re.compile(r"^ ?= [^=].* = ?$")
_HEADING = re.compile(r"^ ?(= )+.*( =)+ ?$")


def _old_clean(text, unk_token):
    text = text.strip()
    for old, new in ((" @-@ ", "-"), (" @,@ ", ","), (" @.@ ", ".")):
        text = text.replace(old, new)
    return text.replace("<unk>", unk_token)


def old_read_articles(path, source, unk_token="[UNK]"):
    articles, title, paragraphs = [], None, []
    with open(path, encoding="utf-8", newline="") as fh:
        for raw in fh:
            line = raw.rstrip("\r\n")
            if not line.strip():
                continue
            if _TITLE.match(line):
                if title is not None and paragraphs:
                    articles.append(wiki.Article(title, tuple(paragraphs), source))
                title, paragraphs = line.strip(" =").strip(), []
            elif _HEADING.match(line):
                continue
            else:
                paragraphs.append(_old_clean(line, unk_token))
    if title is not None and paragraphs:
        articles.append(wiki.Article(title, tuple(paragraphs), source))
    return articles



# ---- the bench -------------------------------------------------------------------------------------------------
#: what is read: (label, kind, name); GLUE ``name`` is ``task/split``
CORPORA = (("SST-2 train (67,349 sentences)", "glue", "SST-2/train"), ("MRPC train", "glue", "MRPC/train"),
           ("STS-B train", "glue", "STS-B/train"), ("RTE train", "glue", "RTE/train"),
           ("QNLI dev", "glue", "QNLI/dev"), ("ARCT, all files", "arct", ""), ("WikiText (chapter 1)", "wiki", ""))

CHILD = r"""
import sys, time, json
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])
side, kind, name = sys.argv[3:6]
import readers
from attnbook.data import arct, glue, wiki
t = time.perf_counter()
if side == "after":  # once per process, whatever it reads: timed apart from the read
    import datasets, pyarrow
imported = time.perf_counter() - t
t = time.perf_counter()
if kind == "glue":
    task, split = name.split("/")
    spec = glue.task_spec(task)
    if side == "before":
        n = len(readers.old_read_tsv(glue.task_path(task, split), spec, spec.skip_malformed))
    else:
        n = len(glue.load_split(task, split).examples)
elif kind == "arct":
    if side == "before":
        n = sum(len(readers.old_read_arct(arct.arct_file(f))) for f in arct.FILES)
    else:
        n = sum(len(arct.load_arct(f)) for f in arct.FILES)
else:
    if side == "before":
        from pathlib import Path
        from attnbook.core.paths import data_dir
        n = sum(len(readers.old_read_articles(data_dir() / "wiki" / Path(*wiki.WIKI_FILES[s]), s))
                for s in ("test_raw", "valid"))
    else:
        n = len(wiki.load_articles())
print(json.dumps({"s": time.perf_counter() - t, "n": n, "import_s": imported}))
"""


def _child(side: str, kind: str, name: str, cache: Path) -> dict:
    env = {**os.environ, "ATTNBOOK_CACHE": str(cache)}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(HERE.parent), str(HERE), side, kind, name],
                          capture_output=True, text=True, env=env)
    if proc.returncode:
        raise RuntimeError(f"readers bench ({side}, {kind} {name}) failed: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_readers(repeats: int = 3) -> list[dict]:
    """Per corpus: the medians (seconds) of ``before``, ``first read`` and ``cached`` over ``repeats`` rounds, each
    round alternating the sides in fresh processes (every ``first read`` in its own empty cache)."""
    out = []
    for label, kind, name in CORPORA:
        times: dict[str, list[float]] = {"before": [], "first_read": [], "cached": [], "import": []}
        counts = set()
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as tmp:
                for side in ("before", "first_read", "cached"):
                    got = _child("before" if side == "before" else "after", kind, name, Path(tmp))
                    times[side].append(got["s"])
                    if side == "cached":
                        times["import"].append(got["import_s"])
                    counts.add(got["n"])
        if len(counts) != 1:
            raise RuntimeError(f"{label}: the readers read different numbers of items {sorted(counts)}")
        med = {k: float(np.median(v)) for k, v in times.items()}
        out.append({"corpus": label, "items": counts.pop(), **{f"{k}_s": round(v, 3) for k, v in med.items()},
                    "cached_over_before": round(med["cached"] / med["before"], 2),
                    "first_read_over_before": round(med["first_read"] / med["before"], 2)})
    return out


def rows(report: list | dict | None) -> list[tuple[str, str, str]]:
    """The README rows (benchmark, measured, target) of this part."""
    if not report:
        return []
    if isinstance(report, dict) and "error" in report:
        return [("readers: datasets vs the parsers they replaced", report["error"], "")]
    out = [(f"readers, {r['corpus']}: the book's reader (datasets) vs the parser before it, fresh processes",
            f"cached {r['cached_over_before']:.2f}x ({r['before_s']:.3f} -> {r['cached_s']:.3f} s); first read "
            f"{r['first_read_over_before']:.2f}x ({r['first_read_s']:.3f} s, builds the Dataset once)",
            "(cost; the issue asks for datasets)") for r in report]
    imports = [r["import_s"] for r in report if "import_s" in r]
    if imports:
        out.append(("readers: `import datasets, pyarrow`, once per process before the first read",
                    f"{float(np.median(imports)):.3f} s", "(cost)"))
    return out


if __name__ == "__main__":
    print(json.dumps(bench_readers(int(sys.argv[1]) if len(sys.argv) > 1 else 1), indent=1))
