"""The papers' claims that an experiment can test, as data: one ``Claim`` row each.

A claim names its words, the figure or table it comes from, the runs that test it (experiment,
variants), and its tests (rule.py: ``better``, ``similar``), each with the metric read from every
run (metrics.py), what it is *about*; its readable title, its chapter and its place in the sweep.
The tests were fixed before any result was read; judge.py's ``evaluate`` applies them to the runs
recorded at a scale. Chapters 7-10 show them with their evidence (verdicts.py); chapter 11 gathers
them all.
"""
from __future__ import annotations

from dataclasses import dataclass

from idmap_lib.engine.recipes import AT_FP32, JUMP_PROBE, SCALES
from idmap_lib.models.registry import UNIT_ROWS
from . import paper_numbers
from .rule import better, similar
from .seeds import ALL_SEEDS, SEEDS
from .variants import LR_JUMP_OTHERS, words  # (full pre-activation against each)


@dataclass(frozen=True)
class Claim:
    key: str
    words: str                      # what the paper says
    source: str                     # figure / table / section
    experiment: str
    tests: tuple                    # Compare, ... (all must hold)
    scale_note: str = ""            # what this scale can and cannot show about it
    # the scale its runs are recorded at (Paper B's MNIST nets: the full recipe)
    scale: str = "cpu"
    seeds: tuple = SEEDS            # the seeds its verdict reads
    # whose claim: "paper" (Paper A or B says it) or "ours" (the book's hypothesis)
    by: str = "paper"
    title: str = ""                 # one readable line: the row a reader sees first
    chapter: str = ""               # the chapter (its notebook) that shows its evidence
    # its place in the CPU sweep's order (plan/sweep.py; equal places train in list order; None:
    # the full recipe, never swept on a CPU): what each CPU hour settles soonest first -- the
    # interventions, Paper B's CPU claims (recorded already), Table 2's units (three claims at
    # once), Table 1's identity claim late (its other rows settle it first), the precision check
    # last (2-3 times the bf16 runs' cost)
    sweep: int | None = None

    @property
    def about(self) -> tuple[str, ...]:
        """What its comparisons are about (ABOUT keys), each once."""
        return tuple(dict.fromkeys(t.about for t in self.tests))

    @property
    def variants(self) -> list[str]:
        seen = []
        for t in self.tests:
            for v in (t.a, t.b):
                if v not in seen:
                    seen.append(v)
        return seen


T1, T2, T3 = "a_table1_shortcuts", "a_table2_activations", "a_table3_preact"
# Table 1's modified shortcuts, each a recipe, and those the paper marks "fail" (its shortcut row's)
T1_MODIFIED = tuple(v for v in paper_numbers.PAPER[T1] if v != "original")
T1_FAIL = tuple(v for v, e in paper_numbers.PAPER[T1].items() if e["value"] == paper_numbers.FAIL)
# Table 2's other units at 110 layers (each unit's registry row holds the paper's number)
UNITS_110 = tuple(f"{u}-110" for u, r in UNIT_ROWS.items() if 110 in r.paper and u != "full_preact")

CLAIMS = [
    Claim("t1_identity_best",
          "The identity shortcut gives the lowest error: every modification of the shortcut "
          "(scaling, gating, 1x1 convolution, dropout) is worse.", "Paper A Table 1", T1,
          tuple(better("original", v) for v in T1_MODIFIED),
          title="The identity shortcut beats every modified shortcut",
          chapter="07_shortcuts", sweep=15),
    Claim("t1_fail_rows_far_behind",
          "Constant scaling of the shortcut (0 or 0.5), exclusive gating with b_g = 0 and the "
          "dropout shortcut 'fail' (error > 20 % where the original reaches 6.61 %): they fall far "
          "behind.",
          "Paper A Table 1", T1,
          tuple(better("original", v, margin=0.05) for v in T1_FAIL),
          "far behind, at this scale: more than 5 points of test error above the original",
          title="Scaled, b_g = 0 gated and dropout shortcuts fall far behind",
          chapter="07_shortcuts", sweep=13),
    Claim("t1_gating_bias",
          "Exclusive gating trains only when its gates start nearly shut on F (b_g = -6: 8.70 %); "
          "at b_g = 0 it "
          "fails.", "Paper A Table 1", T1, (better("exclusive_gating-b-6", "exclusive_gating-b0"),
                                            ),
          title="Exclusive gating trains only with its gates nearly shut on F",
          chapter="07_shortcuts", sweep=9),
    Claim("t1_shortcut_only_gating_near_identity",
          "Shortcut-only gating with b_g = -6 (the shortcut kept almost whole) is close to the "
          "identity: 6.91 % vs 6.61 %.", "Paper A Table 1", T1,
          (similar("shortcut_only_gating-b-6", "original", margin=0.02),),
          "close, at this scale: within 2 points of test error",
          title="Shortcut-only gating at b_g = −6 is close to the identity",
          chapter="07_shortcuts", sweep=10),
    Claim("t2_full_preact_best",
          "Full pre-activation gives the lowest error of the five units of Fig 4 (ResNet-110: 6.37 "
          "%).",
          "Paper A Table 2", T2, tuple(better("full_preact-110", v) for v in UNITS_110),
          title="Full pre-activation is the best of the five units",
          chapter="08_activations", sweep=7),
    Claim("t2_bn_after_add_worst",
          "BN after addition is the worst unit at depth 110 (8.17 %).", "Paper A Table 2", T2,
          tuple(better(v, "bn_after_add-110") for v in UNITS_110 if v != "bn_after_add-110")
          + (better("full_preact-110", "bn_after_add-110"),),
          title="BN after addition is the worst unit", chapter="08_activations", sweep=8),
    Claim("fig6_bn_after_add_slow_start",
          "With BN after addition, ResNet-110 has trouble reducing the training loss at the "
          "beginning of training.", "Paper A Fig 6", T2,
          (better("original-110", "bn_after_add-110", "steps_to_80"),),
          "the paper's slow start may be no start within the run: a run whose training error never "
          "falls below 80 % counts at the run's length, on either side, compared by ranks",
          title="BN after addition is slow to start (Fig 6)", chapter="08_activations", sweep=6),
    Claim("fig1_1001_original_slow_start",
          "At 1001 layers, the original unit reduces the training loss very slowly at the start; "
          "the pre-activation unit reduces it quickly.", "Paper A Fig 1, Table 3", T3,
          (better("c10-1001-full_preact", "c10-1001-original", "steps_to_80"),),
          "ResNet-1001 at its real depth, a quarter of its width; a run that never gets below 80 % "
          "training error counts at the run's length, on either side, compared by ranks",
          title="At 1001 layers the original unit starts slowly, pre-activation quickly",
          chapter="09_depth", sweep=11),
    Claim("t3_preact_1layer_skip",
          "Pre-activation helps even with 1-layer skips (ResNet-110, 1-layer residual units: 8.91 "
          "% vs 9.90 %).",
          "Paper A Table 3", T3,
          (better("c10-110-single-full_preact", "c10-110-single-original"),),
          title="Pre-activation helps with 1-layer residual units too",
          chapter="09_depth", sweep=12),
    Claim("s42_preact164_regularises",
          "Pre-activation ResNet-164 ends with a higher training loss but a lower test error than "
          "the original: pre-activation regularises.", "Paper A Sec 4.2, Fig 6 right", T2,
          (better("full_preact-164", "original-164"),
           better("original-164", "full_preact-164", "train_loss", about="converged")),
          "its training-loss half is about the converged end of the full recipe: a short run is "
          "far from it, so only the full recipe can test it",
          title="Pre-activation ResNet-164 regularises", chapter="08_activations", sweep=14),
    Claim("lr_jump_preact_tolerates",
          "Paper A notes that its new unit does not need the CIFAR recipe's warm-up (lr 0.01 for "
          "400 iterations, then 0.1). Our test of that remark: when the lr jumps from 0.01 to 0.1 "
          "in one step, the training loss of full pre-activation rises less than that of the "
          "original unit, of ReLU before addition and of ReLU-only pre-activation.",
          "Paper A's CIFAR recipe (the remark on the warm-up); the test is ours", T2,
          tuple(better("full_preact-110", v, "lr_jump_log_rise") for v in LR_JUMP_OTHERS),
          "the lr-jump probe (the CPU scale with the paper's step warm-up, where the jump comes at "
          "25 % of the run); every run counts, one stuck at chance before the jump left out on "
          "both sides. Read before this test was fixed: seeds 0-2 of all four units (the raw "
          "rises, in nats, were then compared by Welch's t); the log scale (log10 of 0.1 nats + "
          "the rise) was fixed after reading them, before any swap run (claims.SWAP_CLAIMS), and "
          "the raw Welch test is shown beside it",
          scale=JUMP_PROBE, seeds=(0, 1, 2, 3, 4), by="ours",
          title="Only full pre-activation trains through the lr jump",
          chapter="08_activations", sweep=16),
]
MNIST, R32, WRN = "b_mnist", "b_resnet32", "b_wrn"
CLAIMS += [
    Claim("b_plain_breaks_deep",
          "Plain networks break at d >= 50 (60.37 % and 90.20 % error); ResNets and GResNets of "
          "the same depth do not (1.62 % and below).", "Paper B Table 1", MNIST,
          tuple(better(f"{k}-d{d}", f"plain-d{d}", margin=0.05) for d in (50, 100)
                for k in ("resnet", "gresnet")),
          "far behind: more than 5 points of test error", scale="full",
          title="Plain nets break at 50 layers and more; residual ones do not", chapter="10_gates"),
    Claim("b_gresnet_beats_resnet",
          "The gated ResNet has a lower error than the ResNet, most clearly at d = 100 (1.26 % vs "
          "1.50 %).",
          "Paper B Table 1", MNIST, (better("gresnet-d100", "resnet-d100"),), scale="full",
          title="The gated ResNet beats the ResNet", chapter="10_gates"),
    Claim("b_k_falls_with_depth",
          "The mean learned k falls as the network deepens (5.58 at d = 2, 2.54 at d = 10, 0.67 at "
          "d = 100): deeper nets lean more on their identity.", "Paper B Table 2", MNIST,
          (better("gresnet-d100", "gresnet-d10", "mean_k"),
           better("gresnet-d10", "gresnet-d2", "mean_k")),
          scale="full",
          title="The learned gates k fall as the net deepens", chapter="10_gates"),
    Claim("b_greedy_pruning_beats_random",
          "Removing blocks of a trained GResNet by smallest k first is better than removing them "
          "at random.",
          "Paper B Sec 4.1, Fig 5", MNIST,
          (better("gresnet-d100", "gresnet-d100", "pruned_greedy", metric_b="pruned_random"),),
          "d = 100 (50 blocks), removals of 1 to 25 blocks, no retraining", scale="full",
          title="Pruning by smallest k beats pruning at random", chapter="10_gates"),
    Claim("b_gresnet_survives_pruning",
          "A GResNet keeps most of its accuracy with half of its blocks removed; a ResNet degrades "
          "after a few.",
          "Paper B Sec 4.1, Fig 5", MNIST, (better("gresnet-d100", "resnet-d100",
                                                   "pruned_half_random"),),
          "d = 100, 25 of 50 blocks removed at random from both nets, Paper B's fair comparison "
          "(the mean over the recorded random orders; greedy against random within the GResNet is "
          "b_greedy_pruning_beats_random)",
          scale="full",
          title="A GResNet survives losing half its blocks, a ResNet not", chapter="10_gates"),
    Claim("b_gated_resnet32_better",
          "Gating the pre-activation ResNet-32 lowers its error (6.67 % vs 7.16 %).",
          "Paper B Table 3", R32,
          (better("gated", "original"),),
          title="Gating ResNet-32 lowers its error", chapter="10_gates", sweep=2),
    Claim("b_resnet32_k_decay_worse",
          "Weight decay on the gates k takes part of the gain back (ResNet-32: 7.04 % vs 6.67 % "
          "without).",
          "Paper B Table 3", R32, (better("gated", "gated-k_decay"),),
          title="Weight decay on k takes back part of ResNet-32's gain",
          chapter="10_gates", sweep=3),
    Claim("b_gated_wrn_better",
          "Gating the Wide ResNet lowers its error (WRN-28-10: 3.65 % vs 3.89 %).",
          "Paper B Table 3", WRN,
          (better("gated", "plain"),), "WRN-28-1: the depth of WRN-28-10 at a tenth of its width",
          title="Gating the Wide ResNet lowers its error", chapter="10_gates", sweep=4),
    Claim("b_wrn_k_decay_worse",
          "Weight decay on the gates k takes part of the gain back (WRN-28-10: 3.74 % vs 3.65 % "
          "without).",
          "Paper B Table 3", WRN, (better("gated", "gated-k_decay"),),
          "WRN-28-1: the depth of WRN-28-10 at a tenth of its width",
          title="Weight decay on k takes back part of the WRN's gain", chapter="10_gates", sweep=5),
]
# Our own hypotheses, tested by the same rule and fixed before their runs were read (chapter 10):
# our learned k is far below Paper B's Table 2; is it Paper B's unstated initialisation and BN
# settings? The probe trains the GResNet with Keras's defaults (models/mnist.py), the framework
# whose Nadam the recipe names.
KERAS = "Keras's defaults (Glorot-uniform weights, BN epsilon 10⁻³ and momentum 0.99)"
PROBES = [
    Claim("probe_keras_k_d10",
          f"Ours: with {KERAS} the d = 10 GResNet learns a larger mean k than with PyTorch's.",
          "ours (chapter 10), on Paper B Table 2", MNIST,
          (better("gresnet-d10", "gresnet_keras-d10", "mean_k"),),
          scale="full", by="ours",
          title="Keras's defaults give a larger k (d = 10)", chapter="10_gates"),
    Claim("probe_keras_k_d100",
          f"Ours: with {KERAS} the d = 100 GResNet learns a larger mean k than with "
          "PyTorch's.", "ours (chapter 10), on Paper B Table 2", MNIST,
          (better("gresnet-d100", "gresnet_keras-d100", "mean_k"),), scale="full", by="ours",
          title="Keras's defaults give a larger k (d = 100)", chapter="10_gates"),
    Claim("probe_keras_err_d10",
          f"Ours: with {KERAS} the d = 10 GResNet reaches a lower test error than with "
          "PyTorch's.", "ours (chapter 10), on Paper B Table 1", MNIST,
          (better("gresnet_keras-d10", "gresnet-d10"),), scale="full", by="ours",
          title="Keras's defaults give a lower error (d = 10)", chapter="10_gates"),
]
# The interventions (recipes.SWAPS): one part of a unit swapped at a time, each swapped unit placed
# against the two units it lies between -- is its rise at the lr jump (or its start at 1001 layers)
# below the original's, above full pre-activation's, or both? -- so that the swaps, not units that
# differ in several parts at once, say which part carries the effect. Fixed, with each hypothesis'
# prediction (synthesis.PROPERTIES: a hypothesis "property P is what makes a unit tolerate the jump"
# predicts the rows with P tolerate and the rows without do not), in the commit before any of these
# runs was trained. The metrics: the lr jump's rise on a log scale fixed before
# (``lr_jump_log_rise``: log10(0.1 nats + rise), so that one seed's 35-nat rise cannot carry or
# break a mean), a run stuck at chance before the jump left out on both sides alike (it cannot show
# whether the jump hurts); the start at 1001 layers by ``steps_to_80``, a censored metric (a run
# that never gets below 80 % counts as the run's length on both sides alike), compared by ranks
# (rule.compare: an exact permutation test on mid-ranks, never a mean of censored values). Their
# seeds are the book's policy (SEEDS, then MORE_SEEDS where three leave a part inconclusive:
# rule.SEQUENTIAL; a rank test always takes five, and BN after addition's seeds 3-4 are asked for),
# chosen before any swap run was read (two were recorded, unread).
SW = "a_swaps"
SWAP_ROWS_110 = ("original+final_bn_relu-110", "full_preact+no_final-110",
                 "original+zero_gamma-110",
                 "relu_preact+final_bn_relu-110", "bn_after_add-110",
                 "original+zero_gamma_scaled_input-110")
SWAP_ROWS_1001 = ("original+final_bn_relu-1001", "full_preact+no_final-1001")
# each row in its words (variants.words), with how its swap is made where the words leave it out
_HOW = {"bn_after_add-110": "BN-ReLU before every weight layer and the classifier, no clean path",
        "original+zero_gamma-110": "zero gamma: every branch's last BN starts at 0",
        "original+zero_gamma_scaled_input-110": "zero gamma: every branch's last BN starts at 0"}
SWAP_WORDS = {r: words(SW, r) + (f" ({_HOW[r]})" if r in _HOW else "")
              for r in SWAP_ROWS_110 + SWAP_ROWS_1001 + ("relu_preact-110", "relu_before_add-110")}
SWAP_TITLES = {  # each row's readable line (Claim.title)
    "original+final_bn_relu-110": "The original unit with a final BN-ReLU, at the lr jump",
    "full_preact+no_final-110": "Full pre-activation without its final BN-ReLU, at the lr jump",
    "original+zero_gamma-110": "The original unit with its branches off at init, at the lr jump",
    "relu_preact+final_bn_relu-110": "ReLU-only pre-activation with a final BN-ReLU, at the lr "
                                     "jump",
    "bn_after_add-110": "BN after addition, at the lr jump",
    "original+zero_gamma_scaled_input-110": "Zero gamma with the original's classifier input, at "
                                            "the lr jump",
    "original+final_bn_relu-1001": "The original ResNet-1001 with a final BN-ReLU, at the start",
    "full_preact+no_final-1001": "Full pre-activation ResNet-1001 without its final BN-ReLU, at "
                                 "the start",
    "relu_preact-110": "ReLU-only pre-activation between the two references, at the lr jump",
    "relu_before_add-110": "ReLU before addition between the two references, at the lr jump"}
JUMP, START = "lr_jump_log_rise", "steps_to_80"
SWAP_CLAIMS = [
    Claim(f"swap_jump_{r.rsplit('-', 1)[0].replace('+', '_')}",
          f"Ours, an intervention: {SWAP_WORDS[r]} rises less at the lr jump than the original "
          f"unit, and more than full "
          f"pre-activation.", "ours: an intervention (recipes.SWAPS), at the lr-jump probe",
          SW,
          (better(r, "original-110", JUMP), better("full_preact-110", r, JUMP)),
          "the lr-jump probe: ResNet-110, the CPU scale with the paper's step warm-up",
          scale=JUMP_PROBE,
          # (BN after addition: the 3-4; the separating row: 5 a side from the start)
          seeds=ALL_SEEDS if r in ("bn_after_add-110", "original+zero_gamma_scaled_input-110")
          else SEEDS, by="ours",
          title=SWAP_TITLES[r], chapter="09_why_preactivation", sweep=1)
    for r in SWAP_ROWS_110] + [
    Claim(f"swap_start_{r.rsplit('-', 1)[0].replace('+', '_')}_1001",
          f"Ours, an intervention: {SWAP_WORDS[r]} starts sooner than the original ResNet-1001, "
          f"and later than full "
          f"pre-activation.", "ours: an intervention (recipes.SWAPS), on Paper A Fig 1", SW,
          (better(r, "original-1001", START), better("full_preact-1001", r, START)),
          "ResNet-1001 at its real depth, a quarter of its width, 128 steps; 5 seeds (a rank test "
          "cannot decide with 3)", seeds=ALL_SEEDS, by="ours",
          title=SWAP_TITLES[r], chapter="09_why_preactivation", sweep=1)
    for r in SWAP_ROWS_1001] + [
    # The swap that separates the confound, fixed with its row's claim above before any
    # of its runs: zero gamma switches the branches off at init *and* leaves the classifier a small
    # input, as a normalised one is; scaling that input back to the original's keeps the first and
    # removes the second. If branches off at init carry the unit through the jump, the scaled row
    # rises no more than zero gamma; if the small classifier input does, it rises more. By ranks, a
    # diverged run the largest rise (``lr_jump_ranked_rise``: one run's spike before an overflow
    # cannot decide it), 5 seeds a side (a rank test cannot decide with 3).
    Claim("swap_jump_separates_zero_gamma",
          "Ours, an intervention: the original unit with zero gamma rises less at the lr jump than "
          "the same net with its classifier's input scaled to the original's (branches off at "
          "init in both; the classifier input small in one, un-normalised in the other).",
          "ours: an intervention (recipes.SWAPS), at the lr-jump probe", SW,
          (better("original+zero_gamma-110", "original+zero_gamma_scaled_input-110",
                  "lr_jump_ranked_rise"),),
          "the lr-jump probe, by ranks (a diverged run the largest rise); 5 seeds a side",
          scale=JUMP_PROBE, seeds=ALL_SEEDS, by="ours",
          title="Zero gamma against itself with the original's classifier input, at the lr jump",
          chapter="09_why_preactivation", sweep=1)]
# Two units of Table 2 placed between the same two references, so that every row of the synthesis
# has its outcome by one rule; their runs (seeds 0-4 at the lr-jump probe) were read before these
# were written (for the lr-jump claim).
ROW_CLAIMS = [
    Claim(f"row_jump_{r.rsplit('-', 1)[0]}",
          f"Ours: {SWAP_WORDS[r]} rises less at the lr jump than the original unit, and "
          f"more than full "
          f"pre-activation.", "ours: a row of the synthesis, at the lr-jump probe", SW,
          (better(r, "original-110", JUMP), better("full_preact-110", r, JUMP)),
          "the lr-jump probe; these runs were read (for the lr-jump claim) before this claim was "
          "written",
          scale=JUMP_PROBE, seeds=ALL_SEEDS, by="ours",
          title=SWAP_TITLES[r], chapter="09_why_preactivation", sweep=1)
    for r in ("relu_preact-110", "relu_before_add-110")]
# The precision check, fixed before its runs: every CPU run above trains in bf16 autocast (the
# identity path sums in an 8-bit mantissa at 1001 layers); the same comparisons in float32 say
# whether a verdict moves. Its lr-jump rule, fixed before any float32 run was trained: by ranks, a
# diverged run the largest rise (``lr_jump_ranked_rise``). In bf16 full pre-activation without its
# final BN-ReLU diverged in 3 of 5 seeds, and the log rise's Welch test, its finite spikes before
# the overflow, left it open; ranks take 5 seeds a side, so this claim reads five.
FP = AT_FP32
RANKED_JUMP = "lr_jump_ranked_rise"
FP32_CLAIMS = [
    Claim("fp32_lr_jump",
          "Ours, the precision check: in float32, as in bf16, full pre-activation rises less at "
          "the lr jump than the original unit; the original with a final BN-ReLU rises less than "
          "the original; full pre-activation rises less than itself without its final "
          "BN-ReLU.", "ours: the precision check (recipes.FP32)",
          SW,
          (better("full_preact-110" + FP, "original-110" + FP, RANKED_JUMP),
           better("original+final_bn_relu-110" + FP, "original-110" + FP, RANKED_JUMP),
           better("full_preact-110" + FP, "full_preact+no_final-110" + FP, RANKED_JUMP)),
          "the lr-jump probe in float32 (2-3 times the bf16 runs' time), by ranks, a diverged run "
          "the largest rise; 5 seeds (a rank test cannot decide with "
          "3)", scale=JUMP_PROBE, seeds=ALL_SEEDS,
          by="ours",
          title="In float32: the lr jump and its classifier swaps",
          chapter="09_why_preactivation", sweep=17),
    Claim("fp32_fig1_start",
          "Ours, the precision check: in float32, as in bf16, pre-activation ResNet-1001 starts "
          "sooner than the "
          "original.", "ours: the precision check (recipes.FP32), on Paper A Fig 1", SW,
          (better("full_preact-1001" + FP, "original-1001" + FP, START),),
          "ResNet-1001 at a quarter of its width in float32; 5 seeds (a rank test cannot decide "
          "with 3)",
          seeds=ALL_SEEDS, by="ours",
          title="In float32: the start at 1001 layers", chapter="09_why_preactivation", sweep=18),
]
CLAIMS += SWAP_CLAIMS + ROW_CLAIMS + FP32_CLAIMS
CLAIMS_BY_KEY = {c.key: c for c in CLAIMS + PROBES}


def in_chapter(chapter: str) -> list[str]:
    """The keys of the claims whose evidence `chapter` shows, in the claims' order."""
    return [k for k, c in CLAIMS_BY_KEY.items() if c.chapter == chapter]


def chapters() -> dict[str, str]:
    """{chapter: its kind} of every chapter a claim names, in the book's order: "paper" where it
    tests a paper's claim, "ours" where only the book's own hypotheses (the interventions)."""
    return {ch: "paper" if any(c.by == "paper" for c in CLAIMS_BY_KEY.values() if c.chapter == ch)
            else "ours" for ch in sorted({c.chapter for c in CLAIMS_BY_KEY.values()})}


def by_scale(claim_list=None) -> dict[str, list[str]]:
    """The claims' keys grouped by the scale their runs are recorded at (recipes.SCALES order): one
    table and one count per scale, never mixed (chapter 11)."""
    claim_list = CLAIMS if claim_list is None else claim_list
    return {s: [c.key for c in claim_list if c.scale == s] for s in SCALES
            if any(c.scale == s for c in claim_list)}
