"""Every number the book reads from one recorded run (a result dict of ``engine.results``), and the
one definition of a run *at chance*.

A run that failed (non-finite loss) counts at chance in every metric: test error 1 - 1/C (also with
blocks removed), training loss ln C (C classes: ``chance``). A run *ended at chance*
(``ended_at_chance``) if it diverged or its final training loss is still within 3 % of ln C, where
it began: it never trained. The test error does not enter it: a run can learn its training data and
still test near chance.

The exercises' *broke* (``broke``) is named here too. *Did not train* is defined once, here
(``did_not_train``): its training loss never fell, whatever it did later. The rule (rule.py) counts
every run as what it measured, on both sides alike; it leaves a run out only for what it did
(``left_out``: stuck at chance when the lr jumped, for the lr-jump metrics), and takes a threshold
never reached (``censored``: ``steps_to_80``, "not reached within N steps") as the run's length on
either side, by ranks.

Each metric is a function of one result; ``METRICS`` names them for the claims' tests (claims.py),
``METRIC_WORDS`` says them in words, ``shown_as`` how the pages print them.
"""
from __future__ import annotations

import math
import statistics

from idmap_lib.engine import outcome

# a final training loss >= AT_CHANCE x ln C is where the run began: it ended at chance
AT_CHANCE = 0.97
START_ERR = 0.80  # ResNet v1's warm-up rule: "until the training error is below 80 %"


# ----------------------------------------------------------------------------------------------
# chance

def chance(result) -> tuple[float, float]:
    """(test error, training loss) of a net that guesses: 1 - 1/C and ln C, C its classes."""
    return outcome.chance(result["config"]["model"]["kwargs"].get("num_classes", 10))


def at_chance_loss(result, loss) -> bool:
    """A training loss where a guessing net sits: at least AT_CHANCE x ln C (the one threshold of
    "at chance")."""
    return loss >= AT_CHANCE * chance(result)[1]


def ended_at_chance(result) -> bool:
    """A run that ended where it began: diverged, or its final training loss still within 3 % of ln
    C."""
    if result["status"] == "fail":
        return True
    return at_chance_loss(result, result["final"]["train_loss"])


BROKE_ERR = 0.5  # the exercises' "breaks": a test error above it


def broke(result) -> bool:
    """The ablation exercises' "this depth breaks" (chapter 6): the run failed (diverged, or stuck
    at chance by its recipe's rule) or ended with a test error above BROKE_ERR. Coarser than
    ``ended_at_chance``: a classroom run of a few hundred steps that learned a little and still
    tests above 50 % has broken, for the exercise."""
    return result["status"] == "fail" or result["final"].get("test_err", 1.0) > BROKE_ERR


def reached_80(result) -> bool:
    """Whether the run's training error ever fell below 80 % (``steps_to_80``'s threshold) within
    its steps."""
    return (result["status"] != "fail" and any(h["train_err"] < START_ERR
                                               for h in result["history"]["train"]))


def did_not_train(result) -> bool:
    """A run whose training loss never fell: every logged window within 3 % of ln C (or none
    logged). Decided by whether it ever learned, never by where it ended: a run that trained and
    then collapsed at an lr jump did train. A label the pages show; the rule counts such a run as
    what it measured (at chance), on both sides alike."""
    losses = [h["train_loss"] for h in result["history"]["train"]]
    return not losses or all(at_chance_loss(result, x) for x in losses)


def censored(result, metric) -> str | None:
    """Why a run has only a lower bound of `metric`: ``steps_to_80`` "not reached within N steps"
    (its value N counts on either side alike, by ranks: rule.CENSORED); None otherwise."""
    if metric == "steps_to_80" and not reached_80(result):
        return f"not reached within {result['config']['steps']} steps"
    return None


def left_out(result, metric, stuck=None) -> str | None:
    """Why a run gives no value of `metric`, from what it did, the same on both sides of every
    comparison: at the lr jump, "stuck before the jump" (``stuck_before_jump``, or the definition
    `stuck` given: history.py reads the earlier one). None for every other metric and run: the one
    definition of a run the rule leaves out."""
    if metric in LR_JUMP and (stuck or stuck_before_jump)(result):
        return "stuck before the jump"
    return None


def at_chance_err(result, err) -> bool:
    """A training error where a guessing net sits: at least AT_CHANCE x (1 - 1/C)."""
    return err >= AT_CHANCE * chance(result)[0]


def stuck_before_jump(result) -> bool:
    """A run stuck when the lr jumped: in the window that ends the warm-up it is at chance by its
    training error (``at_chance_err``) *and* its training loss has not fallen (still within 3 % of
    its first window's). Both signs, because a run whose loss is falling is learning even while its
    error is near chance (ReLU before addition starts at 33-61 nats and is at 2.5-3.7 at the jump):
    its rise says how it takes the jump. Its rise is no evidence about tolerating the jump only when
    it had not moved at all ("stuck before the jump", its own outcome; BN after addition's). This
    definition replaced ``stuck_before_jump_by_loss`` after the runs it reads were
    recorded: the pages show the verdicts under both (evidence/history.py)."""
    warm = result["config"]["schedule"].get("warmup_steps", 0)
    tr = result["history"]["train"]
    at_end = [h for h in tr if h["step"] <= warm]
    if not at_end:
        return False
    last = at_end[-1]
    return at_chance_err(result, last["train_err"]) and \
        last["train_loss"] >= AT_CHANCE * tr[0]["train_loss"]


def stuck_before_jump_by_loss(result) -> bool:
    """The earlier definition (until commit f909178): the window that ends the warm-up at chance by
    its *loss* (>= AT_CHANCE x ln C). It called a run stuck whose loss was still falling from far
    above ln C; kept only so that the pages can show the verdicts it gave."""
    warm = result["config"]["schedule"].get("warmup_steps", 0)
    at_end = [h["train_loss"] for h in result["history"]["train"] if h["step"] <= warm]
    return bool(at_end) and at_chance_loss(result, at_end[-1])


# ----------------------------------------------------------------------------------------------
# the metrics

def final_test_err(result):
    """Test error at the end of training."""
    if result["status"] == "fail":
        return chance(result)[0]
    return result["final"]["test_err"]


def final_train_loss(result):
    """Training loss of the last logged window."""
    if result["status"] == "fail":
        return chance(result)[1]
    return result["final"]["train_loss"]


def early_train_loss(result):
    """Mean training loss over the logged windows of the first half of training. Shown, never
    tested: a high loss at initialisation or a spike at an lr change moves it as much as a slow
    start does."""
    if result["status"] == "fail":
        return chance(result)[1]
    half = result["config"]["steps"] / 2
    losses = [h["train_loss"] for h in result["history"]["train"] if h["step"] <= half]
    return statistics.fmean(losses)


def steps_to_80(result):
    """How fast a net starts (early optimisation): the first logged step whose window's training
    error is below 80 % (ResNet v1's sign that training has started). A run that never gets there,
    or failed, returns its length, a lower bound that is *not reached within N steps*
    (``censored``): the rule compares such values by ranks, the same on both sides (rule.CENSORED),
    never inside a mean. Fixed before the cpu-scale runs: training error is bounded, so a huge loss
    at initialisation does not move it, and only the *first* crossing counts, so a later spike does
    not either."""
    steps = result["config"]["steps"]
    if result["status"] == "fail":
        return float(steps)
    return float(next((h["step"] for h in result["history"]["train"] if h["train_err"] < START_ERR),
                      steps))


def lr_jump_rise(result):
    """How far the training loss rises after the warm-up (the lr jump of the cpu_step_warmup scale):
    the highest window loss between the end of the warm-up and the first lr drop, minus the loss of
    the window that ends the warm-up; 0 if it never rises. A failed run counts as a rise to its last
    loss (non-finite: ln C)."""
    s = result["config"]["schedule"]
    warm, drop = s.get("warmup_steps", 0), s["milestones"][0]
    tr = result["history"]["train"]
    at_end = [h["train_loss"] for h in tr if h["step"] <= warm]
    after = [h["train_loss"] for h in tr if warm < h["step"] <= drop]
    if not at_end:
        raise ValueError("lr_jump_rise needs a logged window before the end of the warm-up")
    if result["status"] == "fail":
        after.append(chance(result)[1])
    return max([0.0] + [x - at_end[-1] for x in after])


LOG_FLOOR = 0.1  # nats: a rise below it is a window's noise; log10(LOG_FLOOR + rise) keeps 0 finite


def lr_jump_log_rise(result):
    """``lr_jump_rise`` on a log scale fixed before the interventions' runs: log10(0.1 nats + rise).
    Rises span 0-35 nats over the units; on this scale one seed's 35-nat spike cannot carry or break
    a mean of five."""
    return math.log10(LOG_FLOOR + lr_jump_rise(result))


def lr_jump_ranked_rise(result):
    """``lr_jump_rise`` for a comparison by ranks, fixed before the float32 runs: a run that
    diverged (its loss non-finite) ranks above every finite rise, tied with every other diverged
    run, on both sides alike. Its last finite windows (35 to 6e29 nats at ResNet-110 in bf16) say
    how fast it blew up, not how much less it tolerated the jump; a log scale let one such number
    decide a mean, ranks need no scale."""
    if result["status"] == "fail":
        return math.inf
    return lr_jump_rise(result)


LR_JUMP = ("lr_jump_rise", "lr_jump_log_rise", "lr_jump_ranked_rise")  # read at the lr jump


def mean_k(result):
    """Mean of the learned gates k at the end of training (Paper B Table 2). A run of an ungated net
    has no k: a clear error, never a number that would enter a mean."""
    ks = result["final"].get("gates_k")
    if not ks:
        raise ValueError(f"{result.get('path', 'this run')} has no gates k: mean_k reads a gated "
                         f"net's run (Paper B's GResNet and gated ResNets)")
    return statistics.fmean(ks)


def _pruning(result):
    p = (result.get("analysis") or {}).get("pruning")
    if p is None:
        raise ValueError(f"{result.get('path', 'this result')} has no pruning curves (they are "
                         f"recorded with the d = 100 MNIST runs: python -m idmap_book mnist)")
    return p


def pruned_half(result):
    """Test error with half of the blocks removed without retraining: by Paper B's order (smallest k
    first) for a gated net, the mean over random orders for an ungated one (Paper B Fig 5)."""
    if result["status"] == "fail":
        return chance(result)[0]
    p = _pruning(result)
    half = p["blocks"] // 2
    if "by_gate" in p:
        return p["by_gate"][half]
    return statistics.fmean(c[half] for c in p["at_random"])


def _removal_mean(curve, p):
    return statistics.fmean(curve[1:p["blocks"] // 2 + 1])


def pruned_half_random(result):
    """Test error with half of the blocks removed at random (the mean over the random orders), for a
    gated and an ungated net alike: Paper B's fair comparison of GResNet and ResNet (Sec 4.1, Fig
    5)."""
    if result["status"] == "fail":
        return chance(result)[0]
    p = _pruning(result)
    return statistics.fmean(c[p["blocks"] // 2] for c in p["at_random"])


def shut_gates(result) -> int:
    """How many of the net's gates are shut at the end of training: k <= 0, where ReLU(k) = 0 and
    the block is exactly the identity (Paper B Eqn 5); greedy pruning removes these first at no
    cost."""
    ks = result["final"].get("gates_k")
    if not ks:
        raise ValueError(f"{result.get('path', 'this run')} has no gates k: shut_gates reads a "
                         f"gated net's run")
    return sum(k <= 0 for k in ks)


def pruned_greedy(result):
    """Mean test error over removing 1, 2, ..., half of the blocks by smallest k first (Paper B Fig
    5)."""
    if result["status"] == "fail":
        return chance(result)[0]
    p = _pruning(result)
    return _removal_mean(p["by_gate"], p)


def pruned_random(result):
    """Mean test error over removing 1, 2, ..., half of the blocks in random orders (mean over the
    orders)."""
    if result["status"] == "fail":
        return chance(result)[0]
    p = _pruning(result)
    return statistics.fmean(_removal_mean(c, p) for c in p["at_random"])


METRICS = {"test_err": final_test_err, "train_loss": final_train_loss,
           "early_train_loss": early_train_loss,
           "steps_to_80": steps_to_80, "lr_jump_rise": lr_jump_rise,
           "lr_jump_log_rise": lr_jump_log_rise, "lr_jump_ranked_rise": lr_jump_ranked_rise,
           "mean_k": mean_k, "pruned_half": pruned_half, "pruned_half_random": pruned_half_random,
           "pruned_greedy": pruned_greedy, "pruned_random": pruned_random, "shut_gates": shut_gates}
METRIC_WORDS = {"test_err": "final test error", "train_loss": "final training loss",
                "early_train_loss": "mean training loss over the first half of training",
                "steps_to_80": "steps until the training error first falls below 80 %",
                "lr_jump_rise": "rise of the training loss after the lr jump",
                "lr_jump_log_rise": "log10 (0.1 + rise of the training loss after the lr jump, in "
                                    "nats)",
                "lr_jump_ranked_rise": "rise of the training loss after the lr jump, a diverged "
                                       "run the largest",
                "mean_k": "mean learned k",
                "pruned_half": "test error with half of the blocks removed",
                "pruned_half_random": "test error with half of the blocks removed at random",
                "shut_gates": "gates shut (k <= 0)",
                "pruned_greedy": "mean test error removing up to half of the blocks, smallest k "
                                 "first",
                "pruned_random": "mean test error removing up to half of the blocks at random"}
# metrics shown in %
PERCENT = ("test_err", "pruned_half", "pruned_half_random", "pruned_greedy", "pruned_random")


def shown_as(metric) -> tuple[float, str]:
    """(factor, format) a metric is printed in: % for errors, whole steps, 3 decimals otherwise."""
    return (
        (100, ".1f")
        if metric in PERCENT
        else (1, ".0f")
        if metric in ("steps_to_80", "shut_gates")
        else (1, ".3f")
    )
