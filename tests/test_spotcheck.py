"""The batch grader's spot check (checks/spotcheck.py): a run trained as recorded reproduces its
first steps; a forged seed, a relabelled run or an edited loss does not; another machine kind is
compared loosely and said so."""
import copy

import pytest

from idmap_class import spotcheck
from idmap_lib.engine import results
from idmap_lib.engine.results import FIRST_STEPS
from idmap_lib.engine.trainer import train
from support import tiny_mnist


@pytest.fixture(scope="module")
def honest(mnist):
    """A run as a student's machine records it (here: this machine), with its first steps'
    losses."""
    return train(tiny_mnist("resnet", seed=3, steps=12, log=5), data=mnist, write_result=False,
                 progress=False)


def _graded(run):
    return {"r": ("q", run)}


def test_the_trainer_records_each_first_step_and_resume_keeps_them(mnist, tmp_path, honest):
    steps = honest["first_steps"]
    # one loss a step, not a window's mean
    assert len(steps) == FIRST_STEPS and len(set(steps)) == FIRST_STEPS
    assert abs(sum(steps[:5]) / 5 - honest["history"]["train"][0]["train_loss"]) < 1e-9
    kw = dict(data=mnist, write_result=False, progress=False, checkpoint_dir=tmp_path,
              checkpoint_every=5)
    cfg = honest["config"]
    train(cfg, max_steps=3, **kw)                     # stopped before its first log
    again = train(cfg, resume=True, **kw)
    assert again["first_steps"] == steps


def test_an_honest_run_reproduces_and_a_forged_or_edited_one_does_not(mnist, honest):
    failures, said = spotcheck.check(_graded(honest), k=1, data=mnist)
    assert failures == [] and "reproduces" in said and "same machine kind" in said, said

    forged = copy.deepcopy(honest)                    # another seed written in, the hash recomputed
    forged["config"]["seed"] = 4242
    forged["config_hash"] = results.config_hash(forged["config"])
    failures, said = spotcheck.check(_graded(forged), k=1, data=mnist)
    assert failures and "does NOT reproduce" in said, said

    edited = copy.deepcopy(honest)                    # one step's loss nudged by more than rounding
    edited["first_steps"][4] += 1e-4
    assert spotcheck.check(_graded(edited), k=1, data=mnist)[0]


def test_another_machine_kind_is_compared_loosely_and_said_weak(mnist, honest):
    elsewhere = copy.deepcopy(honest)
    elsewhere["hardware"]["cpu"] = "Some Laptop CPU"
    elsewhere["first_steps"] = [x + 0.01 for x in elsewhere["first_steps"]]  # its roundings
    failures, said = spotcheck.check(_graded(elsewhere), k=1, data=mnist)
    assert failures == [] and "weak test" in said, said
    assert not spotcheck.compare(elsewhere, honest, exact=True)[0]


def test_a_run_without_first_steps_gets_the_window_test_and_a_gpu_run_is_not_compared(mnist, honest):
    old = copy.deepcopy(honest)
    del old["first_steps"]
    failures, said = spotcheck.check(_graded(old), k=1, data=mnist)
    assert failures == [] and "recorded without first_steps" in said, said
    gpu = copy.deepcopy(honest)
    gpu["hardware"]["device"] = "cuda:0"
    assert spotcheck.check(_graded(gpu), k=1, data=mnist) == ([],
                                                              "r: trained on cuda:0: not comparable here")
