"""Chapter 9, what holds across encoders: chapters 1-4's pre-trained analyses on several models, one row per finding.

:class:`AcrossPipeline` runs, on every model of the chapter's ``models``, the pre-trained stages of chapters 1-4's own
pipelines (Clark's surface, probing and clustering pipelines, the FrameNet stage of Kovaleva's taxonomy pipeline; no
fine-tuning) with each chapter's parameters for the profile and the model's ``sizes`` (:func:`source_parameters`).
Their measurements are cached by their arguments, so the model chapters 1-4 ran with is read back from their caches.
Each model's rows are the chapters' own (``studies/*/paper/rows.py``, their rules; :data:`MODEL_FREE` rows left out);
a :class:`Finding` joins one finding's rows over the models and judges them with :class:`attnbook.verdict.Cases`, the
models being the cases: *holds in both / in one / in neither / undecided* (:attr:`Finding.holds`). One measurement is
new: Jensen-Shannon divergences between heads of different models on word-level maps (:func:`attnbook.atlas.joint_map.joint_distances`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from attnbook import verdict
from attnbook.atlas.joint_map import joint_distances
from attnbook.core import cache, executor
from attnbook.core.errors import ModelError, ParameterError
from attnbook.core.parameters import Parameters
from attnbook.core.heads import head_label, relative_layers
from attnbook.data import framenet as framenet_data
from attnbook.data.conllu import ud_path
from attnbook.data.models_fetch import model_dir
from attnbook.engine.cost import PIECES, UD_SIZES, Shape, StageParams, Work
from attnbook.engine.job_models import job_encoder
from attnbook.engine.models import FETCHED_NAMES, KNOWN_SHAPES, LoadedModel, has_mlm_head, resolve_model
from attnbook.engine.pipeline import Pipeline, no_model_work, stage
from attnbook.stats import Estimate
from attnbook.studies.clark import clusters as clark_clusters
from attnbook.studies.clark import costs as clark_costs
from attnbook.studies.clark import distances, embedding
from attnbook.studies.clark import paper as clark
from attnbook.studies.clark.pipeline import ClusteringPipeline, MLMHead, ProbingPipeline, SurfacePipeline
from attnbook.studies.kovaleva import costs as kovaleva_costs
from attnbook.studies.kovaleva import paper as kovaleva
from attnbook.studies.kovaleva.pipeline import TaxonomyPipeline
from attnbook.verdict import AGREES, DISAGREES, INCONCLUSIVE, NOT_COMPARABLE, PARTLY, Comparison

#: the chapters whose pre-trained analyses run on every model, in book order
SOURCES = SURFACE, PROBING, CLUSTERING, TAXONOMY = ("01_clark_surface_patterns", "02_clark_probing",
                                                   "03_clark_clustering", "04_kovaleva_taxonomy")
#: rows of the chapters that say nothing about a model: the data's own baselines, numbers fixed by construction
MODEL_FREE = {("§4.3 coreference", "baselines: nearest < head-word match < rule-based"),
              ("§4.2 FrameNet", "annotated instances after the filter"),
              ("§4.2 FrameNet", "heads above the 99th percentile")}
#: a model's outcomes that count as the finding holding in it (the cell says which of the two)
HOLDING = (AGREES, PARTLY)


def holds_in(c: Comparison) -> bool:
    """A finding holds in a model when its row agrees or partly agrees with the paper, or, for a quantity with a sign
    (a margin over a baseline, a gain), when its whole interval lies on the paper's side of 0: the paper's direction,
    whatever its size (:meth:`attnbook.verdict.Comparison.same_direction`)."""
    return c.verdict in HOLDING or c.same_direction() is True


def undecided_in(c: Comparison) -> bool:
    return c.verdict == INCONCLUSIVE and not holds_in(c)
#: all-mpnet-base-v2's shape (its published config.json), for a plan made before `attnbook fetch model mpnet`
FETCHED_SHAPES = {"all-mpnet-base-v2": Shape(12, 12, 768, 3072, vocab=30527, has_mlm_head=False)}
#: UD EWT dev: mean of (words + 2)^2 per sentence (12.6 words; start and separator tokens as words), for the plan
UD_WORD_ENTRIES = 320.6
#: FrameNet full-text instances the §4.2 filter keeps (51 of 6,334 in FrameNet 1.7) and their mean word pieces
FRAMENET_KEPT, FRAMENET_PIECES = 51, 11.7
_SINK = re.compile(r"\[(?:CLS|SEP)\]")
_HERE = re.compile(r"\s*\(here: [^)]*\)")


# --------------------------------------------------------------------------------------------- models and parameters


def compared_models(p: Parameters) -> list[str]:
    """The models compared: ``models``, with ``model`` (the one chapters 1-8 ran with) first when it is not among
    them; each once (one name alone, ``-p models=mpnet``, is a list of one)."""
    models = [p.models] if isinstance(p.models, str) else list(p.models)
    return list(dict.fromkeys([*([] if p.model in models else [p.model]), *models]))


def source_parameters(chapter_params: Callable[..., Parameters], profile: str, model: str,
                      sizes: Mapping[str, Mapping[str, Mapping[str, Any]]] | None) -> dict[str, Parameters]:
    """Chapters 1-4's resolved parameters for ``profile`` and ``model``, with ``sizes[model][chapter]`` (the chapter's
    per-model sizes) over them. ``chapter_params`` is :func:`attnbook.chapters.params.chapter_params` (passed in: the
    atlas sits below the book machinery). Chapter 3 must draw chapter 1's segments and read chapter 2's UD sentences
    (so its behaviours come from their caches): sizes that part them raise :class:`ParameterError`."""
    own = dict((sizes or {}).get(model) or {})
    if set(own) - set(SOURCES):
        raise ParameterError(f"sizes for {model} name {sorted(set(own) - set(SOURCES))}; chapter 9 runs {SOURCES}")
    out = {c: chapter_params(c, profile, {**own.get(c, {}), "model": model}) for c in SOURCES}
    p1, p2, p3 = out[SURFACE], out[PROBING], out[CLUSTERING]
    pairs = [(p1, k, k) for k in ("n_segments", "max_tokens", "seed", "batch_size")] + [
        (p2, "syntax_split", "syntax_split"), (p2, "syntax_sentences", "syntax_sentences"),
        (p2, "max_tokens", "syntax_max_tokens"), (p2, "batch_size", "syntax_batch_size")]
    differ = [f"{theirs}={getattr(p3, mine)!r} (theirs {getattr(p, theirs)!r})" for p, theirs, mine in pairs
              if getattr(p, theirs) != getattr(p3, mine)]
    if differ:
        raise ParameterError(f"sizes for {model}: chapter 3's parameters must be chapters 1-2's: {', '.join(differ)}")
    return out


def model_labels(models: Mapping[str, LoadedModel]) -> dict[str, str]:
    """A short display label per model (its name without the parenthesis, a folder's last part), each distinct."""
    out: dict[str, str] = {}
    for key, m in models.items():
        label = Path(m.name.split(" (")[0]).name if "/" in m.name else m.name.split(" (")[0]
        out[key] = label if label not in out.values() else f"{label} [{key}]"
    return out


def describe_models(models: Mapping[str, LoadedModel]) -> dict:
    """The provenance record of several models: each one's :meth:`LoadedModel.describe`, and their fields joined."""
    each = [m.describe() for m in models.values()]
    joined = {k: " | ".join(str(d.get(k) or "") for d in each) for k in ("revision", "fingerprint", "family", "device")}
    return {**joined, "name": " vs ".join(model_labels(models).values()), "models": each,
            **{k: " / ".join(str(d[k]) for d in each) for k in ("n_layers", "n_heads")},
            "shape_note": " ".join(d["shape_note"] for d in each if d.get("shape_note"))}


def encoder_shape(name: str) -> Shape:
    """Model ``name``'s shape from its configuration, without loading or fetching weights: a fetched model's
    assembled folder, else its published shape (:data:`FETCHED_SHAPES`); a local or cached model's folder; a
    paper model not downloaded yet, its known shape (:data:`attnbook.engine.models.KNOWN_SHAPES`)."""
    from transformers import AutoConfig

    if name in FETCHED_NAMES and not (model_dir("mpnet") / "config.json").exists():
        return FETCHED_SHAPES[FETCHED_NAMES[name]]
    try:
        path = model_dir("mpnet") if name in FETCHED_NAMES else resolve_model(name)[1]
    except ModelError:
        if name not in KNOWN_SHAPES:
            raise
        layers, heads, hidden = KNOWN_SHAPES[name]
        return Shape(layers, heads, hidden, 4 * hidden, has_mlm_head=True)
    c = AutoConfig.from_pretrained(str(path))
    return Shape(int(c.num_hidden_layers), int(c.num_attention_heads), int(c.hidden_size),
                 int(getattr(c, "intermediate_size", None) or getattr(c, "hidden_dim", 4 * c.hidden_size)),
                 int(c.vocab_size), has_mlm_head(path))


# --------------------------------------------------------------------------------------------- the stages' costs


def _costed(what: Callable[[Mapping[str, StageParams], Shape], list[Work]]) -> Callable[[StageParams, Shape], list[Work]]:
    """A stage's cost: ``what(sources, shape)`` (the studies' own costs with each model's source parameters) for every
    compared model. The model chapters 1-4 ran with, at their sizes, is read back from their caches: only its inputs
    are built again from text (their cache keys digest them), as the head atlas counts them."""

    def cost(p: StageParams, s: Shape) -> list[Work]:
        if p.resolve is None:
            raise ParameterError("chapter 9's cost needs the book's parameter resolver (StageParams.resolve)")
        out = []
        for m in compared_models(p):
            src = {c: StageParams(p.chapter, v, fetched=p.fetched)
                   for c, v in source_parameters(p.resolve, p.profile, m, p.sizes).items()}
            back = m == p.model and not (p.sizes or {}).get(m)
            out += [Work(p.chapter, f"{m}: {w.what}", w.kind, w.amount, w.parallel, group=m)  # one job per model
                    for w in what(src, encoder_shape(m)) if not back or w.kind in ("encode", "parse")]
        return out

    return cost


def _no_mlm(p: StageParams) -> StageParams:
    return p if p.grad_segments else StageParams(p.chapter, p.params.replace(mlm_fit_steps=0))


surface_cost = _costed(lambda src, s: clark_costs.segments_cost(_no_mlm(src[SURFACE]), s)
                       + clark_costs.surface_cost(src[SURFACE], s))
gradients_cost = _costed(lambda src, s: clark_costs.mlm_head_cost(src[SURFACE], s)
                         + clark_costs.gradients_cost(src[SURFACE], s) if src[SURFACE].grad_segments else [])
syntax_cost = _costed(lambda src, s: clark_costs.syntax_cost(src[PROBING], s))
coref_cost = _costed(lambda src, s: clark_costs.coref_cost(src[PROBING], s))
probes_cost = _costed(lambda src, s: clark_costs.probes_cost(src[PROBING], s)
                      if src[PROBING].probe_train_sentences else [])
clusters_cost = _costed(lambda src, s: clark_costs.distances_cost(src[CLUSTERING], s))
framenet_cost = _costed(lambda src, s: kovaleva_costs.framenet_cost(src[TAXONOMY], s) + [
    Work(src[TAXONOMY].chapter, f"maps of {FRAMENET_KEPT} FrameNet instances (§4.2)", "forward",
         s.forward_flops(FRAMENET_PIECES, FRAMENET_KEPT))])


def joint_cost(p: StageParams, s: Shape) -> list[Work]:
    """Every model's maps of the joint sentences (computed for every model: no chapter caches them), and the
    Jensen-Shannon terms of every pair of heads over their word-level entries."""
    n = min(int(p.joint_sentences), UD_SIZES["dev"])
    shapes = {m: encoder_shape(m) for m in compared_models(p)}
    out = [Work(p.chapter, f"{m}: word-level maps of {n} UD sentences", "forward", sh.forward_flops(PIECES["ud"], n))
           for m, sh in shapes.items()]
    heads = sum(sh.n_layers * sh.n_heads for sh in shapes.values())
    return out + [Work(p.chapter, "encoding the joint sentences", "encode", PIECES["ud"] * n * len(shapes)),
                  Work(p.chapter, f"Jensen-Shannon terms of {heads * (heads - 1) // 2:,} pairs of heads of all models",
                       "pairs", heads * (heads - 1) / 2 * n * UD_WORD_ENTRIES)]


# --------------------------------------------------------------------------------------------- the chapter's pipeline


@dataclass(frozen=True)
class Gradients:
    """§3.2's MLM head (with its held-out accuracy) and the attention gradients through it."""
    mlm: MLMHead
    grads: dict


@dataclass(frozen=True)
class Clusters:
    """§6 for one model: the distances' arrays, each head's behaviours and the clustering."""
    arrays: dict
    behaviours: list
    clustering: clark_clusters.Clustering


@dataclass(frozen=True)
class ModelFindings:
    """One model's rows (the chapters' own, model-free ones left out), the heads they name (:func:`named_heads`) and
    why a section has no row (``skipped``: experiment -> reason)."""
    label: str
    n_layers: int
    rows: list[Comparison]
    heads: dict[str, Any]
    skipped: dict[str, str]


class AcrossPipeline(Pipeline):
    """Chapter 9: chapters 1-4's pre-trained stages on every model of ``models`` (name -> loaded encoder), each with
    its chapters' parameters ``sources[name]`` (:func:`source_parameters`); stages return ``{name: result}``."""


    def __init__(self, models: Mapping[str, LoadedModel], params: Parameters,
                 sources: Mapping[str, Mapping[str, Parameters]]):
        super().__init__(next(iter(models.values())), params)
        self.models, self.sources = dict(models), dict(sources)
        self.labels = model_labels(self.models)
        self._runs: dict[tuple[str, str], Pipeline] = {}

    def _run(self, m: str, chapter: str) -> Any:
        """The source chapter's pipeline over model ``m`` (made once; chapter 3's gets chapter 1's segments)."""
        if (m, chapter) not in self._runs:
            loaded, p = self.models[m], self.sources[m][chapter]
            self._runs[(m, chapter)] = (
                SurfacePipeline(loaded, p) if chapter == SURFACE else ProbingPipeline(loaded, p) if chapter == PROBING
                else ClusteringPipeline(loaded, p, self._run(m, SURFACE).segments()) if chapter == CLUSTERING
                else TaxonomyPipeline(loaded, p, {}))  # its pre-trained stages only: no fine-tuning recipe
        return self._runs[(m, chapter)]

    def _each(self, fn: Callable[[str], Any]) -> dict[str, Any]:
        self.measured()
        return {m: fn(m) for m in self.models}

    @stage("each model's measurements, one job per model", no_model_work)  # counted in the stages that read them
    def measured(self) -> dict[str, list[str]]:
        """On a cluster (``ATTNBOOK_SCHEDULER``, :mod:`attnbook.core.executor`): every model's measurements for the
        stages below (surface statistics to FrameNet links; the joint map needs all models at once) as one job per
        model (:func:`_model_job`), written into the shared cache, from which the stages read them back; returns the
        cache entries each job used. In this process (the default scheduler), or with one model, nothing: the stages
        compute as they go. Either way the stages get the same cached measurements."""
        if executor.scheduler().kind == "default" or len(self.models) < 2:
            return {}
        names = list(self.models)
        jobs = [dict(model=m, key=self.models[m].key, params=self.p, sources=dict(self.sources[m])) for m in names]
        entries = executor.run_jobs(_model_job, jobs, names=[f"chapter 9: {self.labels[m]}'s measurements"
                                                             for m in names])
        for entry in (e for found in entries for e in found):  # this chapter's provenance lists them
            cache.note_use(*entry.split("/", 1))
        return dict(zip(names, entries))

    def data_files(self) -> list[Path]:
        files = {ud_path("dev"), *framenet_data.fulltext_files()}
        for m in self.models:
            for c in (SURFACE, PROBING, CLUSTERING):
                files.update(self._run(m, c).data_files())
        return sorted(files)

    @stage("surface statistics (Clark §3)", surface_cost)
    def surface(self) -> dict[str, dict]:
        return self._each(lambda m: self._run(m, SURFACE).statistics())

    @stage("MLM heads and attention gradients (Clark §3.2)", gradients_cost)
    def gradients(self) -> dict[str, Gradients | None]:
        """``None`` for a model whose sizes give no gradient segments."""
        return self._each(lambda m: Gradients(self._run(m, SURFACE).mlm_head(), self._run(m, SURFACE).gradients())
                          if self.sources[m][SURFACE].grad_segments else None)

    @stage("syntactic heads (Clark §4.2)", syntax_cost)
    def syntax(self) -> dict[str, Any]:
        return self._each(lambda m: self._run(m, PROBING).syntax())

    @stage("coreference heads (Clark §4.3)", coref_cost)
    def coref(self) -> dict[str, Any]:
        return self._each(lambda m: self._run(m, PROBING).coref())

    @stage("attention-based probes (Clark §5)", probes_cost)
    def probes(self) -> dict[str, dict | None]:
        """``None`` for a model whose sizes give no probe training sentences."""
        return self._each(lambda m: self._run(m, PROBING).probes()
                          if self.sources[m][PROBING].probe_train_sentences else None)

    @stage("head distances, behaviours and clusters (Clark §6)", clusters_cost)
    def clusters(self) -> dict[str, Clusters]:
        runs = self._each(lambda m: self._run(m, CLUSTERING))
        return {m: Clusters(r.distances(), r.behaviours().behaviours, r.clusters().clustering) for m, r in runs.items()}

    @stage("FrameNet frame links (Kovaleva §4.2)", framenet_cost)
    def framenet(self) -> dict[str, Any]:
        return self._each(lambda m: self._run(m, TAXONOMY).framenet())

    @stage("every model's heads on one map (word-level JS divergences)", joint_cost)
    def joint(self) -> dict[str, Any]:
        p2 = self.sources[next(iter(self.models))][PROBING]
        return joint_distances(self.models, self.p.joint_sentences, max_tokens=p2.max_tokens,
                               batch_size=p2.batch_size)

    @stage("each model's rows, judged by its chapter's rules", no_model_work)
    def findings(self) -> dict[str, ModelFindings]:
        return self._each(self._findings_of)

    def _findings_of(self, m: str) -> ModelFindings:
        s, loaded, skipped = self.sources[m], self.models[m], {}
        g = self.gradients()[m]
        rows = clark.surface_comparison(self.surface()[m], g and g.grads, mlm=g and g.mlm.quality,
                                        seed=s[SURFACE].seed)
        if g is None:
            skipped["§3.2 gradients"] = "not run for this model in this profile (no gradient segments)"
        acc, co, pr = self.syntax()[m], self.coref()[m], self.probes()[m]
        rows += clark.syntax_comparison(acc, seed=s[PROBING].seed)
        rows += clark.coref_comparison(co.heads, co.baselines, seed=s[PROBING].seed)
        if pr is None:
            skipped["§5 probing classifiers"] = "not run for this model in this profile (no probe training sentences)"
        else:
            rows += clark.probe_comparison(pr, seed=s[PROBING].seed)
        rows += cluster_rows(loaded, self.clusters()[m], s[CLUSTERING])
        fn = self.framenet()[m]
        rows += kovaleva.framenet_comparisons(len(fn.kept), len(fn.heads["heads"]), loaded.n_layers * loaded.n_heads,
                                              fn.top["mean"], fn.top["label"], fn.top.get("difference"))
        kept = [r for r in rows if r.kind == verdict.CLAIM and (r.experiment, r.quantity) not in MODEL_FREE]
        return ModelFindings(self.labels[m], loaded.n_layers, kept, named_heads(acc, co.heads, fn.top), skipped)

    @stage("one row per finding across the models", no_model_work)
    def rows(self) -> list[Finding]:
        return across_findings(list(self.findings().values()))

    @stage("paper vs this run", no_model_work)
    def comparisons(self) -> list[Comparison]:
        """One comparison row per finding: how many of the models it holds in (:meth:`Finding.comparison`)."""
        return [f.comparison() for f in self.rows()]


def _model_job(job: dict) -> list[str]:
    """One model's measurements (:meth:`AcrossPipeline.measured`) as a job: the model loaded by name where the job
    runs (its weights checked against the run's), its stages computed into the cache; the cache entries it used."""
    loaded = job_encoder(job["model"], job["key"])
    before = set(cache.used_entries())
    run = AcrossPipeline({job["model"]: loaded}, job["params"], {job["model"]: job["sources"]})
    for measure in (run.surface, run.gradients, run.syntax, run.coref, run.probes, run.clusters, run.framenet):
        measure()
    return sorted(set(cache.used_entries()) - before)


def cluster_rows(loaded: LoadedModel, c: Clusters, p3: Parameters) -> list[Comparison]:
    """Chapter 3's §6 rows for one model, from the same calls as the chapter's notebook (its permutation tests, MDS
    and bootstrap over groups of segments, with its parameters)."""
    d, L, H = c.arrays["js_mean"], loaded.n_layers, loaded.n_heads
    n, seed = p3.n_permutations, p3.seed
    layer_test = clark_clusters.layer_permutation_test(d, L, H, n_permutations=n, seed=seed)
    mds = embedding.mds_embedding(d, seed=seed, n_init=p3.mds_n_init, orient_by=clark_clusters.layer_labels(L, H))
    beh = clark_clusters.behaviour_test(d, c.behaviours, n_permutations=n, seed=seed)
    boot = distances.resampled_distances(c.arrays, clark.N_RESAMPLES_CLUSTERS, seed=seed)
    return clark.clustering_comparison(layer_test, c.clustering, mds, beh, resampled=boot, head_behaviours=c.behaviours,
                                       n_groups=distances.n_groups(c.arrays), n_segments=int(c.arrays["n_examples"]))


# --------------------------------------------------------------------------------------------- rows across models


def finding_key(row: Comparison) -> tuple[str, str]:
    """The finding a row tests, the same for every model: its experiment and quantity with ``[CLS]``/``[SEP]`` named
    alike (Clark §3.2's sink rows test each model's own sink token, so their quantities name different tokens)."""
    return row.experiment, _SINK.sub("[·]", row.quantity)


def _parse(label: str) -> tuple[int, int]:
    return tuple(int(x) - 1 for x in label.split("-"))  # type: ignore[return-value]


#: the heads the papers name: each Table 1 relation's best head (Clark §4.2) and the coreference head (§4.3)
PAPER_HEADS = {"relations": {r: _parse(row.head) for r, row in clark.TABLE1.items()}, "coref": _parse(clark.COREF_HEAD)}


def best_relation_heads(acc) -> dict[str, tuple[int, int]]:
    """The 0-based best head of each Table 1 relation that has edges here (Clark §4.2)."""
    return {r: acc.best(r)[:2] for r in acc.relations if r in clark.TABLE1 and acc.total[acc._rel(r)] > 0}


def named_heads(acc, coref_heads, frame_top: Mapping[str, Any]) -> dict[str, Any]:
    """The 0-based heads a model's rows name: each relation's best head (:func:`best_relation_heads`), the best
    coreference head (Clark §4.3) and the top FrameNet head (Kovaleva §4.2)."""
    return {"relations": best_relation_heads(acc), "coref": coref_heads.best("all"), "framenet": tuple(frame_top["head"])}


def named_head(key: tuple[str, str], heads: Mapping[str, Any]) -> tuple[int, int] | None:
    """The head the finding ``key``'s row names, among ``heads`` (:func:`named_heads`, :data:`PAPER_HEADS`)."""
    exp, q = key
    if exp == "§4.2 heads as parsers":
        return heads["relations"].get("All" if q.startswith("best single head") else q.split(":")[0])
    return heads.get({"§4.3 coreference": "coref", "§4.2 FrameNet": "framenet"}.get(exp, ""))


def depth_note(key: tuple[str, str], per_model: Sequence[ModelFindings]) -> str:
    """Where the finding's row names layers or a head: their relative depth (layer / number of layers), the paper's
    (bert-base, 12 layers) and each model's."""
    n = clark.SURFACE["n_layers"]
    for part, name in (("previous token", "prev_heads_layers"), ("next token", "next_heads_layers"),
                       ("over half of the attention", "sep_majority_layers")):
        if part in key[1]:
            layers = clark.SURFACE[name]
            return (f"relative depth (layer / layers): the paper's layers {', '.join(map(str, layers))} of {n} = "
                    + ", ".join(f"{l / n:.2f}" for l in layers) + "".join(
                        f"; {f.label}: layers {', '.join(map(str, relative_layers(layers, f.n_layers)))} of {f.n_layers}"
                        for f in per_model))
    at = lambda h, L: f"{head_label(*h)} at {h[0] + 1}/{L} = {(h[0] + 1) / L:.2f}"  # noqa: E731
    paper = named_head(key, PAPER_HEADS)
    there = [f"{f.label} {at(h, f.n_layers)}" for f in per_model if (h := named_head(key, f.heads))]
    return "" if not there else "relative depth (layer / layers): " + "; ".join(
        ([f"paper {at(paper, n)}"] if paper else []) + there)


@dataclass(frozen=True)
class Finding:
    """One finding of the papers across models: each model's row (``cells``, by label) or why it has none
    (``absent``), in the models' order (``models``)."""
    experiment: str
    quantity: str
    paper: Any
    models: tuple[str, ...]
    cells: dict[str, Comparison]
    absent: dict[str, str]
    note: str = ""

    def testable(self) -> list[str]:
        """The models whose row the chapter's rule could judge."""
        return [m for m in self.models if m in self.cells and self.cells[m].verdict != NOT_COMPARABLE]

    def estimate(self) -> Estimate:
        """What :class:`attnbook.verdict.Cases` judges: models where it holds (agrees or partly), and those plus the
        undecided ones, of the testable models."""
        t = self.testable()
        sure = sum(holds_in(self.cells[m]) for m in t)
        return Estimate(float(sure), None, float(sure + sum(undecided_in(self.cells[m]) for m in t)), len(t),
                        "models")

    @property
    def rule(self) -> verdict.Cases:
        """All testable models hold: agrees; one holds and one surely not: partly; none holds or is undecided: disagrees."""
        return verdict.Cases(partly=1 / max(len(self.testable()), 1))

    @property
    def outcome(self) -> str:
        return verdict.judge(self.rule, None, self.estimate())

    @property
    def category(self) -> str:
        """``all``, ``some``, ``none``, ``undecided``, ``partial`` (holds wherever testable, not testable in every
        model) or ``untestable``."""
        o, n = self.outcome, len(self.testable())
        if o == NOT_COMPARABLE:
            return "untestable"
        if o == AGREES:
            return "all" if n == len(self.models) else "partial"
        return {PARTLY: "some", DISAGREES: "none", INCONCLUSIVE: "undecided"}[o]

    @property
    def holds(self) -> str:
        """The final column: *holds in both / in one / in neither / undecided* (with three models: *in all three /
        in two / in one / in none*), and where a model could not test it."""
        t, total = self.testable(), len(self.models)
        held = [m for m in t if holds_in(self.cells[m])]
        words = {1: "one", 2: "two", 3: "three"}
        c = self.category
        text = {"untestable": "not testable", "undecided": "undecided",
                "all": "holds in both" if total == 2 else f"holds in all {words.get(total, total)}",
                "none": "holds in neither" if total == 2 else "holds in none"}.get(c) or (
            f"holds in {words.get(len(held), len(held))} ({', '.join(held)})")
        untested = [m for m in self.models if m not in t]
        return text + (f"; not testable in {', '.join(untested)}" if untested and t else "")

    def comparison(self) -> Comparison:
        """The chapter's "paper vs this run" row: every model's number and outcome, judged by :attr:`rule`."""
        cells = "; ".join(f"{m}: {_shown(self.cells[m])} ({self.cells[m].verdict})" if m in self.cells
                          else f"{m}: not run ({self.absent[m]})" for m in self.models)
        return verdict.row(self.experiment, self.quantity, paper=self.paper, ours=cells, estimate=self.estimate(),
                           rule=self.rule, kind=verdict.OWN, note=f"{self.holds}; {self.note}".rstrip("; "))


def _shown(c: Comparison) -> str:
    """A row's number as shown, with its interval unless the number's text already gives one."""
    return f"{c.ours} {c.interval}" if c.interval and "[" not in str(c.ours) else str(c.ours)


def across_findings(per_model: Sequence[ModelFindings]) -> list[Finding]:
    """One :class:`Finding` per finding any model has a row for, in the order the models' rows come; a model without
    the row is ``absent`` with its reason. Relative depth goes into the note where a paper names layers or heads."""
    models = tuple(f.label for f in per_model)
    keys: dict[tuple[str, str], dict[str, Comparison]] = {}
    for f in per_model:
        for r in f.rows:
            keys.setdefault(finding_key(r), {})[f.label] = r
    out = []
    for key, cells in keys.items():
        first = next(iter(cells.values()))
        quantities = {c.quantity for c in cells.values()}
        quantity = first.quantity if len(quantities) == 1 else key[1].replace("[·]", "[sink]")
        notes = [] if len(quantities) == 1 else [
            "each model's own sink token: " + ", ".join(f"{m} {_SINK.search(c.quantity).group(0)}"
                                                        for m, c in cells.items() if _SINK.search(c.quantity))]
        notes += [d for d in (depth_note(key, [f for f in per_model if f.label in cells]),) if d]
        absent = {f.label: f.skipped.get(key[0], "no such row for this model's data") for f in per_model
                  if f.label not in cells}
        out.append(Finding(key[0], quantity, _HERE.sub("", str(first.paper)), models, cells, absent, "; ".join(notes)))
    return out


def wide_table(findings: Sequence[Finding]) -> pd.DataFrame:
    """The findings as a table: the paper's number (bert-base), each model's number with its interval and its own
    outcome, and the final column (:attr:`Finding.holds`)."""
    rows = []
    for f in findings:
        row = {"experiment": f.experiment, "finding": f.quantity, "paper (bert-base)": f.paper}
        for m in f.models:
            c = f.cells.get(m)
            row[m] = _shown(c) if c else "not run"
            row[f"{m}: outcome"] = ("not run" if c is None else c.verdict + ", the paper's direction"
                                    if c.verdict not in HOLDING and holds_in(c) else c.verdict)
        rows.append({**row, "holds in": f.holds, "note": f.note})
    return pd.DataFrame(rows)


def summary_markdown(findings: Sequence[Finding], title: str = "What holds across encoders") -> str:
    """The chapter's closing summary, written from its rows only: how many findings hold in every model, in some,
    in none, or are undecided, naming them, and which look like properties of attention heads (they hold in every
    model) and which look specific to a model (they hold in some)."""
    if not findings:
        return f"**{title}.** No finding was compared."
    models = findings[0].models
    by = {c: [f for f in findings if f.category == c] for c in ("all", "some", "none", "undecided", "partial",
                                                                 "untestable")}
    every = "both" if len(models) == 2 else f"all {len(models)}"
    parts = [f"**{title}.** Of {len(findings)} findings of the papers tested on {', '.join(models)}: "
             + ", ".join(f"{len(v)} {w.replace('hold ', 'holds ') if len(v) == 1 else w}" for w, v in zip(
                 (f"hold in {every}", "hold in some but not all", "hold in none", "undecided",
                  "hold where testable (not testable in every model)", "not testable"), by.values()) if v) + "."]
    name = lambda f: f"{f.quantity} ({f.experiment})"
    if by["all"]:
        parts.append(f"Holding in {every} models, these look like properties of attention heads in such encoders "
                     "rather than of one model: " + "; ".join(map(name, by["all"])) + ".")
    if by["some"]:
        parts.append("Holding in one model and not another, these look model-specific: " + "; ".join(
            f"{name(f)}: {f.holds}, " + ", ".join(f"{m} {f.cells[m].verdict}" for m in f.testable()
                                                  if not holds_in(f.cells[m])) for f in by["some"]) + ".")
    if by["none"]:
        parts.append("Holding in no model here: " + "; ".join(map(name, by["none"])) + ".")
    if by["undecided"]:
        parts.append("The samples cannot decide (each model's outcome is in the table): "
                     + "; ".join(map(name, by["undecided"])) + ".")
    if by["partial"]:
        parts.append("Holding wherever it could be tested, but not testable in every model: "
                     + "; ".join(f"{name(f)} ({f.holds})" for f in by["partial"]) + ".")
    return " ".join(parts)
