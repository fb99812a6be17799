"""Altair charts for the book's recurring figures, rendered so they work offline.

Altair's default renderer loads Vega from a CDN, which leaves charts blank
offline (seminars run offline). :func:`enable` registers the ``attnbook``
renderer: every chart becomes

* ``text/html`` - a static SVG (made by vl-convert) inside a container, plus a
  script that swaps in the interactive Vega view when the book's bundled
  ``vegaEmbed`` (``book/_static/attnbook-vega.js``) is present; without it (no
  JavaScript, print, an untrusted notebook) the SVG stays;
* ``image/svg+xml`` - the same SVG, for viewers that prefer images;
* the Vega-Lite JSON, for JupyterLab's own renderer.

JupyterLab 4's own Vega renderer knows Vega-Lite up to v5 and Altair 6 writes v6, so in JupyterLab the HTML's static
SVG is what would show. Where a person runs the notebook (a frontend that can answer ``input()``, as JupyterLab,
Notebook 7 and VS Code can and papermill, which executes the book, never does) the bundle also carries Altair's
:class:`~altair.JupyterChart` widget (anywidget), with Vega, Vega-Lite and vega-embed bundled by vl-convert
(:func:`jupyter_chart_esm`), so the chart is interactive (tooltips, dropdowns) with no network; the frontend shows
the widget, and the book's build, which never gets it, is unchanged. ``ATTNBOOK_CHARTS=static`` (or
``interactive``) forces the choice.

Charts are pure functions of arrays/DataFrames; labels use the papers' 1-based
``layer-head`` names.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd

from attnbook.core.heads import head_label
from attnbook.core.io import atomic_write_text
from attnbook.core.paths import cache_dir

BUNDLE_NAME = "attnbook-vega.js"
LAYER_SCHEME = "viridis"
#: the drawn width (px) a chart may take in the book's text column (sphinx-book-theme at 1280 px: ~690 px of
#: content); wider charts are scaled down by the page's CSS, so charts are laid out to stay within it
COLUMN_WIDTH = 680


def panels_per_row(panel_width: float, n_panels: int, *, extra: float = 150, spacing: float = 20) -> int:
    """How many panels ``panel_width`` px wide fit side by side in :data:`COLUMN_WIDTH` (``extra``: the axis
    titles and the legend beside them); at least one, at most ``n_panels``."""
    fit = int((COLUMN_WIDTH - extra + spacing) // (panel_width + spacing))
    return max(1, min(int(n_panels), fit))


def stagger(x: Sequence[float], gap: float) -> list[int]:
    """A text level for each label at position ``x`` so that labels on one level are at least ``gap`` apart
    (greedy, by increasing ``x``): 0 for the first level, 1 for the next one up, ... Labels drawn at
    ``dy = -(base + level * line)`` then never overlap."""
    order = sorted(range(len(x)), key=lambda i: x[i])
    last: list[float] = []  # the last x placed on each level
    levels = [0] * len(x)
    for i in order:
        level = next((k for k, lx in enumerate(last) if x[i] - lx >= gap), len(last))
        if level == len(last):
            last.append(x[i])
        else:
            last[level] = x[i]
        levels[i] = level
    return levels


def wrap(charts: Sequence[alt.TopLevelMixin], per_row: int) -> alt.VConcatChart:
    """Charts laid out ``per_row`` to a row (a row per ``hconcat``), in order."""
    rows = [alt.hconcat(*charts[i:i + per_row]) for i in range(0, len(charts), max(1, per_row))]
    return alt.vconcat(*rows)


def write_vega_bundle(static_dir: Path) -> Path:
    """Write the Vega + Vega-Lite + vega-embed bundle (from vl-convert) to ``static_dir``, once."""
    import vl_convert as vlc


    path = Path(static_dir) / BUNDLE_NAME
    bundle = vlc.javascript_bundle(snippet="window.vegaEmbed = vegaEmbed;")
    # A classic script (ES modules are blocked on file:// pages), wrapped so its names stay private.
    text = "/* Vega, Vega-Lite and vega-embed, bundled by vl-convert */\n(function(){\n" + bundle + "\n})();\n"
    if not path.exists() or path.read_text() != text:
        atomic_write_text(path, text)
    return path


def chart_to_svg(spec: dict) -> str:
    """Static SVG of a Vega-Lite spec (no browser, no network)."""
    import vl_convert as vlc

    return vlc.vegalite_to_svg(spec)


def _scope_svg_ids(svg: str, prefix: str) -> str:
    """Make the SVG's internal ids (gradients, clip paths) unique to this chart and independent of how
    many charts were converted before, so a page with several charts has no clashing ids and the
    output is the same on every run."""
    import re

    ids = list(dict.fromkeys(re.findall(r'id="([^"]+)"', svg)))
    names = {old: f"{prefix}-{k}" for k, old in enumerate(ids)}
    if not names:
        return svg
    pattern = re.compile(r'(id="|url\(#)(' + "|".join(map(re.escape, sorted(ids, key=len, reverse=True))) + r')(["\)])')
    return pattern.sub(lambda m: f"{m.group(1)}{names[m.group(2)]}{m.group(3)}", svg)


def _chart_html(spec: dict, svg: str) -> str:
    blob = json.dumps(spec, sort_keys=True)
    chart_id = "attnbook-chart-" + hashlib.sha1(blob.encode()).hexdigest()[:12]
    return (
        f'<div class="attnbook-chart" id="{chart_id}">'
        f'<div class="attnbook-static">{svg}</div><div class="attnbook-live"></div></div>\n'
        "<script>(function(){var spec=" + blob + ";var root=document.getElementById('" + chart_id + "');"
        "var tries=0;function go(){if(window.vegaEmbed){"
        "window.vegaEmbed(root.querySelector('.attnbook-live'),spec,{renderer:'svg',actions:false})"
        ".then(function(){root.querySelector('.attnbook-static').style.display='none';})"
        ".catch(function(e){console.warn('attnbook chart stays static:',e);});}"
        "else if(++tries<100){setTimeout(go,50);}}"
        "if(document.readyState==='loading'){document.addEventListener('DOMContentLoaded',go);}else{go();}})();"
        "</script>"
    )


def attnbook_renderer(spec: dict, **metadata) -> dict:
    """Altair renderer: interactive HTML with a static SVG inside, plus SVG and Vega-Lite JSON; where a person
    runs the notebook (:func:`interactive_frontend`) also the interactive widget (:func:`jupyter_chart_bundle`)."""
    digest = hashlib.sha1(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]
    svg = _scope_svg_ids(chart_to_svg(spec), f"attnbook-svg-{digest}")
    mime = f"application/vnd.vegalite.v{alt.SCHEMA_VERSION.split('.')[0].lstrip('v')}+json"
    bundle = {"text/html": _chart_html(spec, svg), "image/svg+xml": svg, mime: spec}
    if interactive_frontend():
        bundle.update(jupyter_chart_bundle(spec))
    return bundle


#: the widget's vega-embed options: SVG marks (crisp, and what a page check can find), the export menu only
#: (the "Open in Vega Editor" entry needs the network)
WIDGET_EMBED_OPTIONS = {"renderer": "svg", "actions": {"export": True, "source": False, "compiled": False,
                                                       "editor": False}}


def interactive_frontend() -> bool:
    """Whether the chart is being shown to a person in a Jupyter frontend: the code runs in an IPython kernel and
    the request that runs it lets the kernel ask for input (``allow_stdin``), as JupyterLab, Notebook 7 and VS Code
    do and papermill/nbclient (the book's build) never do. ``ATTNBOOK_CHARTS=static`` or ``=interactive`` decides
    instead; without anywidget the answer is no."""
    choice = os.environ.get("ATTNBOOK_CHARTS", "").strip().lower()
    if choice in ("static", "interactive"):
        return choice == "interactive" and _have_anywidget()
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    kernel = getattr(get_ipython(), "kernel", None)
    if kernel is None or not hasattr(kernel, "get_parent"):
        return False
    try:
        parent = kernel.get_parent("shell") or {}
    except (AttributeError, LookupError, TypeError):  # an ipykernel without per-channel parents: the static chart
        return False
    return bool(parent.get("content", {}).get("allow_stdin")) and _have_anywidget()


def _have_anywidget() -> bool:
    import importlib.util

    return importlib.util.find_spec("anywidget") is not None


def jupyter_chart_esm() -> str:
    """The JavaScript of Altair's :class:`~altair.JupyterChart` with Vega, Vega-Lite and vega-embed bundled in (what
    ``JupyterChart.enable_offline()`` builds with vl-convert, ~0.9 MB, 5-15 s), kept in the cache folder per
    Altair and vl-convert version so a kernel builds it once per machine, not once per session."""
    import vl_convert as vlc
    from altair.jupyter.jupyter_chart import JupyterChart

    path = cache_dir() / "charts" / f"jupyterchart-altair{alt.__version__}-vlc{vlc.__version__}.js"
    if path.is_file():
        return path.read_text(encoding="utf-8")
    JupyterChart.enable_offline(True)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, JupyterChart._esm)
    return JupyterChart._esm


def jupyter_chart_bundle(spec: dict) -> dict:
    """The widget view of ``spec``: an Altair :class:`~altair.JupyterChart` that draws offline (the JavaScript from
    :func:`jupyter_chart_esm`). Only its widget mimetype is returned: the caller's bundle keeps the static chart."""
    from altair.jupyter.jupyter_chart import JupyterChart

    if not JupyterChart._is_offline:
        JupyterChart._esm = jupyter_chart_esm()  # what enable_offline() sets, read from the cache
        JupyterChart._is_offline = True
    widget = JupyterChart(chart=alt.Chart.from_dict(spec), embed_options=WIDGET_EMBED_OPTIONS)
    bundle = widget._repr_mimebundle_()
    if isinstance(bundle, tuple):  # anywidget answers (data, metadata)
        bundle = bundle[0]
    return {k: v for k, v in bundle.items() if k == "application/vnd.jupyter.widget-view+json"}


def enable() -> None:
    """Use the offline ``attnbook`` renderer for every chart (call once per notebook)."""
    if "attnbook" not in alt.renderers.names():
        alt.renderers.register("attnbook", attnbook_renderer)
    alt.renderers.enable("attnbook")
    alt.data_transformers.disable_max_rows()


# ---- numbered figures --------------------------------------------------------------------------

def chapter_number(chapter: str) -> int:
    """The chapter's number from its id, ``"04_kovaleva_taxonomy"`` -> 4 (chapter ids start with two digits)."""
    import re

    m = re.match(r"(\d+)", str(chapter))
    if not m:
        raise ValueError(f"chapter ids start with their number (e.g. '04_kovaleva_taxonomy'), got {chapter!r}")
    return int(m.group(1))


def caption_html(text: str) -> str:
    """A caption's text as HTML: escaped, with `code` and **bold** spans kept."""
    import html
    import re

    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)


class Figure:
    """A chart with its numbered caption ("Figure 4.3. ..."): shown as the chart's own output (interactive HTML
    with the static SVG inside) in a ``<figure>`` whose ``<figcaption class="attnbook-caption">`` holds the
    caption; the SVG and Vega-Lite outputs are the chart's."""

    def __init__(self, chart, number: str, caption: str):
        self.chart, self.number, self.caption = chart, number, caption

    def caption_markup(self) -> str:
        return (f'<figcaption class="attnbook-caption"><span class="attnbook-caption-number">Figure {self.number}.'
                f"</span> {caption_html(self.caption)}</figcaption>")

    def _chart_bundle(self) -> dict:
        bundle = self.chart._repr_mimebundle_()
        if isinstance(bundle, tuple):  # (data, metadata)
            bundle = bundle[0]
        return dict(bundle or {})

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        bundle = self._chart_bundle()
        anchor = "fig-" + self.number.replace(".", "-")
        body = bundle.get("text/html", "")
        bundle["text/html"] = (f'<figure class="attnbook-figure" id="{anchor}">\n{body}\n'
                               f"{self.caption_markup()}</figure>")
        bundle["text/plain"] = f"Figure {self.number}. {self.caption}"
        return bundle

    def _ipython_display_(self) -> None:
        from IPython.display import HTML, display

        bundle = self._repr_mimebundle_()
        if "application/vnd.jupyter.widget-view+json" in bundle:  # a frontend shows the widget: caption below it
            widget = {k: v for k, v in bundle.items() if k != "text/html"}
            display(widget, raw=True)
            display(HTML(self.caption_markup()))
        else:
            display(bundle, raw=True)


class Figures:
    """The numbered figures of one chapter page, in page order: ``figure = Figures("04_kovaleva_taxonomy")``, then
    ``figure(chart, "caption")`` is Figure 4.1, the next one 4.2, ... Showing the same caption again (a cell run
    twice) keeps its number. A caption that states a number formats it from the run's values."""

    def __init__(self, chapter: str):
        self.chapter = chapter_number(chapter)
        self.numbers: dict[str, str] = {}

    def __call__(self, chart, caption: str) -> Figure | None:
        """``chart`` (any Altair chart) with the chapter's next figure number; ``None`` when there is no chart."""
        if chart is None:
            return None
        caption = " ".join(str(caption).split())
        if not caption:
            raise ValueError("a figure needs a caption: one sentence on what it shows and what to take from it")
        if caption not in self.numbers:
            self.numbers[caption] = f"{self.chapter}.{len(self.numbers) + 1}"
        return Figure(chart, self.numbers[caption], caption)


# ---- recurring figures -------------------------------------------------------------------------

def heads_frame(values: dict[str, np.ndarray]) -> pd.DataFrame:
    """Long table of several ``values[layer, head]`` arrays: layer, head (1-based), label, one column each."""
    first = next(iter(values.values()))
    n_layers, n_heads = np.asarray(first).shape
    rows = []
    for layer in range(n_layers):
        for head in range(n_heads):
            row = {"layer": layer + 1, "head": head + 1, "label": head_label(layer, head)}
            row.update({k: float(np.asarray(v)[layer, head]) for k, v in values.items()})
            rows.append(row)
    return pd.DataFrame(rows)


def layer_scatter(
    values: dict[str, np.ndarray],
    y_title: str,
    title: str = "",
    reference: float | None = None,
    reference_label: str = "",
    width: int = 420,
    height: int = 240,
    marks: Sequence[alt.TopLevelMixin] = (),
) -> alt.Chart:
    """One point per head and series, x = layer (jittered per series), y = value (Clark Fig. 2-4 style).

    ``values`` maps a series name (e.g. ``"[CLS]"``) to ``values[layer, head]``; ``marks``: more layers drawn under
    the points on the same axes (e.g. the paper's value, :func:`reference_rule`).
    """
    df = heads_frame(values).melt(id_vars=["layer", "head", "label"], var_name="series", value_name="value")
    names = list(values)
    offsets = {name: (i - (len(names) - 1) / 2) * 0.18 for i, name in enumerate(names)}
    df["x"] = df["layer"] + df["series"].map(offsets)
    n_layers = int(df["layer"].max())
    points = (
        alt.Chart(df)
        .mark_circle(size=36, opacity=0.75)
        .encode(
            x=alt.X("x:Q", title="layer", scale=alt.Scale(domain=[0.5, n_layers + 0.5]),
                    axis=alt.Axis(values=list(range(1, n_layers + 1)), format="d")),
            y=alt.Y("value:Q", title=y_title),
            color=alt.Color("series:N", title=None, sort=names),
            tooltip=[alt.Tooltip("label:N", title="head"), "series:N", alt.Tooltip("value:Q", format=".3f")],
        )
    )
    under = list(marks) + ([reference_rule(reference, reference_label, x=0.5)] if reference is not None else [])
    chart = alt.layer(points, *under) if under else points  # the marks on top, so their labels stay readable
    return chart.properties(title=title, width=width, height=height)


def reference_rule(value: float, label: str, *, x: float | None = None, y: float | None = None, color: str = "gray",
                   axis: str = "y") -> alt.LayerChart:
    """A dashed rule at ``value`` on the ``axis`` ("y": horizontal, "x": vertical) with ``label`` written beside it
    (e.g. "paper: 40% (Michel §4.2)"); ``x``: where on a quantitative x axis a horizontal rule's label starts (else
    at the left edge); ``y``: where on a quantitative y axis a vertical rule's label ends, written to the rule's left
    (else at the top, to its right)."""
    frame = pd.DataFrame({"v": [float(value)], "what": [label]})
    tip = ["what:N", alt.Tooltip("v:Q", format=".3g", title="value")]
    rule = alt.Chart(frame).mark_rule(strokeDash=[4, 4], color=color).encode(
        **{axis: alt.Y("v:Q") if axis == "y" else alt.X("v:Q")}, tooltip=tip)
    if axis == "y":
        where = {"x": alt.datum(x)} if x is not None else {"x": alt.value(2)}
        text = alt.Chart(frame).mark_text(align="left", baseline="bottom", dy=-2, fontSize=10, color=color).encode(
            y="v:Q", text="what:N", **where)
    elif y is not None:
        text = alt.Chart(frame).mark_text(align="right", baseline="bottom", dx=-3, dy=-3, fontSize=10,
                                          color=color).encode(x="v:Q", y=alt.datum(y), text="what:N")
    else:
        text = alt.Chart(frame).mark_text(align="left", baseline="top", dx=3, fontSize=10, color=color).encode(
            x="v:Q", y=alt.value(2), text="what:N")
    return rule + text


def layer_lines(values: dict[str, np.ndarray], y_title: str, title: str = "", width: int = 420,
                height: int = 220) -> alt.Chart:
    """Per-layer series (``values[name] = array[layer]``) as lines with points (Clark Fig. 3 style)."""
    rows = [{"layer": i + 1, "series": name, "value": float(v)} for name, arr in values.items()
            for i, v in enumerate(np.asarray(arr))]
    df = pd.DataFrame(rows)
    return (
        alt.Chart(df)
        .mark_line(point=True)
        .encode(
            x=alt.X("layer:O", title="layer"),
            y=alt.Y("value:Q", title=y_title),
            color=alt.Color("series:N", title=None, sort=list(values)),
            tooltip=["layer:O", "series:N", alt.Tooltip("value:Q", format=".4g")],
        )
        .properties(title=title, width=width, height=height)
    )


def head_heatmap(values: np.ndarray, title: str = "", value_title: str = "value", scheme: str = "blues",
                 domain_mid: float | None = None, fmt: str = ".3f", cell: int = 22) -> alt.Chart:
    """Layer x head heatmap of ``values[layer, head]`` with 1-based labels and hover values."""
    df = heads_frame({"value": values})
    scale = alt.Scale(scheme=scheme, domainMid=domain_mid) if domain_mid is not None else alt.Scale(scheme=scheme)
    n_layers, n_heads = np.asarray(values).shape
    return (
        alt.Chart(df)
        .mark_rect()
        .encode(
            x=alt.X("head:O", title="head"),
            y=alt.Y("layer:O", title="layer"),
            color=alt.Color("value:Q", title=value_title, scale=scale),
            tooltip=[alt.Tooltip("label:N", title="head"), alt.Tooltip("value:Q", format=fmt, title=value_title)],
        )
        .properties(title=title, width=cell * n_heads, height=cell * n_layers)
    )


def line_view_frame(tokens: Sequence[str], attn: np.ndarray, threshold: float = 0.02) -> pd.DataFrame:
    """Edges of a line view from ``attn[layer, head, query, key]`` (or ``attn[query, key]``), weights >= threshold."""
    a = np.asarray(attn)
    if a.ndim == 2:
        a = a[None, None]
    rows = []
    for layer in range(a.shape[0]):
        for head in range(a.shape[1]):
            q_idx, k_idx = np.nonzero(a[layer, head] >= threshold)
            for q, k in zip(q_idx, k_idx):
                rows.append({"layer": layer + 1, "head": head + 1, "label": head_label(layer, head),
                             "q": int(q), "k": int(k), "from": tokens[q], "to": tokens[k],
                             "weight": float(a[layer, head, q, k])})
    return pd.DataFrame(rows)


def line_view(
    tokens: Sequence[str],
    attn: np.ndarray,
    title: str = "",
    layer_head: tuple[int, int] | None = None,
    threshold: float = 0.02,
    interactive: bool = True,
    height_per_token: int = 13,
    width: int = 230,
) -> alt.Chart:
    """Clark Fig. 1/5 line view: tokens in two columns, a line from each query (left) to each key (right),
    darker for more weight.

    With ``attn[layer, head, query, key]`` and ``interactive``, dropdowns choose the layer and head
    (starting at ``layer_head``, 0-based); the static fallback shows that starting head.
    With ``attn[query, key]``, one fixed head is drawn.
    """
    a = np.asarray(attn)
    single = a.ndim == 2
    if single:
        a = a[None, None]
    start = layer_head or (0, 0)
    edges = line_view_frame(tokens, a, threshold)
    tok_df = pd.DataFrame({"i": range(len(tokens)), "token": list(tokens)})
    y = alt.Y("i:O", axis=None)
    height = height_per_token * len(tokens)
    left = alt.Chart(tok_df).mark_text(align="right", dx=-4).encode(x=alt.datum(0), y=y, text="token:N")
    right = alt.Chart(tok_df).mark_text(align="left", dx=4).encode(x=alt.datum(1), y=y, text="token:N")
    base = alt.Chart(edges)
    if interactive and not single:
        suffix = hashlib.sha1(f"{title}|{len(tokens)}".encode()).hexdigest()[:6]
        layer_p = alt.param(name=f"layer_{suffix}", value=start[0] + 1,
                            bind=alt.binding_select(options=list(range(1, a.shape[0] + 1)), name="layer "))
        head_p = alt.param(name=f"head_{suffix}", value=start[1] + 1,
                           bind=alt.binding_select(options=list(range(1, a.shape[1] + 1)), name="head "))
        base = base.add_params(layer_p, head_p).transform_filter(
            (alt.datum.layer == layer_p) & (alt.datum.head == head_p))
    else:
        base = base.transform_filter((alt.datum.layer == start[0] + 1) & (alt.datum.head == start[1] + 1))
    lines = (
        base.transform_calculate(x0="0", x1="1")
        .transform_fold(["q", "k"], as_=["end", "pos"])
        .transform_calculate(xx="datum.end === 'q' ? 0 : 1", edge="datum.q + '-' + datum.k")
        .mark_line(color="#1f4e9c")
        .encode(
            x=alt.X("xx:Q", axis=None, scale=alt.Scale(domain=[0, 1])),
            y=alt.Y("pos:O", axis=None, scale=alt.Scale(domain=list(range(len(tokens))))),
            detail="edge:N",
            opacity=alt.Opacity("weight:Q", scale=alt.Scale(domain=[0, 1], range=[0, 1]), legend=None),
            tooltip=["label:N", "from:N", "to:N", alt.Tooltip("weight:Q", format=".3f")],
        )
    )
    left = left.encode(y=alt.Y("i:O", axis=None, scale=alt.Scale(domain=list(range(len(tokens))))))
    right = right.encode(y=alt.Y("i:O", axis=None, scale=alt.Scale(domain=list(range(len(tokens))))))
    return (lines + left + right).properties(title=title, width=width, height=height)


def map_heatmap(tokens: Sequence[str], attn: np.ndarray, title: str = "", cell: int = 12) -> alt.Chart:
    """Heatmap of one head's map ``attn[query, key]`` with the tokens on both axes."""
    a = np.asarray(attn)
    n = a.shape[0]
    labels = [f"{i}:{t}" for i, t in enumerate(tokens)]
    df = pd.DataFrame([{"query": labels[q], "key": labels[k], "weight": float(a[q, k])}
                       for q in range(n) for k in range(n)])
    return (
        alt.Chart(df)
        .mark_rect()
        .encode(
            x=alt.X("key:N", sort=labels, title="key"),
            y=alt.Y("query:N", sort=labels, title="query"),
            color=alt.Color("weight:Q", scale=alt.Scale(scheme="greys", domain=[0, 1])),
            tooltip=["query:N", "key:N", alt.Tooltip("weight:Q", format=".3f")],
        )
        .properties(title=title, width=cell * n, height=cell * n)
    )
