"""One colour per unit, for every figure of the book: Okabe and Ito's palette (2008), chosen so that the common
colour-vision deficiencies still tell each pair apart. A unit keeps its colour on every page; a swapped unit
(recipes.SWAPS) is drawn in its parent's colour with its own marker."""
from __future__ import annotations

OKABE_ITO = {"orange": "#E69F00", "sky blue": "#56B4E9", "bluish green": "#009E73", "yellow": "#F0E442",
             "blue": "#0072B2", "vermillion": "#D55E00", "reddish purple": "#CC79A7", "black": "#000000"}
UNIT_COLOURS = {"original": OKABE_ITO["vermillion"], "bn_after_add": OKABE_ITO["reddish purple"],
                "relu_before_add": OKABE_ITO["orange"], "relu_preact": OKABE_ITO["sky blue"],
                "full_preact": OKABE_ITO["blue"]}
SWAP_SYMBOLS = {None: "circle", "final_bn_relu": "diamond", "no_final": "square", "zero_gamma": "triangle-up"}


def unit_of(variant: str) -> tuple[str, str | None]:
    """(unit, swap) of a variant named ``unit[+swap]-depth`` (recipes' a_swaps and Table 2's names)."""
    name = variant.rsplit("-", 1)[0]
    unit, _, swap = name.partition("+")
    return unit, swap or None


def colour(variant: str) -> str:
    """The colour of the unit a variant trains (its parent's, for a swap)."""
    return UNIT_COLOURS[unit_of(variant)[0]]


def symbol(variant: str) -> str:
    return SWAP_SYMBOLS[unit_of(variant)[1]]


def of(experiment: str, variant: str) -> str | None:
    """The colour of a variant whose series is a unit of Fig 4 (Tables 2 and 3, the interventions), wherever it is
    drawn; None for the other variants (shortcuts, gates: the figure's own colours)."""
    from ...engine import recipes

    kw = recipes.config(experiment, variant, "cpu")["model"]["kwargs"]
    if experiment not in ("a_table2_activations", "a_table3_preact", "a_swaps") or kw.get("unit") not in UNIT_COLOURS:
        return None
    return UNIT_COLOURS[kw["unit"]]
