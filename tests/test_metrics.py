"""The numbers read from one run: fixed before the runs, moved by what they measure and by nothing
else."""
import math

import pytest

from fake_runs import history, mnist_run, result
from idmap_book.evidence import metrics


def test_steps_to_80_is_moved_by_neither_the_loss_at_initialisation_nor_a_spike_at_the_lr_jump():
    r = result("a_table2_activations", "original-110", 0)
    errs = [0.9] * 3 + [0.7] * 37                                 # starts training at step 40
    r["history"]["train"] = history([2.3] * 40, errs)
    base = metrics.steps_to_80(r)
    assert base == 40
    # a huge loss at initialisation
    r["history"]["train"] = history([9.0, 6.0, 3.0] + [2.0] * 37, errs)
    assert metrics.steps_to_80(r) == base
    r["history"]["train"] = history([2.0] * 40, [0.9] * 3 + [0.7] + [0.95] * 3 + [0.6] * 33)
    # a spike after the first crossing: no matter
    assert metrics.steps_to_80(r) == 40
    r["history"]["train"] = history([2.3] * 40, [0.9] * 40)
    # never started: its length, a lower bound
    assert metrics.steps_to_80(r) == r["config"]["steps"]
    assert metrics.steps_to_80(result("a_table2_activations", "original-110", 0,
                                      status="fail")) == r["config"]["steps"]


def test_lr_jump_rise_reads_the_loss_after_the_warm_up_only():
    r = result("a_table2_activations", "original-110", 0, scale="cpu_step_warmup")
    warm = r["config"]["schedule"]["warmup_steps"]
    assert warm == 100 and r["config"]["schedule"]["milestones"][0] == 200
    # a high start, then a spike at step 120
    losses = [5.0, 3.0] + [2.0] * 8 + [2.1, 6.0, 3.0] + [1.8] * 27
    r["history"]["train"] = history(losses, [0.8] * 40)
    # 6.0 - the loss ending the warm-up (2.0)
    assert metrics.lr_jump_rise(r) == pytest.approx(4.0)
    r["history"]["train"] = history([9.0] + [2.0] * 9 + [1.9] * 30, [0.8] * 40)
    # the loss at initialisation: outside the window
    assert metrics.lr_jump_rise(r) == 0


def test_a_failed_run_counts_at_chance():
    r = result("a_table1_shortcuts", "dropout-0.5", 0, status="fail")
    assert metrics.final_test_err(r) == pytest.approx(0.9)
    assert metrics.early_train_loss(r) == pytest.approx(math.log(10))
    ok = result("a_table1_shortcuts", "original", 0, losses=(2.0, 1.0, 0.5, 0.25))
    # the windows of the first half: 2.0 and 1.0
    assert metrics.early_train_loss(ok) == pytest.approx(1.5)


def test_paper_b_metrics_read_gates_and_pruning_curves():
    curve = lambda start, step: [start + step * i
                                 for i in range(5)]  # noqa: E731  (4 blocks: half = 2)
    gated = {"blocks": 4, "by_gate": curve(0.01, 0.01),
             "at_random": [curve(0.01, 0.1), curve(0.01, 0.2)]}
    r = mnist_run("gresnet-d100", 0, ks=[1.0, 0.5, 3.0], pruning=gated)
    assert metrics.mean_k(r) == pytest.approx(1.5)
    # by_gate after removing 2 blocks
    assert metrics.pruned_half(r) == pytest.approx(0.03)
    # removals 1 and 2, not 0
    assert metrics.pruned_greedy(r) == pytest.approx((0.02 + 0.03) / 2)
    assert metrics.pruned_random(r) == pytest.approx(((0.11 + 0.21) / 2 + (0.21 + 0.41) / 2) / 2)
    ungated = mnist_run("resnet-d100", 0,
                        pruning={"blocks": 4, "at_random": [curve(0.01, 0.1), curve(0.01, 0.2)]})
    # the mean over the random orders
    assert metrics.pruned_half(ungated) == pytest.approx((0.21 + 0.41) / 2)
    # the gated net at random too
    assert metrics.pruned_half_random(r) == pytest.approx((0.21 + 0.41) / 2)
    assert metrics.pruned_half_random(ungated) == pytest.approx((0.21 + 0.41) / 2)
    assert (metrics.shut_gates(r) == 0
            and metrics.shut_gates(mnist_run("gresnet-d100", 0, ks=[0.0, -0.1, 2.0])) == 2)
    assert metrics.pruned_half(mnist_run("resnet-d100", 1, status="fail")) == pytest.approx(0.9)
    with pytest.raises(ValueError, match="python -m idmap_book mnist"):
        metrics.pruned_half(mnist_run("resnet-d100", 2))


def test_a_run_at_chance_is_one_that_never_left_ln_c():
    """The one definition (metrics.ended_at_chance): diverged, or a final training loss within 3 %
    of ln C; the test error does not enter it."""
    near = result("a_table1_shortcuts", "original", 0, test_err=0.2,
                  losses=(2.3, 2.3, 2.3, 0.98 * math.log(10)))
    # it learned nothing of its training data
    assert metrics.ended_at_chance(near)
    trained = result("a_table1_shortcuts", "original", 0, test_err=0.9,
                     losses=(2.3, 1.0, 0.9, 0.96 * math.log(10)))
    # tests at chance, but it did train
    assert not metrics.ended_at_chance(trained)
    assert metrics.ended_at_chance(result("a_table1_shortcuts", "original", 0, status="fail"))
    hundred = result("a_table3_preact", "c100-164-original", 0,
                     losses=(4.6, 4.5, 4.5, 0.98 * math.log(100)))
    assert (metrics.ended_at_chance(hundred)
            and metrics.chance(hundred) == (pytest.approx(0.99), math.log(100)))


def test_mean_k_of_an_ungated_run_is_a_clear_error_not_a_number():
    with pytest.raises(ValueError, match="no gates k"):
        metrics.mean_k(mnist_run("resnet-d10", 0))
    assert metrics.mean_k(mnist_run("gresnet-d10", 0, ks=[2.0, 4.0])) == pytest.approx(3.0)


def test_did_not_train_is_a_loss_that_never_fell_and_left_out_is_what_a_run_did():
    """Issue 40: 'did not train' is decided by the loss never falling, never by where it ended: a
    run that fell and then collapsed at the lr jump did train. A run is left out of a metric only
    for what it did (stuck at chance when the lr jumped: no rise to read), and a threshold never
    reached is censored, not dropped."""
    trained = result("a_table2_activations", "original-110", 0)
    trained["history"]["train"] = history([2.3, 1.0], [0.9, 0.7])
    assert not metrics.did_not_train(trained) and metrics.censored(trained, "steps_to_80") is None
    stuck = result("a_table2_activations", "original-110", 0, losses=(2.3, 2.3, 2.3, 2.3))
    assert metrics.did_not_train(stuck)
    # fell, then back
    collapsed = result("a_table2_activations", "original-110", 0, losses=(2.3, 1.6, 2.3, 2.3))
    assert not metrics.did_not_train(collapsed) and metrics.ended_at_chance(collapsed)
    # its loss fell, its error never got below 80 %
    slow = result("a_table2_activations", "original-110", 0)
    slow["history"]["train"] = history([2.3, 1.5], [0.9, 0.85])
    assert not metrics.did_not_train(slow)
    assert metrics.censored(slow, "steps_to_80") == "not reached within 400 steps"
    assert (metrics.left_out(slow, "steps_to_80") is None
            and metrics.left_out(stuck, "test_err") is None)


def test_a_run_stuck_before_the_jump_is_left_out_of_the_lr_jump_metrics_only():
    base = result("a_table2_activations", "full_preact-110", 0, scale="cpu_step_warmup")
    warm = base["config"]["schedule"]["warmup_steps"]
    steps = [10 * (i + 1) for i in range(40)]
    stuck = dict(base, history={"train": [{"step": s, "train_loss": 2.30 if s <= warm + 30 else 1.5,
                                           "train_err": 0.9} for s in steps], "test": []})
    jumped = dict(base, history={"train": [{"step": s,
                                            "train_loss": 1.5 if s <= warm
                                            else (4.0 if s == warm + 10
                                                    else 1.4),
                                            "train_err": 0.6} for s in steps], "test": []})
    assert metrics.left_out(stuck,
                            "lr_jump_log_rise") == "stuck before the jump" == metrics.left_out(stuck, "lr_jump_rise")
    assert metrics.left_out(jumped, "lr_jump_log_rise") is None
    assert metrics.lr_jump_rise(jumped) == pytest.approx(2.5)
    assert metrics.lr_jump_log_rise(jumped) == pytest.approx(math.log10(0.1 + 2.5))
    assert metrics.lr_jump_log_rise(dict(jumped, history={"train": [dict(h, train_loss=1.0) for h in
                                                                    jumped["history"]["train"]],
                                                                    "test": []})) == -1


def test_a_diverged_run_ranks_above_every_finite_rise_on_either_side():
    """The float32 lr-jump rule: a run whose loss went non-finite is the largest rise, whatever its
    last finite window said (a 5,389-nat spike and a 36-nat one are both 'blew up'); a run that did
    not diverge keeps its rise; a stuck run is still left out, diverged or not."""
    r = result("a_swaps", "full_preact+no_final-110", 0, scale="cpu_step_warmup")
    r["history"]["train"] = history([2.0] * 10 + [30.0, 5000.0] + [1.8] * 28, [0.7] * 40)
    rise = metrics.lr_jump_ranked_rise(r)
    assert rise == pytest.approx(4998.0) == metrics.lr_jump_rise(r)
    blew = dict(r, status="fail")
    assert metrics.lr_jump_ranked_rise(blew) == math.inf
    assert metrics.lr_jump_rise(blew) == rise  # the finite metric: its spike, below a 6e29 one
    assert metrics.left_out(dict(blew, history={"train": [dict(h, train_loss=2.3, train_err=0.9)
                                                          for h in r["history"]["train"]]}),
                            "lr_jump_ranked_rise") == "stuck before the jump"


def test_the_exercises_broke_rule_is_the_metrics_one():
    """Chapter 6's "this depth breaks", defined once (metrics.broke) and used by the exercise's
    grader."""
    from idmap_class import ablations

    r = result("b_mnist", "plain-d20", 0, test_err=0.6, scale="full")
    assert metrics.broke(r) and not metrics.broke(dict(r, final={**r["final"], "test_err": 0.4}))
    assert metrics.broke(dict(r, status="fail", final={}))
    assert ablations.failed is metrics.broke


def test_stuck_before_the_jump_needs_an_error_at_chance_and_a_loss_that_has_not_fallen():
    """Issue 57: "stuck" means stuck. ReLU before addition starts at 33-61 nats and is at 2.5-3.7
    nats at the jump with 80-88 % training error: its loss is falling, so it was learning, and its
    rise counts. BN after addition sits at ln 10 with ~90 % error from its first window: stuck. The
    earlier definition (the loss at chance at the jump) called both stuck."""
    base = result("a_table2_activations", "relu_before_add-110", 0, scale="cpu_step_warmup")
    steps = [10 * (i + 1) for i in range(40)]

    def run(losses, errs):
        return dict(base, history={"train": [{"step": s, "train_loss": x, "train_err": e}
                                             for s, x, e in zip(steps, losses, errs)], "test": []})
    learning = run([40.0] + [2.6] * 39, [0.9] + [0.88] * 39)
    flat = run([2.32] + [2.29] * 39, [0.9] + [0.89] * 39)
    near = run([2.32] + [2.20] * 39, [0.9] + [0.89] * 39)   # its loss fell more than 3 %
    better = run([2.32] + [2.29] * 39, [0.9] + [0.85] * 39)  # its error below 0.97 x 0.9
    assert not metrics.stuck_before_jump(learning) and metrics.stuck_before_jump_by_loss(learning)
    assert metrics.stuck_before_jump(flat) and metrics.stuck_before_jump_by_loss(flat)
    assert not metrics.stuck_before_jump(near) and not metrics.stuck_before_jump(better)
    assert metrics.left_out(learning, "lr_jump_log_rise") is None
    assert metrics.left_out(flat, "lr_jump_log_rise") == "stuck before the jump"
