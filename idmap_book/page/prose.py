"""The chapters' prose helpers: ``say`` shows a sentence whose numbers the page computed, ``sci``
writes a number for inline math, ``live_widget`` shows a Python-driven widget only where a kernel
runs it."""

from __future__ import annotations

from .setup import in_book_build


def say(markdown: str) -> None:
    """Display prose that quotes computed numbers (written as an f-string in the chapter), so that
    the page never types a number it computes. The cells that call it are tagged
    ``remove-input``."""
    from IPython.display import Markdown, display

    display(Markdown(markdown))


def sci(value: float, digits: int = 2) -> str:
    """A number for inline math: 0.000123 -> '1.2 \\cdot 10^{-4}', 0.875 -> '0.88', 1 -> '1'."""
    import math

    if value == 0 or 1e-3 <= abs(value) < 1e4:
        return f"{value:.{digits}g}"
    exp = math.floor(math.log10(abs(value)))
    mant = value / 10 ** exp
    if round(mant, digits - 1) >= 10:
        mant, exp = mant / 10, exp + 1
    head = "" if f"{mant:.{digits - 1}f}" in ("1", "1.0") else f"{mant:.{digits - 1}f} \\cdot "
    return f"{head}10^{{{exp}}}"


SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def plain_number(value: float, digits: int = 3) -> str:
    """A number for plain text (a figure's title, legend or text alternative), as the book writes
    it everywhere (never 1.94e+03): 0.05, 693 and 1,940 in full; beyond 10^-3 to 10^5 as
    2.74×10⁴."""
    import math

    short = f"{value:.{digits}g}"
    if value == 0 or 1e-3 <= abs(value) < 1e5 and "e" not in short:
        return short
    if 1e-3 <= abs(value) < 1e5:  # 1,940, not 1.94e+03
        return f"{float(short):,.0f}"
    exp = math.floor(math.log10(abs(value)))
    mant = float(f"{value / 10 ** exp:.{digits}g}")
    if abs(mant) >= 10:
        mant, exp = mant / 10, exp + 1
    return f"{mant:g}×10{str(exp).translate(SUPERSCRIPT)}"


LIVE_ONLY_NOTE = (
    "*Live version: in Jupyter or on Colab (the rocket button at the top of the page) this cell "
    "shows sliders that recompute the figure in Python. A static page has no Python running, so "
    "here it shows nothing; the figure above with its own slider works in the page.*"
)


def live_widget(make):
    """Show an ipywidgets figure only where a kernel runs it (Jupyter, Colab).

    ``make()`` builds and returns the widget. Sliders whose figure is computed in Python
    (``interactive_output``) would look live in the static site but stay frozen at their build-time
    value, so during the book build ``make`` is not called and a note (:data:`LIVE_ONLY_NOTE`) says
    where the live version runs. Returns the widget, or None in the build.
    """
    if in_book_build():
        from IPython.display import Markdown, display

        display(Markdown(LIVE_ONLY_NOTE))
        return None
    return make()
