"""What a reader sees on a rendered chapter page, measured in a browser (issue 21): figures and tables that leave
their column, chart labels that overlap, kernel stderr on the page, the parameters cell and the summary box.

:func:`page_problems` runs in a Playwright page that has loaded a chapter and returns a list of problems (empty:
the page reads cleanly). The test suite runs it on the smoke book; ``python tests/pagecheck.py _build/html`` runs it
on any built book (e.g. the quick one) and prints the problems per page.
"""
from __future__ import annotations

import sys
from pathlib import Path

#: a chart drawn wider than its column is scaled down to fit (book/_static/attnbook.css); below this share of its
#: drawn size its labels become too small to read, and the chart must be laid out for the column instead
MIN_SCALE = 0.8

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
  document.querySelectorAll('.cell_output table, .output table, article table').forEach(el => {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.right > right) out.overflow.push(`table in "${name(el)}" ends at ${Math.round(r.right)} px, column at ${Math.round(right)}`);
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
  return out;
}
"""


def page_problems(page, chapter_page: bool = True) -> list[str]:
    """Problems of the page loaded in ``page`` (a Playwright page); ``chapter_page``: also require one parameters
    cell and the summary box."""
    m = page.evaluate(MEASURE, MIN_SCALE)
    problems = ([f"overflow: {o}" for o in m["overflow"]] + [f"labels overlap: {o}" for o in m["overlaps"]]
                + [f"too small: {o}" for o in m["shrunk"]])
    if m["stderr"]:
        problems.append(f"{m['stderr']} stderr output block(s) on the page")
    if chapter_page:
        if m["parameters"] != 1 or m["injected"]:
            problems.append(f"{m['parameters']} parameters cell(s) and {m['injected']} injected one(s); want one")
        if m["summary"] != 1:
            problems.append(f"{m['summary']} summary boxes; want one")
    return problems


def main(html: Path) -> int:  # pragma: no cover - a manual check of a built book
    import shutil

    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    total = 0
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        for f in sorted((html / "book").glob("0*.html")):
            page.goto(f.as_uri())
            page.wait_for_load_state("load")
            page.wait_for_timeout(2500)
            problems = page_problems(page)
            total += len(problems)
            print(f"== {f.name}: {len(problems)} problem(s)")
            for p in problems:
                print("   ", p)
        browser.close()
    return 1 if total else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "_build/html").resolve()))
