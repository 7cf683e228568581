"""Every built page is free of what hurts a reader (tests/site_hygiene.py), and each check catches its class when
one is planted."""
from pathlib import Path

import pytest

import site_hygiene as h

SITE = Path(__file__).resolve().parents[1] / "_build" / "html"


def pages():
    return sorted(p.name for p in SITE.glob("*.html")) if (SITE / "index.html").is_file() else []


@pytest.mark.parametrize("name", pages() or ["index.html"])
def test_a_built_page_is_clean(name):
    assert (SITE / "index.html").is_file(), f"{SITE} has no built site: run `make book` first"
    found = h.findings(SITE / name)
    assert not found, f"{name}:\n" + "\n".join(found)


def page(body: str) -> str:
    return f'<html><body><article class="bd-article">{body}</article></body></html>'


FIGURE = ('<script>Plotly.newPlot("f", {data}, {{"title": {{"text": "planted"}}{axis}}}, {{}})</script>')


@pytest.mark.parametrize("check, planted, clean", [
    ("raw_markdown_tables", "<p>| exercise | goes with |\n|---|---|\n| 1 | 2 |</p>",
     "<table><tr><td>exercise</td></tr></table><pre>| a | b |\n|---|---|</pre>"),
    ("raw_tex", r"<p>keeping $\lambda = 1$ keeps it</p>",
     r'<p>keeping <span class="math notranslate nohighlight">\(\lambda = 1\)</span> costs $5</p>'),
    ("machine_paths", "<p>decoding /work/shared/data/cifar10-jpeg.tar.gz once into the cache</p>",
     "<p>decoding cifar10-jpeg.tar.gz once into the cache (cifar10-d34c.pt)</p>"),
    ("warnings_in_outputs", '<div class="cell_output"><pre>RuntimeWarning: divide by zero encountered</pre></div>',
     '<div class="cell_output"><pre>Device: CPU</pre></div>'),
    ("warnings_in_outputs", '<div class="output stderr"><pre>something on stderr</pre></div>',
     '<div class="output stream"><pre>something on stdout</pre></div>'),
    ("cut_short_cells", '<table><tr><td>{"builder": "cifar_resnet", "kwargs": {"depth"...</td></tr></table>',
     '<table><tr><td>{"builder": "cifar_resnet"}</td></tr></table>'),
    ("bad_panels", FIGURE.format(data='[{"x": [128], "y": [0.9]}, {"x": [128], "y": [0.8]}, {"x": [128], '
                                      '"y": [0.85]}, {"x": [128, 128], "y": [1, 2]}]', axis=""),
     FIGURE.format(data='[{"x": [64, 128], "y": [0.9, 0.8]}]', axis="")),
    ("bad_panels", FIGURE.format(data='[{"x": [128], "y": [0.9]}, {"x": [128], "y": [0.8]}]', axis=""),  # ch 9's case
     FIGURE.format(data='[{"x": [128], "y": [0.9]}, {"x": [64], "y": [0.8]}]', axis="")),
    ("bad_panels", FIGURE.format(data='[{"x": {"dtype": "f8", "bdata": "AAAAAAAAYEAAAAAAAABgQA=="}, "y": [1, 2]}]',
                                 axis=""),  # plotly's binary arrays: [128.0, 128.0]
     FIGURE.format(data='[{"x": {"dtype": "f8", "bdata": "AAAAAAAAUEAAAAAAAABgQA=="}, "y": [1, 2]}]', axis="")),
    ("bad_panels", FIGURE.format(data='[{"x": [1, 2], "y": [35, 20], "name": "relu_before_add"}, '
                                      '{"x": [1, 2], "y": [2.3, 2.2]}, {"x": [1, 2], "y": [2.3, 1.9]}]', axis=""),
     FIGURE.format(data='[{"x": [1, 2], "y": [35, 20]}, {"x": [1, 2], "y": [2.3, 2.2]}, {"x": [1, 2], "y": [2.3, '
                        '1.9]}]', axis=', "yaxis": {"type": "log"}')),
])
def test_each_class_is_caught_when_planted(check, planted, clean):
    assert getattr(h, check)(page(planted)), f"{check} missed a planted case"
    assert not getattr(h, check)(page(clean)), f"{check} flags a clean case"


def test_links_to_missing_files_and_anchors_are_caught(tmp_path):
    (tmp_path / "a.html").write_text(page('<h2 id="there">x</h2>'))
    p = tmp_path / "b.html"
    for href, bad in (("a.html", False), ("a.html#there", False), ("a.html#gone", True), ("a.ipynb", True),
                      ("https://example.org/x.ipynb", False), ("#here", True)):
        assert bool(h.broken_links(page(f'<a href="{href}">x</a>'), p)) == bad, href


def test_chapter_11_never_mixes_scales_in_one_claims_table():
    """Issue 19.5: every table of verdicts on the built chapter 11 holds claims of one scale (the table that sets
    the superseded scale's verdicts beside today's names both scales in its columns and has no verdict column)."""
    from bs4 import BeautifulSoup

    from idmap_lib.book import claims
    page = SITE / "11_reproductions.html"
    if not page.exists():
        pytest.skip("the book is not built")
    tables = 0
    for table in BeautifulSoup(page.read_text(), "html.parser").find_all("table"):
        heads = [th.get_text(" ", strip=True) for th in table.find_all("th")]
        if "verdict" not in heads:
            continue
        keys = {th.get_text("", strip=True).replace("\u200b", "") for th in table.find_all("th")} & set(claims.CLAIMS_BY_KEY)
        scales = {claims.CLAIMS_BY_KEY[k].scale for k in keys}
        assert len(scales) == 1, f"one claims table mixes scales {scales}: {sorted(keys)}"
        tables += 1
    assert tables >= 4  # the CPU scale, the full recipe on a CPU, and our own claims at each of their two scales


def test_the_exercise_pages_colab_buttons_open_the_student_editions():
    """Issue 21: the rocket of an exercise page opens its student edition (book/student/, no solutions), never the
    instructor's page it sits on; every other chapter's opens the chapter itself."""
    from bs4 import BeautifulSoup

    from idmap_lib.checks import editions
    if not (SITE / "index.html").is_file():
        pytest.skip("the book is not built")
    for name in pages():
        links = [a["href"] for a in BeautifulSoup((SITE / name).read_text(), "html.parser").find_all("a", href=True)
                 if a["href"].startswith("https://colab.research.google.com/")]
        page = Path(name).stem
        edition = editions.student_edition_paths().get(page)
        if edition:
            assert links and all(link.endswith(f"/book/{edition}") for link in links), (name, links)
            assert (Path(__file__).resolve().parents[1] / "book" / edition).is_file()
        elif (Path(__file__).resolve().parents[1] / "book" / f"{page}.ipynb").is_file():
            assert links and all(link.endswith(f"/book/{page}.ipynb") for link in links), (name, links)
