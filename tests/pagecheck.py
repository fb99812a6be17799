"""What a reader sees on a rendered page, measured in a browser: figures and tables that leave their column, table
columns narrower than their longest word, in-page links of tables that lead nowhere, chart labels that overlap,
kernel stderr on the page, the parameters cell and the summary box.

:func:`page_problems` runs in a Playwright page that has loaded a page of the book and returns a list of problems
(empty: the page reads cleanly). The test suite runs it on the smoke book; ``python tests/pagecheck.py _build/html``
runs it on every page of any built book (e.g. the quick one) and prints the problems per page.
"""
from __future__ import annotations

import sys
from pathlib import Path

#: a chart drawn wider than its column is scaled down to fit (book/_static/attnbook.css); below this share of its
#: drawn size its labels become too small to read, and the chart must be laid out for the column instead
MIN_SCALE = 0.8

#: JavaScript measuring the page's tables (``{openFolds}``: with every fold of a table opened, then closed again).
#: For each cell, each word (a run of characters between breakable spaces, across inline elements, measured as the
#: sum of its line fragments with a Range) must fit the cell's content width: a column narrower than a word breaks
#: it inside ("exp erim ent") or lets it spill over. Returns ``{narrow, links, tables}``: narrow columns (three at
#: most per table), table links to an id that is not on the page, and the number of tables measured.
COLUMNS = r"""
({openFolds}) => {
  const seen = new Set();
  const tables = Array.from(document.querySelectorAll('article table, main table, .bd-article table'))
    .filter(t => !seen.has(t) && seen.add(t) && t.getBoundingClientRect().width > 0);
  const opened = [];
  if (openFolds) tables.forEach(t => t.querySelectorAll('details:not([open])').forEach(d => { d.open = true; opened.push(d); }));
  const space = new Set([' ', '\t', '\n', '\r', '\f', '\u200b']);
  const blockOf = (node, cell) => {
    let el = node.parentElement;
    while (el && el !== cell && getComputedStyle(el).display.startsWith('inline')) el = el.parentElement;
    return el;
  };
  const headingOf = (el) => {
    const s = el.closest('section'); const h = s && s.querySelector('h1, h2, h3, h4');
    return h ? h.textContent.replace(/[#¶]/g, '').trim().slice(0, 50) : '?';
  };
  const narrow = [];
  tables.forEach((table, ti) => {
    const head = table.querySelector('thead tr:last-child') || table.querySelector('tr');
    const names = [];
    if (head) Array.from(head.cells).forEach(c => { for (let k = 0; k < (c.colSpan || 1); k++) names.push(c.textContent.trim()); });
    let found = 0;
    for (const cell of table.querySelectorAll('th, td')) {
      if (found >= 3) break;
      if (cell.closest('table') !== table) continue;
      const cs = getComputedStyle(cell);
      const box = cell.getBoundingClientRect();
      const width = box.width - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight)
                    - parseFloat(cs.borderLeftWidth) - parseFloat(cs.borderRightWidth);
      if (box.width <= 0) continue;
      const words = [];
      let cur = null, block = null;
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if (n.parentElement.closest('table') !== table) continue;
        const b = blockOf(n, cell);
        if (b !== block) { if (cur) words.push(cur); cur = null; block = b; }
        for (let i = 0; i < n.data.length; i++) {
          const ch = n.data[i];
          if (space.has(ch)) { if (cur) words.push(cur); cur = null; continue; }
          if (!cur) cur = {text: '', parts: []};
          const last = cur.parts[cur.parts.length - 1];
          if (last && last.node === n) last.end = i + 1; else cur.parts.push({node: n, start: i, end: i + 1});
          cur.text += ch;
        }
      }
      if (cur) words.push(cur);
      let widest = null;
      for (const w of words) {
        let total = 0;
        for (const p of w.parts) {
          const r = document.createRange(); r.setStart(p.node, p.start); r.setEnd(p.node, p.end);
          for (const rect of r.getClientRects()) total += rect.width;
        }
        if (total > 0 && (!widest || total > widest.width)) widest = {text: w.text, width: total};
      }
      if (widest && widest.width > width + 0.5) {
        let col = 0;
        for (let c = cell.parentElement.firstElementChild; c && c !== cell; c = c.nextElementSibling) col += c.colSpan || 1;
        const name = names[col] || `column ${col + 1}`;
        narrow.push(`table ${ti + 1} in "${headingOf(table)}": column "${name.slice(0, 40)}" is ${Math.round(width)} px wide, `
                    + `its word "${widest.text.slice(0, 40)}" ${Math.round(widest.width)} px`
                    + (openFolds ? ' (folds open)' : ''));
        found++;
      }
    }
  });
  opened.forEach(d => { d.open = false; });
  const links = [];
  tables.forEach(t => t.querySelectorAll('a[href^="#"]').forEach(a => {
    const id = decodeURIComponent(a.getAttribute('href').slice(1));
    if (!id || !document.getElementById(id)) links.push(`"${a.textContent.trim().slice(0, 30)}" links to #${id}, which is not on the page`);
  }));
  return {narrow, links, tables: tables.length};
}
"""

#: JavaScript returning the page's measurements; runs after the charts have rendered
MEASURE = r"""
(MIN_SCALE) => {
  const column = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const right = column.getBoundingClientRect().right + 2;
  const out = {overflow: [], overlaps: [], shrunk: [], stderr: 0, parameters: 0, injected: 0, summary: 0};
  const name = (el) => {
    const fig = el.closest('.cell');
    const heading = (() => { let n = el.closest('section'); const h = n && n.querySelector('h1, h2, h3');
                             return h ? h.textContent.replace('#', '').trim().slice(0, 50) : '?'; })();
    return heading;
  };
  document.querySelectorAll('.attnbook-chart .vega-embed svg, .attnbook-chart .vega-embed canvas').forEach(el => {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.right > right) out.overflow.push(`chart in "${name(el)}" ends at ${Math.round(r.right)} px, column at ${Math.round(right)}`);
    const drawn = parseFloat(el.getAttribute('width') || '0');
    if (r.width > 0 && drawn > 0 && r.width / drawn < MIN_SCALE) out.shrunk.push(`chart in "${name(el)}" drawn ${Math.round(drawn)} px wide, shown at ${Math.round(100 * r.width / drawn)}%`);
  });
  // a table may be wider than the column only inside a box that scrolls sideways and itself ends within the column
  const scroller = (el) => { for (let n = el.parentElement; n; n = n.parentElement) {
    if (!n.closest('.cell_output')) return null;  // only an output's own box, not the page's
    const o = getComputedStyle(n).overflowX; if (o === 'auto' || o === 'scroll') return n; } return null; };
  document.querySelectorAll('.cell_output table, .output table, article table').forEach(el => {
    const r = el.getBoundingClientRect();
    const box = scroller(el);
    const edge = box ? box.getBoundingClientRect().right : r.right;
    if (r.width > 0 && edge > right) out.overflow.push(`table in "${name(el)}" ends at ${Math.round(edge)} px, column at ${Math.round(right)}`);
  });
  document.querySelectorAll('.attnbook-chart .vega-embed svg').forEach(svg => {
    const boxes = Array.from(svg.querySelectorAll('text'))
      .filter(t => t.textContent.trim() && getComputedStyle(t).opacity !== '0' && t.getAttribute('opacity') !== '0')
      .map(t => { const r = t.getBoundingClientRect(); return {t: t.textContent.trim(), x0: r.left, x1: r.right, y0: r.top, y1: r.bottom}; })
      .filter(b => b.x1 - b.x0 > 0 && b.y1 - b.y0 > 0)
      .sort((a, b) => a.x0 - b.x0);
    let found = 0;
    for (let i = 0; i < boxes.length && found < 3; i++) {
      for (let j = i + 1; j < boxes.length && boxes[j].x0 < boxes[i].x1; j++) {
        const a = boxes[i], b = boxes[j];
        const w = Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0), h = Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0);
        const small = Math.min((a.x1 - a.x0) * (a.y1 - a.y0), (b.x1 - b.x0) * (b.y1 - b.y0));
        if (w > 0 && h > 0 && w * h > 0.25 * small) {
          out.overlaps.push(`"${a.t.slice(0, 30)}" and "${b.t.slice(0, 30)}" in "${name(svg)}"`); found++;
          if (found >= 3) break;
        }
      }
    }
  });
  out.stderr = document.querySelectorAll('.output.stderr, .cell_output .stderr').length;
  out.parameters = document.querySelectorAll('.tag_parameters').length;
  out.injected = document.querySelectorAll('.tag_injected-parameters').length;
  out.summary = document.querySelectorAll('.attnbook-summary').length;
  const closed = (__COLUMNS__)({openFolds: false}), open = (__COLUMNS__)({openFolds: true});
  out.narrow = closed.narrow.concat(open.narrow.filter(n => !closed.narrow.includes(n.replace(' (folds open)', ''))));
  out.links = closed.links;
  return out;
}
""".replace("__COLUMNS__", COLUMNS.strip())


def page_problems(page, chapter_page: bool = True, parameters: int = 1) -> list[str]:
    """Problems of the page loaded in ``page`` (a Playwright page); ``chapter_page``: also require the summary box and
    ``parameters`` parameters cells (one on a chapter's first page, none on its further pages: the notebook has one)."""
    m = page.evaluate(MEASURE, MIN_SCALE)
    problems = ([f"overflow: {o}" for o in m["overflow"]] + [f"labels overlap: {o}" for o in m["overlaps"]]
                + [f"too small: {o}" for o in m["shrunk"]] + [f"narrow column: {o}" for o in m["narrow"]]
                + [f"broken table link: {o}" for o in m["links"]])
    if m["stderr"]:
        problems.append(f"{m['stderr']} stderr output block(s) on the page")
    if chapter_page:
        if m["parameters"] != parameters or m["injected"]:
            problems.append(f"{m['parameters']} parameters cell(s) and {m['injected']} injected one(s); "
                            f"want {parameters}")
        if m["summary"] != 1:
            problems.append(f"{m['summary']} summary boxes; want one")
    return problems


def pages(html: Path) -> list[tuple[Path, bool]]:
    """Every page of a built book, each with whether it is a chapter (``book/0*.html``)."""
    return [(f, f.name[:1].isdigit()) for f in sorted((html / "book").glob("*.html"))]


def chapter_pages(book: Path, chromium: str | None, wait_ms: int = 0):
    """``(page id, page)`` for each chapter page of the built ``book`` (its project folder), loaded one after the
    other in one Chromium page at 1,280 x 900 (``wait_ms``: time for the charts to draw)."""
    from playwright.sync_api import sync_playwright

    from attnbook.chapters.runner import available_chapters
    from attnbook.chapters.toc import chapter as chapter_of

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            for chapter in available_chapters():
                for name in chapter_of(chapter).page_ids:  # a chapter published on several pages: each of them
                    page.goto((Path(book) / "_build" / "html" / "book" / f"{name}.html").as_uri())
                    page.wait_for_load_state("load")
                    if wait_ms:
                        page.wait_for_timeout(wait_ms)
                    yield name, page
        finally:
            browser.close()


def main(html: Path) -> int:  # pragma: no cover - a manual check of a built book
    import shutil

    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    from attnbook.chapters.toc import CHAPTER_IDS

    total = 0
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        for f, chapter in pages(html):
            page.goto(f.as_uri())
            page.wait_for_load_state("load")
            page.wait_for_timeout(2500 if chapter else 500)
            problems = page_problems(page, chapter_page=chapter, parameters=int(f.stem in CHAPTER_IDS))
            total += len(problems)
            print(f"== {f.name}: {len(problems)} problem(s)")
            for p in problems:
                print("   ", p)
        browser.close()
    return 1 if total else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "_build/html").resolve()))
