"""What a reader of the built site must never meet, as checks over one page's HTML (issue 21). Each
check returns a list of findings (empty: clean); tests/test_site_hygiene.py runs them over every
built page and plants each class once to see it caught.

Classes: a link to a file or anchor the site does not have; raw Markdown table text; raw TeX outside
math; a build machine's paths; warnings or stderr in outputs; values cut short in tables ("...",
JSON cut off); a figure panel whose axis spans one point, or whose y-range is set by one trace's
outlier; an axis with more tick labels than a reader can tell apart, as drawn or at any step of a
slider (issue 30.6); a time in prose that the table under it does not bear out; test or training
errors as fractions where the book writes % (issue 30.7); a figure's text under 12 px (a <sup>
subtitle counted at the 70 % plotly draws it), a legend beside the plot, hardware or a date in a
figure's title (issue 30.5).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

from bs4 import BeautifulSoup

MACHINE_PATHS = re.compile(r"(/work/|/tmp/|/root/|/home/\w+/|site-packages|/content/(?!drive))")
TABLE_TEXT = re.compile(r"\|\s*[-—:]{2,}\s*\||^\s*\|.+\|\s*$", re.M)
RAW_TEX = (re.compile(r"\$[^$\n]*\\[a-zA-Z]+[^$\n]*\$|\$\{[^$\n]*\}\^|\\(?:mathbf|mathcal|approx|lambda|sigma)\b"))
WARNING_TEXT = re.compile(r"\b\w*Warning: |Traceback \(most recent call last\)")
CUT_SHORT = re.compile(r"\.\.\.\s*$|…\s*$|\.\.\.\"?}?$|\{\"[^}]*\.\.\.")
SKIP = ("script", "style", "pre", "code", "mjx-container", "svg", "textarea")


def _soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def _article(soup):
    return soup.select_one("article.bd-article") or soup


def _text_nodes(node):
    """Text a reader sees, outside code, math and scripts."""
    for s in node.find_all(string=True):
        if any(p.name in SKIP or "math" in (p.get("class") or []) for p in s.parents):
            continue
        yield str(s)


def broken_links(html: str, page: Path) -> list[str]:
    """Relative links whose file, or whose #anchor in that file, does not exist in the built
    site."""
    soup, out = _soup(html), []
    ids_cache = {}

    def ids(path):
        if path not in ids_cache:
            ids_cache[path] = {e["id"]
                               for e in _soup(path.read_text(encoding="utf-8")).find_all(id=True)}
        return ids_cache[path]

    for a in _article(soup).find_all("a", href=True):
        u = urlparse(a["href"])
        if u.scheme or a["href"].startswith("//"):
            continue
        target = page if not u.path else (page.parent / unquote(u.path)).resolve()
        if not target.exists():
            out.append(f"link to a missing file: {a['href']}")
        elif u.fragment and target.suffix == ".html" and unquote(u.fragment) not in ids(target):
            out.append(f"link to a missing anchor: {a['href']}")
    return out


def raw_markdown_tables(html: str) -> list[str]:
    return [f"raw Markdown table text: {t.strip()[:80]!r}"
            for t in _text_nodes(_article(_soup(html)))
            if TABLE_TEXT.search(t) and t.count("|") >= 4]


def raw_tex(html: str) -> list[str]:
    return [f"raw TeX outside math: {t.strip()[:80]!r}" for t in _text_nodes(_article(_soup(html)))
            if RAW_TEX.search(t)]


def machine_paths(html: str) -> list[str]:
    soup = _article(_soup(html))
    texts = [s for s in soup.find_all(string=True) if s.parent.name not in ("script", "style")]
    return [f"a build machine's path: {t.strip()[:100]!r}" for t in texts
            if MACHINE_PATHS.search(t)]


# the library's log lines, and the device box
BUILD_LOG = re.compile(r"once into the cache|^\s*Device: ", re.M)


def build_logs(html: str) -> list[str]:
    """A library's log line in a page's outputs (a dataset decoded into the cache, a device box):
    the build's, not the reader's."""
    soup = _article(_soup(html))
    return sorted({f"a build log in an output: {t.strip()[:100]!r}"
                   for div in soup.select("div.cell_output")
                   for t in div.find_all(string=True) if BUILD_LOG.search(t)})


def warnings_in_outputs(html: str) -> list[str]:
    soup, out = _article(_soup(html)), []
    for div in soup.select("div.output.stderr, div.stderr"):
        out.append(f"stderr in an output: {div.get_text().strip()[:100]!r}")
    for div in soup.select("div.cell_output, div.output"):
        for t in div.find_all(string=True):
            if WARNING_TEXT.search(t):
                out.append(f"a warning in an output: {t.strip()[:100]!r}")
    return sorted(set(out))


def cut_short_cells(html: str) -> list[str]:
    """Table cells whose value was cut (pandas' '...', an ellipsis, a JSON value cut off)."""
    return [f"a value cut short in a table: {td.get_text().strip()[:80]!r}"
            for td in _article(_soup(html)).find_all(["td", "th"])
            if CUT_SHORT.search(td.get_text().strip())]


def figures(html: str) -> list[tuple[list, dict]]:
    """(data, layout) of every plotly figure in the page (its Plotly.newPlot call)."""
    out, dec = [], json.JSONDecoder()
    for m in re.finditer(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*", html):
        try:
            data, end = dec.raw_decode(html, m.end())
            rest = html[end:].lstrip()[1:].lstrip()
            layout, _ = dec.raw_decode(rest)
        except ValueError:
            continue
        out.append((data, layout))
    return out


def _numbers(values):
    """The numbers of a trace's x or y: a plain list, or plotly's binary encoding ({"dtype",
    "bdata"[, "shape"]})."""
    if isinstance(values, dict) and "bdata" in values:
        import base64

        import numpy as np

        return np.frombuffer(base64.b64decode(values["bdata"]),
                             dtype=values["dtype"]).ravel().tolist()
    return [v for v in values or [] if isinstance(v, (int, float)) and not isinstance(v, bool)]


def bad_panels(html: str) -> list[str]:
    """Panels whose x-axis spans one point (a curve drawn as a dot), or whose linear y-range is set
    by one trace: its maximum more than 5 times the largest of every other trace's."""
    out = []
    for data, layout in figures(html):
        title = ((layout.get("title") or {}).get("text") or "a figure").split("<br>")[0]
        panels = {}
        for t in data:
            if t.get("type", "scatter") not in ("scatter",
                                                "scattergl") or t.get("fill") == "toself":
                continue
            panels.setdefault((t.get("xaxis", "x"), t.get("yaxis", "y")), []).append(t)
        for (xa, ya), traces in panels.items():
            xs = [x for t in traces for x in _numbers(t.get("x"))]
            # (also when each trace is one point: a dot per curve)
            if len(xs) >= 2 and min(xs) == max(xs):
                out.append(f"{title}: a panel whose x-axis spans one point ({xs[0]})")
            axis = layout.get("yaxis" + ya[1:], {})
            if axis.get("type") == "log" or len(traces) < 3:
                continue
            tops = sorted((max(_numbers(t.get("y")) or [0]), t.get("name") or "") for t in traces)
            rest = max(abs(v) for v, _ in tops[:-1]) if tops[:-1] else 0
            if rest > 0 and tops[-1][0] > 5 * rest:
                out.append(f"{title}: y-range set by one trace ({tops[-1][1]}: {tops[-1][0]:.3g} "
                           f"vs {rest:.3g})")
    return out


# tick labels on one axis, at most: more pile into a smear (chapter 3's slider had ~140 at λ = 0.9)
MOST_TICKS = 12


def _relayout(update: dict, axis: str, key: str, default):
    """An axis property as a slider step's layout update sets it ("yaxis.range", or {"yaxis":
    {"range": ...}}), else `default`."""
    if f"{axis}.{key}" in update:
        return update[f"{axis}.{key}"]
    return (update.get(axis) or {}).get(key, default)


def _states(data, layout):
    """(what, visible flag of every trace, layout update) of a figure as drawn and at each step of
    its sliders."""
    drawn = [t.get("visible", True) for t in data]
    out = [("as drawn", drawn, {})]
    for slider in layout.get("sliders") or []:
        for step in slider.get("steps") or []:
            args = list(step.get("args") or []) + [{}, {}]
            vis = (args[0] or {}).get("visible", drawn)
            vis = vis if isinstance(vis, list) else [vis] * len(data)
            out.append((f"slider step {step.get('label')!r}", vis + drawn[len(vis):],
                        args[1] or {}))
    return out


def tick_counts(data, layout):
    """[(axis, what, how many tick labels it shows)] for every axis with tick values of its own, as
    drawn and at every slider step: its tick values within its range (the step's, else the figure's,
    else the span of the traces that step draws on it; log10 units on a log axis). Axes left to
    plotly's automatic ticks are not counted."""
    import math

    out = []
    for name, ax in layout.items():
        m = re.fullmatch(r"([xy])axis(\d*)", name)
        if not m or not isinstance(ax, dict):
            continue
        ref, log = m.group(1) + m.group(2), ax.get("type") == "log"
        for what, vis, update in _states(data, layout):
            ticks = _relayout(update, name, "tickvals", ax.get("tickvals"))
            if ticks is None:
                continue
            ticks = [math.log10(v) if log else v for v in _numbers(ticks) if v > 0 or not log]
            rng = _relayout(update, name, "range", ax.get("range"))
            if not rng:
                vals = [v for t, shown in zip(data, vis) if shown is True
                        and t.get(f"{m.group(1)}axis", m.group(1)) == ref
                        for v in _numbers(t.get(m.group(1))) if v > 0 or not log]
                vals = [math.log10(v) if log else v for v in vals]
                rng = [min(vals), max(vals)] if vals else None
            n = len(ticks) if rng is None else sum(min(rng) <= v <= max(rng) for v in ticks)
            out.append((name, what, n))
    return out


def crowded_axes(html: str, most: int = MOST_TICKS) -> list[str]:
    """Axes of a plotly figure that show more than `most` tick labels, as drawn or at any step of
    its sliders."""
    out = []
    for data, layout in figures(html):
        title = ((layout.get("title") or {}).get("text") or "a figure").split("<br>")[0]
        out += [f"{title}: {axis} shows {n} tick labels ({what}; at most {most} can be read)"
                for axis, what, n in tick_counts(data, layout) if n > most]
    return out


CPU_TIME = re.compile(r"(\d+(?:\.\d+)?)\s*min\b")
# "timed alone at 2 threads (..., 2026-12-02)"
SAYS_HOW = re.compile(r"\b(?:alone|idle)\b.*\d{4}-\d{2}-\d{2}")


def _cpu_minutes(text: str):
    """(minutes, the words after them) of every CPU time in `text`: "0.7 min on a 2-core CPU", "2.7
    min ... at 1 thread" (a T4's or an H200's time is not one)."""
    for m in CPU_TIME.finditer(text):
        # its clause
        after = re.split(r";|\.\s|\)|\d+(?:\.\d+)?\s*min\b", text[m.end():m.end() + 120])[0]
        if re.search(r"\bCPU\b|\bthreads?\b",
                     after) and not re.search(r"\b(?:T4|H200|GPU)\b", after):
            yield float(m.group(1)), after


def times_the_table_denies(html: str) -> list[str]:
    """A CPU time in prose ("0.7 min on a 2-core CPU") above a table of runs with a "seconds"
    column, in the same section, that those runs do not bear out: neither their longest nor their
    summed time within 15 % (or 6 s, the rounding of 0.1 min). A time that says it is a separate
    timing, alone or on an idle machine, with its date, is not the table's to deny."""
    out, said = [], []
    for el in _article(_soup(html)).find_all(["h1", "h2", "p", "li", "table"]):
        if el.name in ("h1", "h2"):
            said = []
        elif el.name == "table":
            rows = el.find_all("tr")
            heads = ([c.get_text(" ", strip=True) for c in rows[0].find_all(["th", "td"])] if rows
                     else [])
            if "seconds" not in heads:
                continue
            secs = []
            for tr in rows[1:]:
                cells = tr.find_all(["td", "th"])
                if len(cells) == len(heads):
                    try:
                        secs.append(float(cells[heads.index("seconds")].get_text(strip=True)))
                    except ValueError:  # "-": not run
                        pass
            for minutes, after in said if secs else []:
                if SAYS_HOW.search(after):
                    continue
                if not any(abs(minutes * 60 - ref) <= max(0.15 * ref, 6)
                           for ref in (max(secs), sum(secs))):
                    out.append(f"prose says {minutes:g} min{after[:40]!r}, but the table under it "
                               f"holds runs of {', '.join(f'{v:.0f}' for v in secs)} s")
        elif not el.find_parent("table"):
            said += list(_cpu_minutes(el.get_text(" ", strip=True)))
    return out


LEAST_FONT = 12  # px: issue 30.5


def _font_sizes(node, where=""):
    """(where, size) of every font size set in a plotly layout (its fonts, tick fonts, legend,
    slider, annotations)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "size" and "font" in where.rsplit(".", 1)[-1] and isinstance(v, (int, float)):
                yield where, v
            else:
                yield from _font_sizes(v, f"{where}.{k}" if where else k)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _font_sizes(v, f"{where}[{i}]")


SMALLER = re.compile(r"<su[pb]>", re.I)  # plotly draws <sup> and <sub> text at 70 % of its font
SMALL_SHARE = 0.7


def _size(font, default):
    return (font or {}).get("size") or default


def _drawn_small(layout):
    """(where, px) of every title, axis title and annotation whose text holds <sup> or <sub>: 70 %
    of the size plotly draws it at (its own font, else plotly's default: a title 1.4 times the
    figure's font, an axis title 1.2 times, an annotation the figure's font; the figure's font its
    own, its template's, else 12)."""
    base = _size(layout.get("font"),
                 _size(((layout.get("template") or {}).get("layout") or {}).get("font"), 12))
    texts = [("title", layout.get("title") or {}, round(1.4 * base))]
    texts += [(f"annotations[{i}]", a, base) for i, a in enumerate(layout.get("annotations") or [])]
    texts += [(f"{k}.title", v.get("title") or {}, round(1.2 * base)) for k, v in layout.items()
              if re.fullmatch(r"[xy]axis\d*", k) and isinstance(v, dict)]
    for where, node, default in texts:
        if isinstance(node, dict) and SMALLER.search(str(node.get("text") or "")):
            yield f"{where}'s <sup>/<sub> text", SMALL_SHARE * _size(node.get("font"), default)


def small_fonts(html: str, least: int = LEAST_FONT) -> list[str]:
    """Text in a plotly figure set smaller than `least` px (its layout's fonts; plotly's default is
    12), or drawn smaller: a subtitle in <sup> under a title of plotly's default size is 11.9 px."""
    out = []
    for data, layout in figures(html):
        title = ((layout.get("title") or {}).get("text") or "a figure").split("<br>")[0]
        sizes = [(w, s) for w, s in _font_sizes(layout)
                 if "template" not in w] + list(_drawn_small(layout))
        out += [f"{title}: {where} is {size:.3g} px (at least {least})" for where, size in sizes
                if size < least]
    return out


HARDWARE = re.compile(r"\b(?:cuda|GPU|H200|T4|A100|EPYC|Xeon|b?float16|torch \d|\d+ cores?|\d+ "
                      r"threads?)\b"
                      # "CPU scale" names a scale, not a machine
                      r"|\bCPU\b(?!(?:\s|<br>)+scale)|\b\d{4}-\d{2}-\d{2}\b", re.I)


def hardware_in_titles(html: str) -> list[str]:
    """Figures whose title (with its subtitle) names the hardware or the date a run was made: that
    belongs in a caption line under the plot (issue 30.5), the title says what the figure shows."""
    out = []
    for data, layout in figures(html):
        text = (layout.get("title") or {}).get("text") or ""
        if m := HARDWARE.search(text):
            out.append(f"{text.split('<br>')[0]}: its title names {m.group(0)!r} (put it in a "
                       f"caption line)")
    return out


def legends_beside(html: str) -> list[str]:
    """Figures whose legend stands beside the plot, right of it (plotly's default): on a phone it
    squeezes the plot or is cut off (chapter 4's, issue 30.5). A legend above, below or inside the
    plot is fine."""
    out = []
    for data, layout in figures(html):
        shown = [t for t in data if t.get("showlegend", True) and t.get("name")]
        legend = layout.get("legend") or {}
        if layout.get("showlegend") is False or len(shown) < 2 or legend.get("orientation") == "h":
            continue
        if legend.get("x", 1.02) > 1:
            title = ((layout.get("title") or {}).get("text") or "a figure").split("<br>")[0]
            out.append(f"{title}: its legend stands right of the plot (x = "
                       f"{legend.get('x', 1.02)})")
    return out


ERROR_HEAD = re.compile(r"\b(?:test|train(?:ing)?)\b[^|]*\berr(?:or)?\b", re.I)


def errors_as_fractions(html: str) -> list[str]:
    """A table column of test or training errors written as fractions (0.590) where the book writes
    % everywhere else (issue 30.7): its header names no % and every number in it lies in [0, 1]."""
    out = []
    for table in _article(_soup(html)).find_all("table"):
        rows = table.find_all("tr")
        heads = ([c.get_text(" ", strip=True) for c in rows[0].find_all(["th", "td"])] if rows
                 else [])
        for i, head in enumerate(heads):
            if not ERROR_HEAD.search(head) or "%" in head:
                continue
            cells = [r.find_all(["td", "th"]) for r in rows[1:]]
            texts = [c[i].get_text(strip=True) for c in cells if len(c) == len(heads)]
            nums = [float(t) for t in texts if re.fullmatch(r"-?\d*\.\d+|\d+", t)]
            if nums and all(0 <= v <= 1 for v in nums) and not any("%" in t for t in texts):
                out.append(f"an error column in fractions, not %: {head!r} ({texts[0]}, ...)")
    return out


def figures_without_text(html: str) -> list[str]:
    """A figure with no text alternative (WCAG 2.1 1.1.1): a plotly figure's div names what it
    shows (aria-label), an image's alt says what it draws, never its file name."""
    soup = _soup(html)
    out = [f"a figure with no text alternative: {d.get('id')}"
           for d in soup.select("div.plotly-graph-div")
           if len((d.get("aria-label") or "").split()) < 3]
    return out + [f"an image whose text alternative is no words: {img.get('src')}"
                  for img in _article(soup).find_all("img")
                  if not (img.get("alt") or "").strip() or "_images/" in img.get("alt")]


def _variant_key_pattern():
    """Every variant key that is no English word (original-110, c10-1001-original, gresnet-d10,
    full_preact+no_final-1001@fp32, conv1x1), as one pattern."""
    from idmap_lib.engine import recipes

    keys = sorted({v for e in recipes.EXPERIMENTS.values() for v in e["variants"]
                   if re.search(r"[_\-+\d]", v)}, key=len, reverse=True)
    return re.compile(r"(?<![\w+@/.-])(" + "|".join(map(re.escape, keys)) + r")(?:@fp32)?(?![\w+-])")


VARIANT_KEY = _variant_key_pattern()


def keys_in(text: str) -> list[str]:
    """The variant keys in a text a reader sees (the book names variants in words), but in a
    command to type (``python -m idmap_lib train --variant original-110``)."""
    text = re.sub(r"python -m idmap_lib[^|;\n]*|--variants? \S+", "", text or "")
    return [m.group(0) for m in VARIANT_KEY.finditer(text)]


def variant_keys(html: str) -> list[str]:
    """A variant's key where a reader sees it: a sentence, a table's cell or heading (text outside
    code: a name to type is shown as code), a figure's title, legend, annotations or text
    alternative."""
    soup = _soup(html)
    said = [t for t in _text_nodes(_article(soup)) if keys_in(t)]
    said += [d.get("aria-label") for d in soup.select("div.plotly-graph-div")
             if keys_in(d.get("aria-label"))]
    for data, layout in figures(html):
        title = layout.get("title")
        texts = [title.get("text") if isinstance(title, dict) else title]
        texts += [a.get("text") for a in layout.get("annotations", [])]
        texts += [t.get("name") for t in data if t.get("showlegend", True) is not False]
        said += [t for t in texts if isinstance(t, str) and keys_in(t)]
    return [f"a variant's key in visible text: {k!r} in {t.strip()[:80]!r}"
            for t in said for k in keys_in(t)[:1]]


def _hue(c) -> str | None:
    """A trace colour that is no grey (a unit's, a net's), upper-case; None for greys and for the
    pale tints of bands behind the data (every channel above 200: no unit's colour)."""
    m = re.fullmatch(r"#(..)(..)(..)", c) or re.match(r"rgba?\((\d+), ?(\d+), ?(\d+)", c)
    if c in ("grey", "gray", "black", "white") or not m:
        return None
    rgb = [int(x, 16) if c.startswith("#") else int(x) for x in m.groups()]
    return None if max(rgb) - min(rgb) < 8 or min(rgb) > 200 else c.upper()


def palette_breaks(html: str) -> list[str]:
    """A page's figures outside the one palette (book/page/palette.py): a trace in a colour but
    not keyed by what it draws (its ``meta.palette``), one key in two colours, two keys of a figure
    in one colour."""
    out, seen = [], {}
    for n, (data, _) in enumerate(figures(html)):
        in_fig = {}
        for t in data:
            c = [(t.get("line") or {}).get("color"), (t.get("marker") or {}).get("color"),
                 t.get("fillcolor")]
            hues = {_hue(x) for v in c for x in (v if isinstance(v, list) else [v])
                    if isinstance(x, str)} - {None}
            key = (t.get("meta") or {}).get("palette") if isinstance(t.get("meta"), dict) else None
            if hues and key is None:
                out.append(f"figure {n}: {t.get('name')!r} in {sorted(hues)}, not by the palette")
            for h in hues if key else ():
                seen.setdefault(key, set()).add(h)
                in_fig.setdefault(h, set()).add(key)
        out += [f"figure {n}: {sorted(k)} share {h}" for h, k in in_fig.items() if len(k) > 1]
    return out + [f"{k} drawn in {sorted(h)}" for k, h in seen.items() if len(h) > 1]


E_NOTATION = re.compile(r"(?<![\w.])\d+(?:\.\d+)?e[+-]\d+\b")


def e_notation(html: str) -> list[str]:
    """A number in e-notation (1.94e+03) where a reader sees it -- text outside code, a figure's
    title, annotations, legend or text alternative: the book writes 1,940 and 2.74×10⁴."""
    soup = _soup(html)
    said = [t for t in _text_nodes(_article(soup)) if E_NOTATION.search(t)]
    said += [d.get("aria-label") for d in soup.select("div.plotly-graph-div")
             if E_NOTATION.search(d.get("aria-label") or "")]
    for data, layout in figures(html):
        title = layout.get("title")
        texts = [title.get("text") if isinstance(title, dict) else title]
        texts += [a.get("text") for a in layout.get("annotations", [])]
        texts += [t.get("name") for t in data]
        said += [t for t in texts if isinstance(t, str) and E_NOTATION.search(t)]
    return [f"e-notation: {E_NOTATION.search(t).group(0)!r} in {t.strip()[:80]!r}" for t in said]


def numbered_rows(html: str) -> list[str]:
    """A table whose rows are headed 0, 1, 2, ...: pandas' default index, which says nothing to a
    reader (hide it, or index the table by what its rows are)."""
    out = []
    for table in _article(_soup(html)).find_all("table"):
        heads = [th.get_text(strip=True) for th in table.find_all("th", class_="row_heading")]
        if len(heads) > 1 and heads == [str(i) for i in range(len(heads))]:
            cols = [th.get_text(strip=True) for th in table.find("tr").find_all("th")]
            out.append(f"a table's rows headed 0, 1, 2, ...: {[c for c in cols if c][:3]}")
    return out


def findings(page: Path) -> list[str]:
    html = page.read_text(encoding="utf-8")
    return (broken_links(html, page) + raw_markdown_tables(html) + raw_tex(html)
            + machine_paths(html)
            + warnings_in_outputs(html) + cut_short_cells(html) + bad_panels(html)
            + crowded_axes(html)
            + times_the_table_denies(html) + errors_as_fractions(html) + small_fonts(html)
            + legends_beside(html)
            + hardware_in_titles(html) + figures_without_text(html) + build_logs(html)
            + variant_keys(html) + e_notation(html) + palette_breaks(html)
            + numbered_rows(html))

