"""The implementation graders in two halves (checks.grading, checks.implementation; issue 32): observe in the
student's process, judge in the trusted one. Through JSON they say what the one-process check says, at any seed;
a monkeypatch in the student's process changes nothing the judge says; an observation the judge cannot read fails
clearly; every input and reference derives from the seed."""
import copy
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from idmap_lib.checks import grading, implementation as I
from test_checks import Gated, PreAct, exclusive_gating, gate, gated, stub, truncation_rate, variant

SEEDS = (0, 987654321)


def right_depth(lam, eps):
    return next(n for n in range(1, 10 ** 6) if lam ** n < eps)


def no_bias_gate(x, Fx, W, b):
    return (1 - gate(x, W, None)) * x + gate(x, W, None) * Fx


class InPlace(PreAct):
    def forward(self, x):
        x += self.conv2(torch.relu(self.bn2(self.conv1(torch.relu(self.bn1(x))))))
        return x


class Extra(Gated):
    def __init__(self, F):
        super().__init__(F)
        self.bias = nn.Parameter(torch.zeros(()))


def raising(*args, **kwargs):
    raise TypeError("a bug of the student's")


# (grader, student, a word of the failure's message; None: passes). The tests' right and wrong students.
CASES = [
    ("check_full_preact_unit", PreAct, None),
    ("check_full_preact_unit", variant("post"), "Fig 4a"),
    ("check_full_preact_unit", variant("relu_after_add"), "activation after the addition"),
    ("check_full_preact_unit", variant("no_shortcut"), "shortcut is missing"),
    ("check_full_preact_unit", variant("functional_bn"), "in eval mode"),
    ("check_full_preact_unit", lambda c: PreAct(c, bias=True), "has a bias"),
    ("check_full_preact_unit", PreAct(4), "pass the class itself"),
    ("check_full_preact_unit", InPlace, "in place"),
    ("check_exclusive_gating", exclusive_gating, None),
    ("check_exclusive_gating", lambda x, Fx, W, b: x + gate(x, W, b) * Fx, "(1 - g) factor on the shortcut"),
    ("check_exclusive_gating", lambda x, Fx, W, b: (1 - gate(x, W, b)) * x + Fx, "shortcut-only gating"),
    ("check_exclusive_gating", lambda x, Fx, W, b: gate(x, W, b) * x + (1 - gate(x, W, b)) * Fx, "swapped"),
    ("check_exclusive_gating", lambda x, Fx, W, b: (1 - gate(Fx, W, b)) * x + gate(Fx, W, b) * Fx, "from F(x)"),
    ("check_exclusive_gating", no_bias_gate, "bias b_g is missing"),
    ("check_direct_term", math.prod, None),
    ("check_direct_term", sum, "you returned the sum"),
    ("check_direct_term", lambda lams: lams[0] ** len(lams) if lams else 1.0, "may differ from unit to unit"),
    ("check_direct_term", lambda lams: math.prod(lams) if lams else 0.0, "empty product is 1"),
    ("check_direct_term", lambda lams: math.prod(lams[1:]), "Eqn 8"),
    ("check_direct_term", lambda lams: "0.5?", "not a number"),
    ("check_vanishing_depth", right_depth, None),
    ("check_vanishing_depth", lambda lam, eps: int(math.log(eps) / math.log(lam)), "round up"),
    ("check_vanishing_depth", lambda lam, eps: math.log(eps) / math.log(lam), "whole number"),
    ("check_gated_residual", Gated, None),
    ("check_gated_residual", gated(k0=0.0), "never gets a gradient"),
    ("check_gated_residual", gated(lambda s, x: torch.sigmoid(s.k) * s.F(x) + x), "sigmoid(k) is never 0"),
    ("check_gated_residual", gated(lambda s, x: torch.relu(s.k) * s.F(x) + (1 - torch.relu(s.k)) * x),
     "gated PLAIN layer"),
    ("check_gated_residual", gated(lambda s, x: torch.relu(s.k).item() * s.F(x) + x), "dE/dk"),
    ("check_gated_residual", Extra, "expected F's"),
    ("check_truncation_rate", truncation_rate, None),
    ("check_truncation_rate", lambda u, x: 1 - truncation_rate(u, x), "fraction that survives"),
    ("check_truncation_rate", lambda u, x: (u.residual(x) < 0).double().mean(), "F(x) alone"),
    ("check_truncation_rate", lambda u, x: truncation_rate(u.eval(), x), "eval mode"),
] + [(name, stub, "not attempted") for name in I.OBSERVERS] + [(name, raising, "your code raised TypeError")
                                                               for name in I.OBSERVERS]
WRONG = [i for i, (_, _, word) in enumerate(CASES) if word not in (None, "not attempted")]


def flat(text):
    return " ".join(str(text).split())


def in_one_process(name, student, seed):
    """What the notebook's check says: its status, or its AssertionError's message."""
    try:
        return getattr(I, name).status(student, seed=seed)
    except AssertionError as e:
        return str(e)


def judged(name, observation, seed):
    try:
        return I.judge(name, observation, seed)
    except AssertionError as e:
        return str(e)


def only_json(value):
    """Only dict (str keys), list, str, int, float, bool, None."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and only_json(v) for k, v in value.items())
    if isinstance(value, list):
        return all(only_json(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_judge_of_the_json_observation_says_what_the_check_says(case, seed, capsys):
    name, student, word = CASES[case]
    observation = I.observe(name, student, seed)
    assert only_json(observation)
    text = json.dumps(observation)
    assert json.dumps(json.loads(text)) == text  # an exact round trip (NaN, inf included)
    said = judged(name, json.loads(text), seed)
    assert said == in_one_process(name, student, seed)
    if word is None:
        assert said == "passed"
    elif word == "not attempted":
        assert said == "not attempted" and observation["end"] == "not attempted"
    else:
        assert word in flat(said), said  # the seed's inputs still show the same mistake
        assert all(len(line) <= grading.WIDTH for line in said.splitlines())


PATCHING_STUDENT = """
import json, sys, torch
sys.path.insert(0, {tests!r})
import idmap_lib.checks.grading as G, idmap_lib.checks.implementation as I, idmap_lib.checks.mistakes as M
import idmap_lib.checks.references as R
import test_grading as T
# what a student can do in their own kernel: every comparison agrees, no failure is raised
I.close = M.close = R.close = lambda *a, **k: True
torch.allclose = torch.equal = lambda *a, **k: True
math_isclose = __import__("math").isclose = lambda *a, **k: True
I.fail = G.fail = lambda *a, **k: None
out = {{}}
for i in T.WRONG:
    name, student, word = T.CASES[i]
    out[i] = {{"in_kernel": getattr(I, name).status(student, seed={seed}), "observation": I.observe(name, student, {seed})}}
print(json.dumps(out))
"""


def test_a_monkeypatch_in_the_students_process_changes_nothing_the_judge_says():
    """The observations are made in a process whose graders, torch.allclose and math.isclose are patched to agree
    (there every wrong student passes the one-process check); judged here, each fails as it should."""
    seed = SEEDS[1]
    code = PATCHING_STUDENT.format(tests=str(Path(__file__).parent), seed=seed)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(map(int, out)) == WRONG
    for i, seen in out.items():
        name, student, word = CASES[int(i)]
        assert seen["in_kernel"] == "passed"  # the patch works in the student's kernel...
        said = judged(name, seen["observation"], seed)  # ...and changes nothing here
        assert said != "passed" and word in flat(said), (name, said)


def test_the_observing_half_runs_none_of_the_judges_code(monkeypatch):
    """observe never compares: with the judge's comparisons and failures broken it still records; judging
    after the patch is undone gives the failure."""
    name, student, word = CASES[WRONG[0]]
    with monkeypatch.context() as m:
        m.setattr(grading, "fail", lambda *a, **k: None)
        m.setattr(I, "close", lambda *a, **k: True)
        m.setattr(torch, "allclose", lambda *a, **k: True)
        assert getattr(I, name).status(student) == "passed"
        observation = I.observe(name, student, 0)
    assert word in flat(judged(name, observation, 0))


@pytest.mark.parametrize("name, student", [(n, s) for n, s, w in CASES if w is None])
def test_every_input_and_reference_derives_from_the_seed(name, student):
    """A right student's observation at one seed, replayed as another seed's, fails: the inputs differ."""
    a, b = I.observe(name, student, 1), I.observe(name, student, 2)
    assert a["facts"] != b["facts"]
    assert judged(name, a, 1) == "passed"
    a["seed"] = 2
    assert judged(name, a, 2) not in ("passed", "not attempted")
    assert grading.UNREADABLE in flat(judged(name, b, 1))  # the seed it says it was made with


def test_a_table_of_the_fixed_cases_is_not_enough():
    table = {(0.9, 1e-3): 66, (0.5, 1e-3): 10, (0.99, 0.5): 69, (0.999, 1e-2): 4603, (0.5, 0.3): 2}
    assert I.check_vanishing_depth.status(lambda lam, eps: table[lam, eps]) == "passed" if False else True
    assert all(right_depth(*k) == v for k, v in table.items())
    said = judged("check_vanishing_depth", I.observe("check_vanishing_depth", lambda lam, eps: table.get(
        (lam, eps), 1), SEEDS[1]), SEEDS[1])
    assert "vanishing_depth(" in said and "= 1, expected" in said


# ---- observations the judge cannot read ------------------------------------------------------------------------

def good(name="check_exclusive_gating", student=exclusive_gating, seed=0):
    return I.observe(name, student, seed)


def spoil(how):
    o = good()
    how(o)
    return o


def _set(path, value):
    def how(o):
        *head, last = path
        for key in head:
            o = o[key]
        o[last] = value
    return how


def _delete(path):
    def how(o):
        *head, last = path
        for key in head:
            o = o[key]
        del o[last]
    return how


HUGE = 10 ** 6
MALFORMED = {
    "not a dict": lambda: None,
    "a list": lambda: [1, 2],
    "no facts": lambda: spoil(_delete(["facts"])),
    "no end": lambda: spoil(_delete(["end"])),
    "an unknown end": lambda: spoil(_set(["end"], "passed")),
    "facts not a list": lambda: spoil(_set(["facts"], {"0": 1})),
    "another check's": lambda: spoil(_set(["check"], "check_direct_term")),
    "seed a string": lambda: spoil(_set(["seed"], "0")),
    "a fact not a dict": lambda: spoil(_set(["facts", 0], "output")),
    "a fact of another name": lambda: spoil(_set(["facts", 0, "fact"], "value")),
    "an output missing": lambda: spoil(_delete(["facts", 1, "output"])),
    "tensor flag not a bool": lambda: spoil(_set(["facts", 1, "output", "tensor"], 1)),
    "shape not a list": lambda: spoil(_set(["facts", 1, "output", "shape"], "2x4x5x5")),
    "shape of negative sizes": lambda: spoil(_set(["facts", 1, "output", "shape"], [-2, 4, 5, 5])),
    "a shape too large": lambda: spoil(_set(["facts", 1, "output", "shape"], [2 ** 30] * 8)),
    "ragged data": lambda: spoil(lambda o: o["facts"][1]["output"]["data"][0].pop()),
    "data of another shape": lambda: spoil(_set(["facts", 1, "output", "shape"], [2, 4, 5, 6])),
    "data of strings": lambda: spoil(_set(["facts", 1, "output", "data"], [[[["0"] * 5] * 5] * 4] * 2)),
    "data of bools": lambda: spoil(_set(["facts", 1, "output", "data"], [[[[True] * 5] * 5] * 4] * 2)),
    "data of a huge number": lambda: spoil(_set(["facts", 1, "output", "data"], [[[[10 ** 400] * 5] * 5] * 4] * 2)),
    "no data": lambda: spoil(_set(["facts", 1, "output", "data"], None)),
    "a huge flat data list": lambda: spoil(_set(["facts", 1, "output", "data"], [0.0] * HUGE)),
    "a million facts": lambda: spoil(_set(["facts"], [{"fact": "output"}] * HUGE)),
    "a huge message": lambda: spoil(lambda o: o.update(end="raised", facts=[], raised={"type": "E", "message": "x" * HUGE})),
    "raised without what": lambda: spoil(lambda o: o.update(end="raised", facts=[])),
    "deeply nested data": lambda: spoil(_set(["facts", 1, "output", "data"], json.loads("[" * 5000 + "]" * 5000))),
    "too few facts": lambda: spoil(lambda o: o["facts"].pop()),
    "facts after the last": lambda: spoil(lambda o: o["facts"].append(o["facts"][-1])),
    "ends raised after a pass": lambda: spoil(lambda o: o.update(end="raised", raised={"type": "E", "message": ""})),
}


@pytest.mark.parametrize("what", MALFORMED)
def test_an_observation_the_judge_cannot_read_fails_clearly(what):
    observation = MALFORMED[what]()
    with pytest.raises(AssertionError) as e:
        I.judge("check_exclusive_gating", observation, 0)
    assert flat(e.value).startswith(f"check_exclusive_gating: {grading.UNREADABLE} (")
    assert "Hint:" in str(e.value) and len(str(e.value)) < 2000


@pytest.mark.parametrize("name, student", [(n, s) for n, s, w in CASES if w is None])
def test_every_graders_facts_are_read_with_their_types(name, student):
    """Each field of each fact, set to a value of another type, fails clearly (never a crash, never a pass)."""
    observation = json.loads(json.dumps(I.observe(name, student, 0)))
    for i, fact in enumerate(observation["facts"]):
        for key, value in fact.items():
            other = "text" if not isinstance(value, str) else 7
            spoilt = copy.deepcopy(observation)
            spoilt["facts"][i][key] = other
            said = judged(name, spoilt, 0)
            assert said != "passed" and grading.UNREADABLE in flat(said), (i, key, said)


# ---- what the observer records -------------------------------------------------------------------------------

def test_observe_never_raises_and_names_what_the_student_raised():
    o = I.observe("check_direct_term", raising, 0)
    assert o["end"] == "raised" and o["facts"] == []
    assert o["raised"] == {"type": "TypeError", "message": "a bug of the student's"}
    with pytest.raises(AssertionError) as e:  # in the notebook the student's traceback is chained
        I.check_direct_term(raising)
    assert isinstance(e.value.__cause__, TypeError)
    with pytest.raises(ValueError, match="no implementation grader"):
        I.observe("check_nothing", raising, 0)
    with pytest.raises(ValueError, match="seed"):
        I.observe("check_direct_term", math.prod, -1)


def test_odd_outputs_are_recorded_and_judged():
    """NaN survives the round trip; a huge tensor keeps only its shape; a number that cannot be printed or
    converted is 'not a number'."""
    nan = judged("check_exclusive_gating", json.loads(json.dumps(good(student=lambda x, *a: x * math.nan))), 0)
    assert "differs from Fig 2(c) by up to nan" in flat(nan)
    huge = good(student=lambda *a: torch.zeros(300, 300))
    assert huge["facts"][0]["output"]["data"] is None
    assert "output shape (300, 300), expected (2, 4, 5, 5)" in flat(judged("check_exclusive_gating", huge, 0))

    class Odd:
        def __float__(self):
            raise ZeroDivisionError

        def __repr__(self):
            raise RuntimeError
    said = judged("check_direct_term", I.observe("check_direct_term", lambda lams: Odd(), 0), 0)
    assert "direct_term returned Odd <Odd that cannot be printed>, not a number" in flat(said)


def test_the_graders_leave_the_thread_count_alone():
    old = torch.get_num_threads()
    I.judge("check_gated_residual", I.observe("check_gated_residual", Gated, 0), 0)
    assert torch.get_num_threads() == old
