"""What pre-activation buys, and why (the chapter "Why pre-activation helps", issue 30.1): the candidate mechanisms,
each tied to the chapter and figure that show it and to the claims that test it, and each marked **supported**,
**contradicted** or **open** by the verdicts those claims get from the recorded runs (computed here, never typed).

A mechanism's evidence is a list of claims (or one part of a claim: the comparison against one variant), each with
what a *reproduced* verdict says of the mechanism: "supported", or "contradicted" where the claim is a test the
mechanism would fail (ReLU-only pre-activation has the clean path: if full pre-activation still beats it at the lr
jump, the clean path alone does not explain the tolerance). A contradicted claim says the opposite; any other
verdict (inconclusive, needs the full recipe, not run yet) leaves that piece open. A mechanism is contradicted if
any piece contradicts it, supported if every piece supports it, open otherwise (and open without evidence).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import figure_style, mechanisms
from .claims import CLAIMS_BY_KEY, evaluate

STATUSES = ("supported", "contradicted", "open")
OPPOSITE = {"supported": "contradicted", "contradicted": "supported"}


@dataclass(frozen=True)
class Evidence:
    claim: str                        # a key of claims.CLAIMS_BY_KEY or of mechanisms.MECHANISM_CLAIMS
    part: str | None = None           # only the comparison against this variant (Compare.b); None: the whole claim
    if_reproduced: str = "supported"  # what a reproduced verdict says of the mechanism
    why: str = ""                     # what this piece tests, in one sentence


@dataclass(frozen=True)
class Mechanism:
    key: str
    title: str
    words: str          # the mechanism, as the paper (or we) argue it
    where: str          # the chapter and figure that show it (Markdown link)
    evidence: tuple = ()
    scope: str = ""     # what the evidence cannot reach
    when: str = ""      # where its status holds, when the evidence covers only part of training


# The interventions' design (claims.SWAP_CLAIMS): every unit and swap as a row, each with the properties it has by
# construction. Each candidate mechanism is a hypothesis "property P is what lets a unit train through the lr jump
# (or start at 1001 layers)": it predicts that the rows with P do and the rows without P do not. Fixed with the swap
# claims, before any swap run was trained; a property is then *necessary* if no row without it has the outcome,
# *sufficient* if every row with it has the outcome, each judged only on rows whose outcome the runs decide.
PROPERTY_WORDS = {
    "clean_path": "a clean additive path (h and f identity, Eqns 4-5)",
    "bn_every_conv": "BN in front of every convolution (inputs normalised, Sec 4.2)",
    "normalised_classifier": "a normalised classifier input (a BN-ReLU before the pool)",
    "branch_zero_at_init": "branches switched off at initialisation (zero gamma)",
}
PROPERTIES = {  # row (a_swaps variant) -> the properties it has by construction
    "original-110": (),
    "bn_after_add-110": ("bn_every_conv", "normalised_classifier"),
    "relu_before_add-110": ("clean_path",),
    "relu_preact-110": ("clean_path",),
    "full_preact-110": ("clean_path", "bn_every_conv", "normalised_classifier"),
    "original+final_bn_relu-110": ("normalised_classifier",),
    "relu_preact+final_bn_relu-110": ("clean_path", "normalised_classifier"),
    "full_preact+no_final-110": ("clean_path", "bn_every_conv"),
    "original+zero_gamma-110": ("branch_zero_at_init",),
    "original-1001": (),
    "full_preact-1001": ("clean_path", "bn_every_conv", "normalised_classifier"),
    "original+final_bn_relu-1001": ("normalised_classifier",),
    "full_preact+no_final-1001": ("clean_path", "bn_every_conv"),
}
LR_JUMP = "lr_jump_preact_tolerates"
MECHANISMS = (
    Mechanism("clean_path", "The clean additive path alone",
              "With an identity shortcut and an identity after the addition, x_L = x_l + the sum of the residual "
              "functions (Eqn 4) and the gradient reaching any unit has a direct term of 1 (Eqn 5): nothing on the "
              "path multiplies the signal.",
              "[chapter 2](02_propagation.ipynb): the gradient at every unit, and its direct term, under the depth "
              "slider",
              (Evidence(LR_JUMP, "relu_preact-110", "contradicted",
                        "ReLU-only pre-activation has the clean path too: if full pre-activation trains through the "
                        "lr jump and it does not, the path alone does not explain the tolerance."),),
              "The path is necessary in Paper A's Table 1 (every shortcut that is not an identity does worse at "
              "the end of the recipe): a claim about final errors, which needs the full recipe."),
    Mechanism("truncation", "Less ReLU truncation as depth grows",
              "The original unit's ReLU after the addition truncates y_l = x_l + F(x_l); Paper A (Sec 4.2) argues "
              "this is more frequent at 1000 layers and hurts there, and removing it (f = identity) helps.",
              "[chapter 4](04_relu_truncation.ipynb): the fraction of y_l < 0 per unit, ResNet-110 against "
              "ResNet-1001",
              (Evidence("m_truncation_grows_with_depth", why="Does the original ResNet-1001 truncate more than "
                        "ResNet-110, in the first steps of training?"),),
              "Measured only in the first steps of training; Paper A's remark is about training after the weights "
              "have moved, which stays open.", when="in the first steps of training"),
    Mechanism("normalised_inputs", "Normalised inputs to every weight layer",
              "In full pre-activation every weight layer reads a BN-ReLU output (Paper A Sec 4.2: \"the inputs to "
              "all weight layers have been normalized\"); in the original unit and in ReLU-only pre-activation the "
              "first weight layer of each unit reads the un-normalised sum of every branch before it.",
              "[chapter 8](08_activations.ipynb): the std of every weight layer's input, per unit, and the units "
              "through the lr jump",
              (Evidence("m_normalised_weight_inputs", why="Is full pre-activation the only unit whose weight layers "
                        "all read inputs of one size?"),
               Evidence(LR_JUMP, why="Does the unit with that property, and only it, train through the lr jump?")),
              "A property shared with the outcome, not a test of cause: no run gives the other units normalised "
              "inputs and nothing else."),
    Mechanism("classifier_input", "A normalised signal into the classifier",
              "In full pre-activation the signal passes a final BN-ReLU before the pooling and the classifier; in "
              "the original unit the classifier reads the un-normalised sum of every unit.",
              "[chapter 8](08_activations.ipynb): the std of the classifier's input (in the measurement of what "
              "the weight layers see)", (),
              "Measured, but no claim was fixed before the numbers: open."),
)
MECHANISMS_BY_KEY = {m.key: m for m in MECHANISMS}

# what pre-activation buys: the claims about its effect (not its cause), in the order the chapter shows them
OUTCOMES = (LR_JUMP, "fig1_1001_original_slow_start", "t2_full_preact_best", "t3_preact_1layer_skip")


def claim_verdict(key: str, part: str | None = None, out_dir=None) -> str:
    """The verdict of a claim (or of its comparison against variant `part`) from the recorded runs: the book's
    claims (claims.evaluate) or the mechanism claims (mechanisms.evaluate)."""
    mech = {c["key"]: c for c in mechanisms.MECHANISM_CLAIMS}
    if key in mech:
        v = mechanisms.evaluate(mech[key])
    elif key in CLAIMS_BY_KEY:
        got = evaluate(CLAIMS_BY_KEY[key], out_dir=out_dir)
        v = {"verdict": got.verdict, "parts": got.parts}
    else:
        raise KeyError(f"unknown claim {key!r}: a key of claims.CLAIMS_BY_KEY or mechanisms.MECHANISM_CLAIMS")
    if part is None:
        return v["verdict"]
    found = [r["verdict"] for t, r in v["parts"] if t.b == part]
    if not found:
        raise KeyError(f"claim {key!r} has no comparison against {part!r}")
    return found[0]


def reading(evidence: Evidence, verdict: str) -> str:
    """What one piece of evidence says of its mechanism, given its claim's verdict."""
    if verdict == "reproduced":
        return evidence.if_reproduced
    if verdict == "contradicted":
        return OPPOSITE[evidence.if_reproduced]
    return "open"


def combine(readings: list[str]) -> str:
    """A mechanism's status from what each piece of its evidence says (the module's docstring)."""
    if "contradicted" in readings:
        return "contradicted"
    if readings and all(r == "supported" for r in readings):
        return "supported"
    return "open"


def assess(mechanism: Mechanism, out_dir=None) -> dict:
    """{"status", "pieces": [(Evidence, verdict, reading)]} of one mechanism."""
    pieces = []
    for e in mechanism.evidence:
        v = claim_verdict(e.claim, e.part, out_dir)
        pieces.append((e, v, reading(e, v)))
    return {"status": combine([p[2] for p in pieces]), "pieces": pieces}


def assess_all(out_dir=None) -> dict:
    return {m.key: assess(m, out_dir) for m in MECHANISMS}


def _claim_words(e: Evidence) -> str:
    return f"`{e.claim}`" + (f" (against {e.part})" if e.part else "")


def table(assessed=None):
    """The chapter's table: one row a mechanism, its status, where the book shows it and its evidence."""
    import pandas as pd

    assessed = assessed or assess_all()
    rows = []
    for m in MECHANISMS:
        a = assessed[m.key]
        ev = "; ".join(f"{e.why} {_claim_words(e)}: {v}, so {r}" for e, v, r in a["pieces"]) or "no claim"
        status = f"{a['status']} ({m.when})" if m.when and a["pieces"] else a["status"]
        rows.append({"mechanism": m.title, "status": status, "shown in": m.where, "evidence": ev,
                     "what it cannot reach": m.scope})
    return pd.DataFrame(rows)


def in_words(assessed=None) -> str:
    """One clause per status, naming the mechanisms that have it (for the chapter's opening answer)."""
    assessed = assessed or assess_all()
    verbs = {"supported": ("is supported", "are supported"), "contradicted": ("is contradicted", "are contradicted"),
             "open": ("stays open", "stay open")}
    out = []
    for s in STATUSES:
        named = [m.title[0].lower() + m.title[1:] + (f" ({m.when})" if m.when else "") for m in MECHANISMS
                 if assessed[m.key]["status"] == s]
        if named:
            joined = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
            out.append(f"{joined} {verbs[s][len(named) > 1]}")
    return "; ".join(out) + "."


UNITS = ("original-110", "relu_before_add-110", "relu_preact-110", "full_preact-110")
UNIT_WORDS = {"original-110": "the original unit", "relu_before_add-110": "ReLU before addition",
              "relu_preact-110": "ReLU-only pre-activation", "full_preact-110": "full pre-activation"}

SHORT = {"original-110": "original", "relu_before_add-110": "ReLU before add.", "relu_preact-110": "ReLU-only preact.",
         "full_preact-110": "full preact."}


def key_figure(out_dir=None):
    """The chapter's figure: for each ResNet-110 unit, how far its training loss rises at the lr jump (the outcome,
    every recorded seed of the lr-jump probe) beside how unequal the inputs of its weight layers are at
    initialisation (the mechanism: log10 of the largest over the smallest std, mechanisms' records). One dot a seed."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from . import mechanism_figures as mf
    from .claims import T2
    from .metrics import METRICS
    from .seeds import ALL_SEEDS
    from .runs import seed_runs

    scale = CLAIMS_BY_KEY[LR_JUMP].scale
    rises = {u: [METRICS["lr_jump_rise"](r) for r in seed_runs(T2, u, scale, ALL_SEEDS, out_dir)[0]]
             for u in UNITS}
    spread = mf.weight_input_summary()
    spreads = {u: [rec["steps"][0]["spread"] for rec in spread.get((u.split("-")[0], 110), {}).values()]
               for u in UNITS}
    names = [SHORT[u] for u in UNITS]
    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.2,  # stacked: readable at a phone's width too
                        subplot_titles=("loss rise at the lr jump", "weight-layer input spread"))
    for row, values, colour in ((1, rises, "#d62728"), (2, spreads, "#1f77b4")):
        for u, name in zip(UNITS, names):
            fig.add_trace(go.Scatter(x=values[u], y=[name] * len(values[u]), mode="markers", showlegend=False,
                                     marker={"size": 10, "color": colour, "opacity": 0.7},
                                     hovertemplate=f"{name}: %{{x:.3g}}<extra></extra>"), row=row, col=1)
        top = max([x for v in values.values() for x in v] or [1])
        fig.update_xaxes(range=[-0.04 * top, 1.06 * top], row=row, col=1)
    fig.update_yaxes(categoryorder="array", categoryarray=names[::-1], tickfont=figure_style.FONT)
    fig.update_xaxes(tickfont=figure_style.FONT)
    fig.update_xaxes(title_text="nats", row=1, col=1, title_standoff=4)
    fig.update_xaxes(title_text="log10 largest / smallest std", row=2, col=1, title_standoff=4)
    fig.update_layout(height=420, margin={"l": 10, "r": 10, "t": 40, "b": 30}, font=figure_style.FONT)
    for a in fig.layout.annotations:
        a.update(font=figure_style.FONT, xref="paper", x=0, xanchor="left")
    return fig, rises, spreads
