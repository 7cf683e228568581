"""The observing half of the implementation graders and the inputs they give the student's code: the
only grader code that runs beside a student's code.

Self-contained (torch and the standard library, no idmap_lib), so that the grading sandbox holds it
and not the library whose references the judges compare with (:mod:`.box` runs it there; the judges,
:mod:`.implementation` and :mod:`.module_checks`, import the same inputs in the trusted process: one
seed gives both sides the same tensors). An observer ``observe(student, seed, note)`` builds the
inputs from ``seed``, calls the student's code and notes what it saw as facts, ``note(name,
**fields)``, in the order the judge reads them; :func:`record` runs it (see :mod:`.grading` for the
observation's form).
"""
from __future__ import annotations

import math
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

MAX_NUMEL = 65536  # entries of one observed tensor kept (the graders' outputs have < 1000)
MAX_SEED = 2 ** 62  # seeds are 0 <= seed < MAX_SEED (the graders add small offsets)


# ---- recording -----------------------------------------------------------------------------------

def check_seed(seed):
    """The seed every input and reference derives from: an int, 0 <= seed < MAX_SEED."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < MAX_SEED:
        raise ValueError(f"seed must be an int in [0, 2**62), got {seed!r}")
    return seed


def _text(value, limit):
    """str(value), never raising, at most `limit` characters, encodable as UTF-8."""
    try:
        s = value if isinstance(value, str) else str(value)
    except Exception:  # noqa: BLE001 - a student's __str__
        s = "<cannot be printed>"
    s = s.encode("utf-8", "replace").decode("utf-8")
    return s if len(s) <= limit else s[:limit - 3] + "..."


def _repr(value, limit=1000):
    try:
        return _text(repr(value), limit)
    except Exception:  # noqa: BLE001
        return "<cannot be printed>"


def encode(value):
    """A student's output as JSON: a tensor's shape and float64 data (nested lists; omitted above
    MAX_NUMEL entries: the judge then needs only its shape), or the type of anything else."""
    if not isinstance(value, torch.Tensor):
        return {"tensor": False, "type": type(value).__name__}
    t = value.detach()
    return {"tensor": True, "type": type(value).__name__, "shape": list(t.shape),
            "data": t.cpu().double().tolist() if t.numel() <= MAX_NUMEL else None}


def jsonable(value, depth=2):
    """A small value (ints, strings, None, tuples of them: a layer's kernel size...) as JSON."""
    if isinstance(value, (tuple, list)) and depth > 0:
        return [jsonable(v, depth - 1) for v in value[:8]]
    if value is None or isinstance(value, (int, str)):
        return value if not isinstance(value, str) else _text(value, 100)
    return _repr(value, 100)


def number(value):
    """A student's scalar answer as JSON: its type and repr, float(value) (None if that fails), and
    whether it is an int, a float, a tensor (with how many entries)."""
    try:
        f = float(value)
    except Exception:  # noqa: BLE001 - TypeError, OverflowError, a student's __float__
        f = None
    tensor = isinstance(value, torch.Tensor)
    return {"type": type(value).__name__, "repr": _repr(value), "float": f,
            "is_int": isinstance(value, int), "is_float": isinstance(value, float),
            "numel": value.numel() if tensor else None}


def record(check, observer, student, seed, **options):
    """Run `observer(student, seed, note, **options)` and return (observation, the student's
    exception or None). Never raises for the student's code: NotImplementedError ends the facts as
    "not attempted", any other exception as "raised" (its type recorded)."""
    facts = []

    def note(name, **fields):
        facts.append({"fact": name, **fields})

    observation = {"check": check, "seed": check_seed(seed), "facts": facts, "end": "done"}
    try:
        observer(student, seed, note, **options)
    except NotImplementedError:
        observation["end"] = "not attempted"
    except Exception as e:  # noqa: BLE001 - the student's code: recorded, judged elsewhere
        observation["end"] = "raised"
        observation["raised"] = {"type": type(e).__name__, "message": _text(e, 300)}
        return observation, e
    return observation, None


# ---- the inputs, from the seed -------------------------------------------------------------------

def gen(seed):
    return torch.Generator().manual_seed(seed)


def randn(*shape, seed=0, scale=1.0):
    return torch.randn(*shape, generator=gen(seed), dtype=torch.float64) * scale


def count(module):
    return sum(p.numel() for p in module.parameters())


def randomise_bn(bn, seed):
    """Non-trivial BN parameters and running statistics, so that every BN really matters."""
    c = bn.num_features
    with torch.no_grad():
        bn.weight.copy_(0.5 + torch.rand(c, generator=gen(seed), dtype=torch.float64))
        bn.bias.copy_(randn(c, seed=seed + 1, scale=0.5))
        bn.running_mean.copy_(randn(c, seed=seed + 2, scale=0.5))
        bn.running_var.copy_(0.5 + 1.5 * torch.rand(c, generator=gen(seed + 3),
                                                    dtype=torch.float64))


# attribute -> index in the residual branch of a full pre-activation unit (BN, ReLU, conv, BN, ReLU,
# conv: make_unit("full_preact").residual)
PREACT_LAYOUT = {"bn1": 0, "conv1": 2, "bn2": 3, "conv2": 5}


def branch(channels, seed, randomised=False):
    """A full pre-activation residual branch F in float64, eval mode (a fixed function), laid out
    as idmap_lib's; `randomised`: every BN with random parameters and statistics (exercise 1's
    weights)."""
    torch.manual_seed(seed)
    conv = lambda: nn.Conv2d(channels, channels, 3, padding=1, bias=False)  # noqa: E731
    F_ = nn.Sequential(nn.BatchNorm2d(channels), nn.ReLU(), conv(), nn.BatchNorm2d(channels),
                       nn.ReLU(), conv()).double()
    if randomised:
        for name, i in PREACT_LAYOUT.items():
            if name.startswith("bn"):
                randomise_bn(F_[i], seed + 10 * i)
    return F_.eval()


def preact_input(c, seed, train):
    return randn(3, c, 6, 6, seed=seed + 100 * c + train)


GATE_BIASES = (-6.0, 0.0, 2.0)  # b_g near these (random W_g); then the limits -40 and +40


def gating_inputs(c, seed):
    """x, F(x), W_g and the five gate biases, from the seed."""
    x, Fx = randn(2, c, 5, 5, seed=seed), randn(2, c, 5, 5, seed=seed + 1)
    full = lambda b: torch.full((c,), b, dtype=torch.float64)  # noqa: E731
    return (x, Fx, randn(c, c, 1, 1, seed=seed + 2, scale=0.5),
            [full(b) + randn(c, seed=seed + 3, scale=0.1) for b in GATE_BIASES]
            + [full(-40.0), full(40.0)])


def direct_term_cases(seed):
    g = gen(seed)
    return {
        "one unit, lambda = 0.5": [0.5],
        "50 units of lambda = 0.9": [0.9] * 50,
        "20 units of lambda = 1.2": [1.2] * 20,
        "30 random lambdas in [0.6, 1.4]": (0.6 + 0.8 * torch.rand(30, generator=g,
                                                                   dtype=torch.float64)).tolist(),
        "no units (l = L)": [],
    }


def vanishing_cases(seed):
    """Five fixed (lam, eps) and one drawn from the seed (never where log(eps)/log(lam) is within
    1e-3 of a whole number: there a right answer's float arithmetic could round either way)."""
    rng = random.Random(seed)
    while True:
        lam, eps = round(rng.uniform(0.5, 0.99), 3), float(f"{10 ** rng.uniform(-4, -0.5):.1g}")
        ratio = math.log(eps) / math.log(lam)
        if abs(ratio - round(ratio)) > 1e-3:
            return [(0.9, 1e-3), (0.5, 1e-3), (0.99, 0.5), (0.999, 1e-2), (0.5, 0.3), (lam, eps)]


GATES = (1.0, 0.3, 2.5, 0.0, -1.5)  # the values of k the gated outputs are compared at
TRUNCATION_CASES = ((4, 4, 1), (8, 8, 1), (4, 8, 2))  # (in channels, out channels, stride)


class _Sum(nn.Module):
    """The identity shortcut y = h(s) + r, h subsampling and appending zero channels (option A)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.extra, self.stride = cout - cin, stride

    def forward(self, s, r):
        s = s[:, :, ::self.stride, ::self.stride]
        return (F.pad(s, (0, 0, 0, 0, 0, self.extra)) if self.extra else s) + r


class OriginalUnit(nn.Module):
    """Paper A Fig 4(a), x_{l+1} = ReLU(h(x_l) + F(x_l)), with the attributes and parameter names of
    idmap_lib's ``make_unit("original", "identity", cin, cout, stride)`` (the judge loads its state
    into that)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.preact = nn.Identity()
        self.residual = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, padding=1, bias=False),
                                      nn.BatchNorm2d(cout), nn.ReLU(),
                                      nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                                      nn.BatchNorm2d(cout))
        self.shortcut, self.post = _Sum(cin, cout, stride), nn.ReLU()

    def forward(self, x):
        x = self.preact(x)
        return self.post(self.shortcut(x, self.residual(x)))


def truncation_input(n, seed):
    """Unit n (an original unit in train mode, float64) and its input, as the student's code gets
    them."""
    cin, cout, stride = TRUNCATION_CASES[n]
    torch.manual_seed(seed + n)
    unit = OriginalUnit(cin, cout, stride).double().train()
    return unit, randn(4, cin, 8, 8, seed=seed + n) + 0.5 * ((n + 1) % 2)


# ---- the observers -------------------------------------------------------------------------------

def observe_full_preact_unit(PreActUnit, seed, note, channels=(4, 8)):
    """Build each unit, copy the reference's weights into its bn1, conv1, bn2, conv2, run it in eval
    and train."""
    note("factory", instance=isinstance(PreActUnit, nn.Module))
    if isinstance(PreActUnit, nn.Module):
        return
    for c in channels:
        ours, student = branch(c, seed + c, randomised=True), PreActUnit(c)
        note("unit", module=isinstance(student, nn.Module), type=type(student).__name__)
        if not isinstance(student, nn.Module):
            return
        student.double()  # before loading, so the float64 weights arrive unrounded
        for name, i in PREACT_LAYOUT.items():
            theirs, layer = getattr(student, name, None), ours[i]
            kind = isinstance(theirs, type(layer))
            conv = ({"geometry": jsonable((theirs.in_channels, theirs.out_channels,
                                           theirs.kernel_size, theirs.stride, theirs.padding)),
                     "bias": theirs.bias is not None} if kind and isinstance(layer, nn.Conv2d)
                    else {})
            note(name, present=theirs is not None, type=type(theirs).__name__, kind=kind, **conv)
            if not kind:
                return
            theirs.load_state_dict(layer.state_dict())
        note("parameters", count=count(student))
        for train in (False, True):
            x = preact_input(c, seed, train)
            student.train(train)
            with torch.no_grad():
                x_in = x.clone()
                got = student(x_in)
            note("output", in_place=not torch.equal(x_in, x), output=encode(got))


def observe_exclusive_gating(exclusive_gating, seed, note, channels=4):
    x, Fx, W_g, biases = gating_inputs(channels, seed)
    for b_g in biases:
        note("output", output=encode(exclusive_gating(x.clone(), Fx.clone(), W_g.clone(),
                                                      b_g.clone())))


def observe_direct_term(direct_term, seed, note):
    for lams in direct_term_cases(seed).values():
        note("value", value=number(direct_term(list(lams))))


def observe_vanishing_depth(vanishing_depth, seed, note):
    for lam, eps in vanishing_cases(seed):
        note("value", value=number(vanishing_depth(lam, eps)))


def observe_gated_residual(GatedResidual, seed, note, channels=4):
    student = GatedResidual(branch(channels, seed))
    note("module", module=isinstance(student, nn.Module), type=type(student).__name__)
    k = getattr(student, "k", None)
    param = isinstance(k, nn.Parameter)
    note("k", parameter=param, shape=list(k.shape) if param else [],
         value=float(k.detach()) if param and k.numel() == 1 else None)
    if not param or k.numel() != 1 or not isinstance(student, nn.Module):
        return
    note("parameters", count=count(student))
    student.double().eval()
    k = student.k  # the same parameter after .double() (converted in place), fetched again
    x = randn(2, channels, 5, 5, seed=seed + 1)
    for kv in GATES:
        with torch.no_grad():
            k.fill_(kv)
            note("output", output=encode(student(x.clone())))
    for kv in (1.0, -1.0):
        with torch.no_grad():
            k.fill_(kv)
        k.grad = None
        student(x.clone()).sum().backward()
        note("gradient", grad=None if k.grad is None else float(k.grad))


def observe_truncation_rate(truncation_rate, seed, note):
    for n in range(len(TRUNCATION_CASES)):
        unit, x = truncation_input(n, seed)
        note("rate", rate=number(truncation_rate(unit, x.clone())), eval=not unit.training)


OBSERVERS = {"check_full_preact_unit": observe_full_preact_unit,
             "check_exclusive_gating": observe_exclusive_gating,
             "check_direct_term": observe_direct_term,
             "check_vanishing_depth": observe_vanishing_depth,
             "check_gated_residual": observe_gated_residual,
             "check_truncation_rate": observe_truncation_rate}


def observe(check_name, student, seed) -> dict:
    """The observation of grader `check_name` (a key of OBSERVERS) on `student` at `seed`."""
    if check_name not in OBSERVERS:
        raise ValueError(f"no implementation grader {check_name!r}")
    return record(check_name, OBSERVERS[check_name], student, seed)[0]
