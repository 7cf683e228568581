"""One colour per thing drawn, for every figure of the book: Okabe and Ito's palette (2008) and Paul
Tol's muted one (2021), chosen so that the common colour-vision deficiencies still tell each pair
of a family apart. A unit keeps its colour on every page (Table 1's original, the identity
shortcut, is Table 2's original unit); a swapped unit (recipes.SWAPS) is drawn in its parent's
colour with its own marker. Table 1's modified shortcuts take a colour per kind that no unit has,
dark enough for 3:1 on white (WCAG 2.1, 1.4.11), and a dash per setting of that kind (``dash``).

Every figure takes a trace's colour by its key (``style``), which also writes the key into the
trace's ``meta``: what a trace draws, whatever its name, so a test can check that one key has one
colour on every page and that no two keys of a figure share one."""
from __future__ import annotations
from idmap_lib.engine import recipes
from idmap_lib.models.registry import SHORTCUT_ROWS, UNIT_ROWS

OKABE_ITO = {"orange": "#E69F00", "sky blue": "#56B4E9", "bluish green": "#009E73",
             "yellow": "#F0E442",
             "blue": "#0072B2", "vermillion": "#D55E00", "reddish purple": "#CC79A7",
             "black": "#000000"}
TOL = {"indigo": "#332288", "green": "#117733", "olive": "#999933", "rose": "#CC6677",
       "wine": "#882255", "purple": "#AA4499"}
UNIT_COLOURS = {unit: row.colour for unit, row in UNIT_ROWS.items()}  # its row's (models/registry)
# Table 1's modified shortcuts: their rows' (the identity is the original unit's)
SHORTCUT_COLOURS = {name: row.colour for name, row in SHORTCUT_ROWS.items() if row.colour}
# Paper B's nets (MNIST and CIFAR): the gated one, the ungated ResNet, the plain net
NET_COLOURS = {"gresnet": TOL["green"], "resnet": TOL["purple"], "plain": TOL["olive"],
               "gresnet_keras": TOL["rose"]}
# chapter 4: the original unit's nets at three depths
DEPTH_COLOURS = {"ResNet-110": TOL["indigo"], "ResNet-164": TOL["green"],
                 "ResNet-1001": TOL["wine"]}
# chapter 3: the λ-scaled stacks (λ = 1, the identity, in full pre-activation's blue)
LAMBDA_COLOURS = {f"λ = {lam:g}": c for lam, c in ((0.5, OKABE_ITO["reddish purple"]),
                                                     (0.9, OKABE_ITO["orange"]),
                                                     (1, OKABE_ITO["blue"]),
                                                     (1.1, OKABE_ITO["bluish green"]))}
# the theory chapters' measurements beside their formulas
SERIES_COLOURS = {"measured": OKABE_ITO["black"], "direct term": OKABE_ITO["bluish green"],
                  "Σw²": OKABE_ITO["vermillion"], "‖W‖_F": OKABE_ITO["blue"],
                  "Σ|w|": OKABE_ITO["orange"], "MLP block": TOL["purple"],
                  "Wide ResNet unit": TOL["green"]}
FAMILIES = {"unit": UNIT_COLOURS, "shortcut": SHORTCUT_COLOURS, "net": NET_COLOURS,
            "depth": DEPTH_COLOURS, "lambda": LAMBDA_COLOURS, "series": SERIES_COLOURS}
COLOURS = {k: c for family in FAMILIES.values() for k, c in family.items()}
assert len(COLOURS) == sum(map(len, FAMILIES.values())), "a key in two families"


def lam(value: float) -> str:
    """The key of the λ-scaled stack with this λ."""
    return f"λ = {value:g}"


def style(key: str, fill: bool = False, marker: dict | None = None, **line) -> dict:
    """A trace's colour by what it draws: ``go.Scatter(..., **style("original", dash="dot"))``:
    its line (with `line`'s other settings), its markers (with `marker`'s) and, `fill`, its fill
    in the key's colour, and the key in its ``meta``."""
    c = COLOURS[key]
    return {"meta": {"palette": key}, "line": {"color": c, **line},
            "marker": {"color": c, **(marker or {})},
            **({"fillcolor": c} if fill else {})}


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


def key(experiment: str, variant: str) -> str:
    """What a variant draws, as a palette key: its unit (Fig 4's units with the identity shortcut:
    Tables 1-3, the interventions), its shortcut kind (Table 1's modified shortcuts) or its net
    (Paper B's: the GResNet, the ResNet, the plain net)."""
    kw = _kwargs(experiment, variant)
    if experiment.startswith("b_"):
        if "kind" in kw:  # the MNIST grid's gresnet-d100, resnet-d10, ...
            return kw["kind"] if kw.get("defaults") != "keras" else "gresnet_keras"
        return "gresnet" if kw.get("gated") else "resnet"
    shortcut = kw.get("shortcut", "identity")
    return kw["unit"] if shortcut == "identity" else shortcut


def of(experiment: str, variant: str) -> str:
    """The colour of a variant wherever it is drawn (``key``)."""
    return COLOURS[key(experiment, variant)]


def dash(experiment: str, variant: str) -> str:
    """A Table 1 shortcut's dash: its place among its kind's settings (constant scaling 0-1 solid,
    0.5-1 dashed, 0.5-0.5 dotted), so that one colour's settings stay apart; solid for every other
    variant but a GResNet whose k decays (Paper B's "k decay": dashed beside the plain GResNet)."""
    if experiment != "a_table1_shortcuts":
        return "dash" if variant.endswith("k_decay") else "solid"
    kind = _kwargs(experiment, variant).get("shortcut")
    same = [v for v in list(recipes.EXPERIMENTS[experiment]["variants"])
            if _kwargs(experiment, v).get("shortcut") == kind]
    return DASHES[same.index(variant) % len(DASHES)]
