"""The instructor guide's marks: the rubric, the model answer of each ablation exercise (the key
point an explanation should make, with the paper's argument) and a two-hour session plan.

The batch grader's CSV gives the first point of the rubric; the rest are the instructor's, from
the prediction and explanation texts the same CSV carries (guide.py puts this on the page).
"""
from __future__ import annotations

from . import ablations as ab

# What a full explanation says, per exercise: the key points an instructor marks against (RUBRIC).
# Each names the paper's argument; the numbers come from the student's own runs, which the CSV shows
# beside the text.
MODEL_ANSWERS = {
    "constant_scaling": "the shortcut scaled by lambda < 1 multiplies the direct term of x_L and "
                        "of the gradient by lambda^(L-l) (Eqns 7-8), so the identity path no "
                        "longer carries the signal: training loss higher than the identity's, in "
                        "the student's own runs",
    "exclusive_gate_bias": "b_g sets where the gate starts: very negative keeps the shortcut "
                           "nearly whole and passes little of F, b_g = 0 halves the shortcut at "
                           "the start (like scaling it by 0.5); the best b_g depends on depth and "
                           "length, so Paper A's -6 need not win here",
    "bn_after_addition": "a BN after the addition sits on the path itself: the shortcut is no "
                         "longer an identity (f is not the identity, Eqns 4-5), so the signal is "
                         "renormalised at every unit; Paper A sees a slow start at depth 110 (Fig "
                         "6) that a shallow net need not show",
    "plain_depth": "without shortcuts a deeper plain net trains worse (Paper B Table 1: at d >= 50 "
                   "it breaks), while the residual net of the same depth keeps its error: the "
                   "identity path carries the signal",
    "gate_depth": "the learned gate k falls as the net deepens (Paper B Table 2): deeper nets lean "
                  "more on their identity, ReLU(k) F(x) + x with k near 0 being nearly the "
                  "identity",
    "prune_by_k": "a block with small k contributes little (ReLU(k) F), and k <= 0 is exactly the "
                  "identity (Paper B Eqn 5): removing blocks smallest-k first costs less than at "
                  "random (Fig 5)",
}
RUBRIC = [("1",
           "the runs and answers agree with the student's own recorded runs (the grader's mark)"),
          ("1",
           "a prediction written before the run (kept with the runs, timestamped): marked for "
           "being a clear prediction, not for being right"),
          ("1",
           "the explanation says what the student's own runs show, with a number from their table"),
          ("1",
           "the explanation gives the paper's mechanism (the model answer's key point), in their "
           "own words")]
SESSION = ["10 min: the theory chapter the exercise goes with (its figure, its slider)",
           "5 min: write the prediction, then run the exercise (its time is in its statement)",
           "10 min while it trains: the chapter's recorded runs; then read one's own table and "
           "fill `answers`",
           "10 min: the explanation, then the grading cell (it names what disagrees with the runs)",
           "repeat for a second exercise; 15 min at the end to compare seeds across the class (the "
           "seed spread)"]


def marking() -> list[str]:
    """The guide's marks, rubric, model answers and session plan (Markdown lines)."""
    total = sum(int(p) for p, _ in RUBRIC)
    lines = ["## Marks, rubric and a session plan", "",
             f"**Points per exercise: {total}.** The batch grader's CSV gives the first point per "
             f"exercise; the "
             "rest are the instructor's, from the prediction and explanation texts the same CSV "
             "carries.", "",
             "| points | for |", "|---|---|", *[f"| {p} | {w} |" for p, w in RUBRIC], "",
             "**Model answers** (the key point an explanation should make):", ""]
    lines += [f"- **{name}**: {MODEL_ANSWERS[name]}." for name in ab.ABLATIONS]
    lines += ["", "**A session of about two hours** (two exercises):",
              ""] + [f"{i}. {s}" for i, s in
                  enumerate(SESSION, 1)] + [""]
    return lines
