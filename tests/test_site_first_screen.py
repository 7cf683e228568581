"""Issue 30.2 in a real browser: each experimental chapter's first screen at 1280 x 900 holds its
answer sentence whole and its one key figure (at least half of it: the plot, with its legend on the
chapters 7-10). The notebooks' order is tested without a build (test_chapter_openings.py); this is
what a reader sees. And every page's first screen is its own text: no setup fold ("Show code cell
source") and no cell of imports in its first two thirds."""
import pytest

from idmap_book.evidence import claims
from test_site_browser import SITE, _open_drawn, browser, site_pages, site_url  # noqa: F401

pytestmark = pytest.mark.slow
CHAPTERS = [f"{ch}.html" for ch in claims.chapters()]  # every chapter that tests a claim
SCREEN = (1280, 900)
FIRST_SCREEN_JS = """() => {
  const fig = document.querySelector('article .plotly-graph-div');
  if (!fig) return null;
  const f = fig.getBoundingClientRect();
  const outs = Array.from(document.querySelectorAll('article .cell_output'))
    .filter(o => !o.querySelector('.plotly-graph-div') && o.getBoundingClientRect().bottom <= f.top + 1
                 && o.innerText.trim().length > 80);
  const a = outs.length ? outs[outs.length - 1].getBoundingClientRect() : null;
  return {figTop: f.top, figHeight: f.height, answerBottom: a ? a.bottom : null,
          answer: outs.length ? outs[outs.length - 1].innerText.trim().slice(0, 80) : null};
}"""


def first_screen_problems(info, height=SCREEN[1]) -> list[str]:
    """What the first screen lacks: the answer (a computed paragraph above the first figure) whole
    on it, and at least half of the key figure."""
    if info is None:
        return ["no figure on the page"]
    out = []
    if info["answerBottom"] is None:
        out.append("no answer paragraph above the first figure")
    elif info["answerBottom"] > height:
        out.append(f"the answer ends at {info['answerBottom']:.0f} px, below the first screen "
                   f"({height} px)")
    shown = max(0.0, min(height - info["figTop"], info["figHeight"])) / info["figHeight"]
    if shown < 0.5:
        out.append(f"{shown:.0%} of the key figure on the first screen (it starts at "
                   f"{info['figTop']:.0f} px)")
    return out


@pytest.mark.parametrize("name", CHAPTERS)
def test_the_first_screen_holds_the_answer_and_the_key_figure(browser, site_url,
                                                              name):  # noqa: F811
    assert (SITE / name).is_file(), f"{name} was not built"
    html, visit = _open_drawn(browser, site_url, name, SCREEN)
    try:
        info = visit.page.evaluate(FIRST_SCREEN_JS)
    finally:
        visit.close()
    assert first_screen_problems(info) == [], f"{name}: {first_screen_problems(info)} ({info})"


def test_a_first_screen_without_its_answer_or_figure_is_caught():
    ok = {"figTop": 529, "figHeight": 430, "answerBottom": 511, "answer": "In a short run ..."}
    assert first_screen_problems(ok) == []
    assert first_screen_problems({**ok, "answerBottom": 950}) == [
        "the answer ends at 950 px, below the first screen (900 px)"]
    assert first_screen_problems({**ok,
                                  "figTop": 700}) == ["47% of the key figure on the first screen "
                                                      "(it starts at 700 px)"]
    assert first_screen_problems({**ok,
                                  "answerBottom": None}) == ["no answer paragraph above the first figure"]
    assert first_screen_problems(None) == ["no figure on the page"]


# The first screen's first two thirds (600 of 900 px) are the page's answer: a setup fold or an import
# cell may start only below them (the exercises page: its instructions come first, then the imports
# the exercises are written against).
ANSWER_PX = 600
PLUMBING_JS = """(limit) => {
  const out = [], top = e => e.getBoundingClientRect().top + window.scrollY;
  for (const s of document.querySelectorAll('article.bd-article details > summary')) {
    const t = s.innerText.trim().split('\\n')[0];
    if (/^Show code cell/.test(t) && top(s) < limit) out.push(['fold', t, Math.round(top(s))]);
  }
  for (const pre of document.querySelectorAll('article.bd-article .cell_input pre')) {
    const t = pre.innerText.trim().split('\\n')[0];
    if (pre.checkVisibility() && /^(import|from)\\s/.test(t) && top(pre) < limit)
      out.push(['import cell', t, Math.round(top(pre))]);
  }
  return out;
}"""


def plumbing_problems(found) -> list[str]:
    return [f"{kind} {text!r} starts at {y} px, within the first screen's {ANSWER_PX} px of "
            f"answer" for kind, text, y in found]


@pytest.mark.parametrize("name", site_pages() or ["index.html"])
def test_the_first_screen_is_the_answer_not_the_setup(browser, site_url, name):  # noqa: F811
    """At 1280 x 900 no page opens on its setup fold or on a cell of imports: the setup cell is
    not shown on the site (Jupyter and Colab show it), nor the theory chapters' imports."""
    html, visit = _open_drawn(browser, site_url, name, SCREEN)
    try:
        found = visit.page.evaluate(PLUMBING_JS, ANSWER_PX)
    finally:
        visit.close()
    assert plumbing_problems(found) == [], f"{name}: {plumbing_problems(found)}"


def test_a_setup_fold_or_imports_on_the_first_screen_are_caught(browser, site_url):  # noqa: F811
    """The check sees what it looks for: chapter 2's first screen with a setup fold and its
    imports put back where they were."""
    html, visit = _open_drawn(browser, site_url, "02_propagation.html", SCREEN)
    try:
        page = visit.page
        page.evaluate("""() => { const h = document.querySelector('article.bd-article h1');
            h.insertAdjacentHTML('afterend', '<div class="cell"><details class="admonition hide">'
              + '<summary><p>Show code cell source</p></summary><div class="cell_input"><pre>'
              + '# Setup.</pre></div></details></div><div class="cell"><div class="cell_input">'
              + '<pre>import torch\\nimport idmap_lib as im</pre></div></div>'); }""")
        found = plumbing_problems(page.evaluate(PLUMBING_JS, ANSWER_PX))
    finally:
        visit.close()
    assert {f.split(" '")[0] for f in found} == {"fold", "import cell"}, found
