"""Sphinx extension of the idmap book: serve every script from the site itself (offline and online).

- plotly.js: the installed plotly package's own ``plotly.min.js`` is copied into ``_static/vendor/``
  and loaded once, only on pages that contain a plotly figure, in the page or in the saved state of
  its widgets (an ``interact`` output). The chapters' figures are emitted by ``idmap_book``'s
  renderer as plain divs that call it. It is loaded before require.js, so that
  its UMD wrapper sets ``window.Plotly`` instead of registering an anonymous AMD module.
- MathJax 3, require.js and the ipywidgets html-manager come from ``.vendor/site`` (``make vendor``),
  copied through ``html_static_path`` (see ``_config.yml``); pages with widgets also get
  ``idmap_widgets_shim.js`` (MathJax 2 API and module path for html-manager, see the file).
- ``idmap_keys.js`` on pages with plotly figures: each slider stepped from the keyboard (a focusable line under
  its figure, role "slider").
- ``idmap_phone.js`` on pages with plotly figures: on a screen under 600 px, each figure laid out again for a
  phone once drawn (panels stacked, title and notes wrapped, fewer ticks); the desktop layout is untouched.
- ``idmap_site.css`` on every page: room for wide content (a wider article; code and outputs wrap;
  wide tables and equations scroll inside their own block), padded tables.
- MathJax is loaded on every page (not only those with equations of their own): chapter titles
  with math appear in every page's navigation.
- The theme accessible by the names it shows (WCAG 2.5.3 Label in Name; axe's
  ``label-content-name-mismatch``): ``templates/`` overrides the theme's search field (named "Search
  Ctrl+K", as it reads) and colour-mode button (its icons decorative), and a cell's fold is named by
  its summary ("Show code cell source"), not myst-nb's "Toggle hidden content". One search box: the
  primary sidebar's (and on a phone the article header's icon); the theme's header copy is not
  written (``navbar_persistent``), so screen readers do not meet it either.
- The exercise pages' Colab button opens the student edition (``book/student/``: solutions hidden, checks
  and submission intact, see ``idmap_class.editions.publish``), not the instructor's page it sits on.
"""

from __future__ import annotations

import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VENDOR = ROOT / ".vendor" / "site" / "vendor"
NEEDED = ["mathjax/tex-svg.js", "requirejs/require.js", "html-manager/dist/embed-amd.js"]
SHIM = "idmap_widgets_shim.js"
PHONE = "idmap_phone.js"  # plotly figures laid out again on a phone (< 600 px), after they are drawn
TEMPLATES = HERE / "templates"  # the theme's search field and colour-mode button, named as read
KEYS = "idmap_keys.js"  # every plotly slider stepped from the keyboard (WCAG 2.1.1)
CSS = "idmap_site.css"  # the book's layout rules (room for wide content), on every page
PLOTLY_JS = "vendor/plotly/plotly.min.js"


def _check_vendor(app, config):
    missing = [p for p in NEEDED if not (VENDOR / p).is_file()]
    if missing:
        raise RuntimeError(
            f"vendored JavaScript missing under {VENDOR}: {', '.join(missing)}. "
            "Run `make vendor` (or `make book`, which does it) to fetch MathJax, require.js and "
            "the ipywidgets html-manager with npm."
        )


def _widget_state(app, pagename):
    """The page's saved ipywidgets state (JSON text), as myst-nb stored it; "" if none."""
    from myst_nb.sphinx_ import NbMetadataCollector

    files = NbMetadataCollector.get_js_files(app.env, pagename)
    _, attributes = files.get("ipywidgets_state", (None, {}))
    return attributes.get("body", "") if attributes else ""


def _page_scripts(app, pagename, templatename, context, doctree):
    body = context.get("body", "")
    if "plotly-graph-div" in body or "plotly-graph-div" in _widget_state(app, pagename):
        # before require.js (priority 500) and before the figures' inline scripts in <body>
        app.add_js_file(PLOTLY_JS, priority=200)
        app.add_js_file(f"vendor/{PHONE}", priority=201)
        app.add_js_file(f"vendor/{KEYS}", priority=202)
    if "application/vnd.jupyter.widget-view+json" in body:
        app.add_js_file(f"vendor/{SHIM}", priority=100)


def _student_edition_button(app, pagename, templatename, context, doctree):
    """After the theme's launch buttons (priority 501): on an exercise page, Colab opens the student edition."""
    from idmap_class.editions import student_edition_paths

    edition = student_edition_paths().get(pagename)
    for group in context.get("header_buttons", []) if edition else []:
        for button in group.get("buttons", []):
            if button.get("text") == "Colab":
                button.update(url=button["url"].replace(f"{pagename}.ipynb", edition), text="Colab: student edition",
                              tooltip="Open the student edition in Colab (no solutions; graded checks and submission)")


def _copy_assets(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    import plotly

    source = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not source.is_file():
        raise RuntimeError(f"plotly.min.js not found in the installed plotly package ({source})")
    target = Path(app.outdir) / "_static" / PLOTLY_JS
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    shutil.copyfile(HERE / SHIM, Path(app.outdir) / "_static" / "vendor" / SHIM)
    for js in (PHONE, KEYS):
        shutil.copyfile(HERE / js, Path(app.outdir) / "_static" / "vendor" / js)
    shutil.copyfile(HERE / CSS, Path(app.outdir) / "_static" / CSS)


def footer() -> str:
    """The site's footer: the library's version (idmap_lib.__version__, its one definition) and how to cite the book
    (CITATION.cff at the repository's root)."""
    import idmap_lib

    return (f"<p>idmap {idmap_lib.__version__} · to cite this book and the two papers it reproduces, see "
            f"<code>CITATION.cff</code> in its repository</p>")


def _theme(app, config):
    """The footer, one search box (the sidebar's: none in the header) and the templates above the
    theme's."""
    config.html_theme_options = {**(config.html_theme_options or {}), "extra_footer": footer(),
                                 "navbar_persistent": []}
    config.templates_path = [str(TEMPLATES), *config.templates_path]


MYST_SUMMARY = '<summary aria-label="Toggle hidden content">\n'


def _named_fold_summary(app):
    """myst-nb's fold of a cell's input, its summary named by the words it shows."""
    from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput, visit_HideCellInput

    def visit(self, node):
        visit_HideCellInput(self, node)
        k = len(self.body) - 1 - self.body[::-1].index(MYST_SUMMARY)  # ValueError: myst-nb changed
        self.body[k] = "<summary>\n"

    app.add_node(HideCodeCellNode, override=True, html=(visit, depart_HideCellInput))


def setup(app):
    # MathJax on every page: chapter titles with math appear in every page's navigation
    app.set_html_assets_policy("always")
    app.add_css_file(CSS)
    app.connect("config-inited", _check_vendor)
    app.connect("config-inited", _theme)
    app.connect("builder-inited", _named_fold_summary)
    app.connect("html-page-context", _page_scripts)
    app.connect("html-page-context", _student_edition_button, priority=502)
    app.connect("build-finished", _copy_assets)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
