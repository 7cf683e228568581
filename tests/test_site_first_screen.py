"""Issue 30.2 in a real browser: each experimental chapter's first screen at 1280 x 900 holds its
answer sentence whole and its one key figure (at least half of it: the plot, with its legend on the
chapters 7-10). The notebooks' order is tested without a build (test_chapter_openings.py); this is
what a reader sees."""
import pytest

from idmap_book.evidence import claims
from test_site_browser import SITE, _open_drawn, browser, site_url  # noqa: F401  (the fixtures)

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
