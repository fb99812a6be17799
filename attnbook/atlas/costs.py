"""What chapter 8 (the head atlas) costs: one function per stage of :class:`attnbook.atlas.pipeline.AtlasPipeline`.

The atlas runs no model of its own: it reads chapters 1-6's measurements back from their caches
(:func:`attnbook.atlas.sources.gather`), so its cost is what rebuilding their cache keys and loading their classifiers
takes; its questions and cards compute on the gathered arrays (seconds).
"""
from __future__ import annotations

from attnbook.atlas import sources
from attnbook.core.errors import ParameterError
from attnbook.engine.cost import (
    GUM_DOCS,
    GUM_WINDOWS_PER_DOC,
    PIECES,
    PIECES_DEV,
    UD_SIZES,
    Shape,
    StageParams,
    Work,
    cap,
    framenet_work,
    glue_size,
)
from attnbook.engine.jobs import seeds_for


def gather_cost(p: StageParams, s: Shape) -> list[Work]:
    """What the atlas does with chapters 1-6's caches in place: it calls their functions again
    (:func:`attnbook.atlas.sources.gather`), so it builds their inputs from text again (the cache keys are digests
    of them), parses FrameNet's XML again, and loads every fine-tuned classifier it reads (Table 1's, whose
    rows decide whether chapter 4's tasks were learned, chapter 5's tasks x seeds, chapter 6's seeds and agreement tasks); model work is read back
    from the caches. The parameters are the source chapters' own for the profile, with the atlas's model and its
    ``chapter_overrides`` (as :func:`attnbook.atlas.sources.source_parameters` resolves them), through the book's
    resolver ``p.resolve``."""
    if p.resolve is None or p.recipe_for is None:
        raise ParameterError("the atlas's cost needs the book's parameter resolver and GLUE recipe "
                             "(StageParams.resolve, StageParams.recipe_for)")
    overrides = dict(p.chapter_overrides or {})
    p1, p2, p3, p4, p5, p6 = (p.resolve(c, p.profile, {**overrides.get(c, {}), "model": p.model})
                              for c in sorted(sources.SOURCE_CHAPTERS))
    seg = lambda q: PIECES["wiki_fill"] * q.max_tokens * q.n_segments  # noqa: E731
    docs = p2.coref_max_docs or GUM_DOCS
    windows = docs * (1 if p2.coref_first_only else GUM_WINDOWS_PER_DOC)
    ud = PIECES["ud"]
    pieces = (seg(p1) + seg(p3) + ud * min(p2.syntax_sentences, UD_SIZES["dev"])
              + ud * min(p3.syntax_sentences, UD_SIZES["dev"]) + 0.95 * p2.coref_max_tokens * windows)
    glue_pieces = 0.0
    for task in [t for t in p4.tasks if p.trainable(t)]:
        glue_pieces += min(PIECES_DEV.get(task, 40.0), p4.max_tokens) * p4.n_examples
    for task in [t for t in p5.tasks if p.trainable(t)]:
        glue_pieces += PIECES_DEV.get(task, 40.0) * cap(p5.dev_caps, glue_size(task, "dev"), task)
    if p.trainable(p6.task):
        glue_pieces += PIECES_DEV.get(p6.task, 40.0) * (cap(p6.dev_cap, glue_size(p6.task, "dev"))
                                                           + cap(p6.importance_cap, glue_size(p6.task, "train")))
    out = [Work(p.chapter, "encoding chapters 1-6's inputs again (their cache keys)", "encode", pieces + glue_pieces)]
    out += framenet_work(p.chapter, "parsing FrameNet's XML again (chapter 4)")
    r4 = p.recipe_for(p4)  # chapter 4's verdict whether a task was learned reads Table 1: all of its classifiers
    n4 = sum(len(seeds_for(r4, t)) + len(r4.get("random_seeds") or r4["seeds"])
             for t in p4.table1_tasks if p.trainable(t))
    r5 = p.recipe_for(p5)
    n5 = sum(len(seeds_for(r5, t, p5.seeds)) for t in p5.tasks if p.trainable(t))
    others = [t for t in dict.fromkeys(p6.agreement_tasks) if t != p6.task and p.trainable(t)]
    n6 = len(p6.seeds) + 2 * len(others)  # learned or not, then importance scores of the learned ones
    out.append(Work(p.chapter, f"loading up to {n4 + n5 + n6} fine-tuned classifiers (chapters 4-6)", "load",
                    n4 + n5 + n6))
    return out
