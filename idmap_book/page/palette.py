"""One colour per unit, for every figure of the book: Okabe and Ito's palette (2008), chosen so that
the common colour-vision deficiencies still tell each pair apart. A unit keeps its colour on every
page (Table 1's original, the identity shortcut, is Table 2's original unit); a swapped unit
(recipes.SWAPS) is drawn in its parent's colour with its own marker. Table 1's modified shortcuts
take a colour per kind that no unit has, dark enough for 3:1 on white (WCAG 2.1, 1.4.11), and a dash
per setting of that kind (``dash``)."""
from __future__ import annotations
from idmap_lib.engine import recipes
from idmap_lib.models.registry import UNIT_ROWS

OKABE_ITO = {"orange": "#E69F00", "sky blue": "#56B4E9", "bluish green": "#009E73",
             "yellow": "#F0E442",
             "blue": "#0072B2", "vermillion": "#D55E00", "reddish purple": "#CC79A7",
             "black": "#000000"}
UNIT_COLOURS = {unit: row.colour for unit, row in UNIT_ROWS.items()}  # its row's (models/registry)
SHORTCUT_COLOURS = {"constant_scaling": OKABE_ITO["bluish green"],
                    "exclusive_gating": OKABE_ITO["black"],
                    "shortcut_only_gating": "#882255", "conv1x1": "#6E6E6E", "dropout": "#8C510A"}
DASHES = ("solid", "dash", "dot")
SWAP_SYMBOLS = {None: "circle", "final_bn_relu": "diamond", "no_final": "square",
                "zero_gamma": "triangle-up", "zero_gamma_scaled_input": "triangle-down"}


def unit_of(variant: str) -> tuple[str, str | None]:
    """(unit, swap) of a variant named ``unit[+swap]-depth`` (recipes' a_swaps and Table 2's
    names)."""
    name = variant.rsplit("-", 1)[0]
    unit, _, swap = name.partition("+")
    return unit, swap or None


def colour(variant: str) -> str:
    """The colour of the unit a variant trains (its parent's, for a swap)."""
    return UNIT_COLOURS[unit_of(variant)[0]]


def symbol(variant: str) -> str:
    return SWAP_SYMBOLS[unit_of(variant)[1]]


def _kwargs(experiment: str, variant: str) -> dict:

    return recipes.config(experiment, variant, "cpu")["model"]["kwargs"]


def of(experiment: str, variant: str) -> str | None:
    """The colour of a variant wherever it is drawn: its unit's (Fig 4's units with the identity
    shortcut: Tables 1-3, the interventions), its shortcut kind's (Table 1's modified shortcuts);
    None for the others (gates, Paper B: the figure's own colours)."""
    kw = _kwargs(experiment, variant)
    # Paper B's nets: their own
    if not experiment.startswith("a_") or kw.get("unit") not in UNIT_COLOURS:
        return None
    shortcut = kw.get("shortcut", "identity")
    if shortcut == "identity":
        return UNIT_COLOURS[kw["unit"]]
    return SHORTCUT_COLOURS.get(shortcut) if experiment == "a_table1_shortcuts" else None


def dash(experiment: str, variant: str) -> str:
    """A Table 1 shortcut's dash: its place among its kind's settings (constant scaling 0-1 solid,
    0.5-1 dashed, 0.5-0.5 dotted), so that one colour's settings stay apart; solid for every other
    variant."""
    if experiment != "a_table1_shortcuts":
        return "solid"
    kind = _kwargs(experiment, variant).get("shortcut")
    same = [v for v in list(recipes.EXPERIMENTS[experiment]["variants"])
            if _kwargs(experiment, v).get("shortcut") == kind]
    return DASHES[same.index(variant) % len(DASHES)]
