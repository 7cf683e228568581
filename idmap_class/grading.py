"""The graders' shared machinery, and grading in two halves: *observe* where the student's code
runs, *judge* where the marks are computed.

What every grader uses (the implementation and the ablation exercises):

- :func:`grader` makes a check's notebook face: ``check(student)`` prints ``PASSED`` or ``NOT
  ATTEMPTED`` (the stub still raises ``NotImplementedError``) or raises ``AssertionError``;
  ``check.status(student)`` returns "passed" or "not attempted" instead (for batch grading);
- :func:`fail` raises that ``AssertionError``: what differs, then a hint, each wrapped to
  :data:`WIDTH`; :func:`print_wrapped` prints a wrapped line; :func:`wrap` wraps one;
- :func:`one_thread`: the graders' tensors are tiny, one thread is fastest.

Grading in two halves. A student can patch the graders in their own kernel (``I._close = lambda *a,
**k: True``), so a batch grader must not compute marks there. Each implementation grader is split:

- an **observer** ``observe(student, seed, note, **options)`` runs in the student's process (a
  sandbox): it builds the grader's inputs from ``seed``, calls the student's code and records what
  it saw as a sequence of *facts*, ``note(name, **fields)``, in the order the judge reads them.
  :func:`record` runs it and never lets the student's exception out: the observation (a dict that
  ``json`` round-trips exactly, NaN and inf included) is ::

      {"check": "check_x", "seed": 0, "facts": [{"fact": name, ...fields}, ...],
       "end": "done" | "not attempted" | "raised",
       "raised": {"type": "TypeError", "message": "..."}}

  ("raised" only when end is "raised"); the facts stop where the student's code raised.
- a **judge** ``judge(tape, seed, **options) -> detail`` runs in the trusted grader: it rebuilds the
  reference from ``seed`` and reads the facts in order from a :class:`Tape`, failing (:func:`fail`)
  with the grader's messages. Reading past the last fact fails with the student's exception ("your
  code raised ...") or raises ``NotImplementedError`` (not attempted), just where the one-process
  grader met it. :func:`read` runs a judge: any observation the judge cannot read (a missing fact or
  field, a wrong type, a list too long, a tensor whose data is not its shape) fails with "the grader
  could not read this submission's observation", never a crash.

Encoded values in facts: :func:`encode` (a student's output: ``{"tensor": true, "type", "shape",
"data"}`` with the data as nested lists of float64, omitted above :data:`MAX_NUMEL` entries, or
``{"tensor": false, "type"}``), :func:`number` (a student's scalar: its type, repr, float value and
type facts).
"""
from __future__ import annotations

import builtins
import functools
import json
import math
import textwrap
from collections import namedtuple

import torch

from idmap_lib.engine.device import threads
from .observers import (MAX_NUMEL, MAX_SEED, _text, check_seed, encode, jsonable,  # noqa: F401
                        number, record)

WIDTH = 96  # messages are wrapped to this many characters (the book's output boxes, terminals)
MAX_FACTS = 200  # an observation's facts (the longest grader notes 17)
MAX_TEXT = 4000  # characters of one observed string
UNREADABLE = "the grader could not read this submission's observation"
# the type names a message may repeat (any other name is the student's own choice of text)
KNOWN_TYPES = frozenset(dir(builtins)) | frozenset(
    n for n in dir(torch.nn) if isinstance(getattr(torch.nn, n), type)) | {
    "Tensor", "NoneType", "function", "builtin_function_or_method", "method", "generator",
    "float64", "float32", "int64", "bool_", "ndarray", "module", "type"}


def shown_type(name):
    """A type name as a message may show it: a builtin, torch or nn name, else 'another type'."""
    return name if isinstance(name, str) and name in KNOWN_TYPES else "object of another type"


# ---- messages ------------------------------------------------------------------------------------

def wrap(text):
    """`text` wrapped to WIDTH characters, continuation lines indented."""
    return textwrap.fill(text, WIDTH, subsequent_indent="    ", break_long_words=False,
                         break_on_hyphens=False)


def print_wrapped(text):
    """Print `text` wrapped."""
    print(wrap(text))


def fail(check, what, hint, cause=None):
    """Raise the grader's AssertionError: "<check>: <what>" then "Hint: <hint>", each wrapped.
    `cause` (the student's own exception, in their kernel) is chained so that its traceback
    shows."""
    error = AssertionError(wrap(f"{check}: {what}") + "\n" + wrap(f"Hint: {hint}"))
    if cause is None:
        raise error
    raise error from cause


def one_thread():
    """The graders' tensors are tiny: one thread is much faster than several (per-op overhead), and
    leaves the other cores alone."""
    return threads(1)


def grader(thing):
    """Decorator. The check prints PASSED and returns None, raises AssertionError, or (stub code
    that raises NotImplementedError) prints NOT ATTEMPTED and returns None. `check.status(student)`
    does the same but returns "passed" or "not attempted" (for batch grading). `thing` names what
    the student writes, for NOT ATTEMPTED."""
    def decorate(check):
        @functools.wraps(check)
        def status(student, *args, **kwargs):
            try:
                with one_thread():
                    detail = check(student, *args, **kwargs)
            # its message, where the check says what is still a stub
            except NotImplementedError as e:
                print_wrapped(f"NOT ATTEMPTED {check.__name__}: "
                    + (str(e) or f"{thing} still raises NotImplementedError "
                    "(the stub). Write it, then run this cell again."))
                return "not attempted"
            print_wrapped(f"PASSED {check.__name__}: {detail}")
            return "passed"

        @functools.wraps(check)
        def run(student, *args, **kwargs):
            status(student, *args, **kwargs)

        run.status = status
        return run
    return decorate


# ---- the judging half (the trusted process) ------------------------------------------------------

class Malformed(ValueError):
    """The observation is not what the judge reads (it comes from an untrusted process)."""


Number = namedtuple("Number", "type repr value is_int is_float numel")  # a decoded number(...)


class Fact:
    """One fact of an observation, read with the type each field must have (else Malformed)."""

    def __init__(self, data, where):
        if not isinstance(data, dict):
            raise Malformed(f"{where} is a {type(data).__name__}, not a dict")
        self.data, self.where = data, where

    def _get(self, key, types, what, none=False):
        if key not in self.data:
            raise Malformed(f"{self.where} has no {key!r}")
        v = self.data[key]
        if v is None and none:
            return None
        if not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
            raise Malformed(f"{self.where}: {key!r} is a {type(v).__name__}, expected {what}")
        return v

    def flag(self, key):
        return self._get(key, (bool,), "true or false")

    def integer(self, key, none=False):
        v = self._get(key, (int,), "an integer", none)
        if v is not None and abs(v) >= MAX_SEED:
            raise Malformed(f"{self.where}: {key!r} is out of range")
        return v

    def real(self, key, none=False):
        v = self._get(key, (int, float), "a number", none)
        return None if v is None else float(self.integer(key)) if isinstance(v, int) else v

    def text(self, key):
        v = self._get(key, (str,), "a string")
        if len(v) > MAX_TEXT:
            raise Malformed(f"{self.where}: {key!r} is longer than {MAX_TEXT} characters")
        return v

    def shape(self, key):
        v = self._get(key, (list,), "a list of sizes")
        if len(v) > 8 or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2 ** 31
                                 for d in v):
            raise Malformed(f"{self.where}: {key!r} is not a tensor shape")
        return tuple(v)

    def plain(self, key, depth=2):
        """A small JSON value with its lists as tuples (ints, strings, at most `depth` levels of
        lists of 8)."""
        def tup(v, d):
            if isinstance(v, list) and d > 0 and len(v) <= 8:
                return tuple(tup(x, d - 1) for x in v)
            if v is None or isinstance(v, (int, str)) and not (isinstance(v, str) and len(v) > 100):
                return v
            raise Malformed(f"{self.where}: {key!r} is not a small value")
        return tup(self._get(key, (list, int, str), "a value", none=True), depth)

    def number(self, key):
        f = Fact(self._get(key, (dict,), "a number's facts"), f"{self.where}: {key!r}")
        return Number(f.text("type"), f.text("repr"), f.real("float", none=True), f.flag("is_int"),
                      f.flag("is_float"), f.integer("numel", none=True))

    def tensor(self, key):
        """The student's output: a float64 tensor (a 'meta' one, only its shape, above MAX_NUMEL
        entries), or the type name (a str) of what was not a tensor."""
        f = Fact(self._get(key, (dict,), "an encoded output"), f"{self.where}: {key!r}")
        if not f.flag("tensor"):
            return f.text("type")
        shape = f.shape("shape")
        n = math.prod(shape)
        if n > MAX_NUMEL:
            if n >= MAX_SEED:
                raise Malformed(f"{f.where}: the shape {shape} is too large")
            return torch.empty(shape, dtype=torch.float64, device="meta")
        return torch.tensor(_flatten(f._get("data", (list, int, float), "nested lists"), shape,
                                     f.where),
                            dtype=torch.float64).reshape(shape)


def _flatten(data, shape, where):
    """The entries of nested lists `data` of exactly `shape`, as floats."""
    level = [data]
    for n in shape:
        if not all(isinstance(item, list) and len(item) == n for item in level):
            raise Malformed(f"{where}: the data is not nested lists of shape {shape}")
        level = [x for item in level for x in item]
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and abs(x) < 2 ** 1000
               for x in level):
        raise Malformed(f"{where}: the data holds something other than numbers")
    return [float(x) for x in level]


class Tape:
    """An observation's facts, read in order by a judge (see the module's docstring)."""

    def __init__(self, check, observation, seed, cause=None):
        top = Fact(observation, "the observation")
        if top.text("check") != check:
            raise Malformed(f"it is an observation of {top.text('check')!r}, not of {check!r}")
        if top.integer("seed") != seed:
            raise Malformed(f"it was made with seed {top.integer('seed')}, not {seed}")
        self.facts = top._get("facts", (list,), "a list of facts")
        if len(self.facts) > MAX_FACTS:
            raise Malformed(f"it has {len(self.facts)} facts, more than {MAX_FACTS}")
        self.end = top.text("end")
        if self.end not in ("done", "not attempted", "raised"):
            raise Malformed(f"its end {self.end!r} is not done, not attempted or raised")
        if self.end == "raised":
            raised = Fact(top._get("raised", (dict,), "the exception's type and message"),
                          "its 'raised'")
            self.raised = raised.text("type"), raised.text("message")
        self.check, self.cause, self.i = check, cause, 0

    def next(self, name):
        """The next fact, which must be `name`; past the last one, the student's exception or
        NotImplementedError."""
        if self.i < len(self.facts):
            self.i += 1
            fact = Fact(self.facts[self.i - 1], f"fact {self.i} ({name})")
            if fact.data.get("fact") != name:
                raise Malformed(f"fact {self.i} is not {name!r}")
            return fact
        if self.end == "raised":
            kind, _ = self.raised
            # the type only where it is Python's or torch's: the message is the student's text
            fail(self.check, f"your code raised {shown_type(kind)}",
                 "call it yourself on a small input to see the "
                 "traceback, fix it, then run this cell again.", self.cause)
        if self.end == "not attempted":
            raise NotImplementedError
        raise Malformed(f"it ends before the {name!r} fact")

    def finish(self):
        """After a pass: every fact was read and nothing was left out."""
        if self.i != len(self.facts) or self.end != "done":
            raise Malformed("it goes on after the last fact the grader reads")


def read(check, judge, observation, seed, cause=None, **options):
    """`judge(Tape(observation), seed, **options)` -> its detail; AssertionError (the grader's
    message, or UNREADABLE for an observation it cannot read) or NotImplementedError (not
    attempted)."""
    check_seed(seed)
    try:
        tape = Tape(check, observation, seed, cause)
        detail = judge(tape, seed, **options)
        tape.finish()
        return detail
    except (AssertionError, NotImplementedError):
        raise
    # Malformed, or a value the judge could not use: the submission's fault
    except Exception as e:  # noqa: BLE001
        fail(check, UNREADABLE,  # never its detail: the observation's text is the submission's
             "run the notebook again from the top (restart the kernel, "
             "run all) and hand it in again; if this persists, tell your instructor.")


def graded(check, observer, judge, student, seed, **options):
    """The one-process grader the notebook calls: judge(observe(student)) through a JSON round trip
    (what a batch grader reads), the student's exception chained to a "your code raised" failure."""
    observation, raised = record(check, observer, student, seed, **options)
    return read(check, judge, json.loads(json.dumps(observation)), seed, raised, **options)


def split(thing, observer):
    """Decorator: a judge ``judge(tape, seed, **options)`` becomes the notebook's check
    ``check(student, seed=0, **options)``, judge(observe(student)) in one process (:func:`graded`),
    with :func:`grader`'s PASSED / NOT ATTEMPTED and ``.status``; ``check.observer`` and
    ``check.judge`` are the two halves. The judge's name is the check's, its docstring the student's
    help."""
    def decorate(judge):
        def check(student, seed=0, **options):
            return graded(judge.__name__, observer, judge, student, seed, **options)
        check.__name__, check.__qualname__, check.__doc__ = (judge.__name__, judge.__qualname__,
                                                             judge.__doc__)
        check.__module__ = judge.__module__
        run = grader(thing)(check)
        run.observer, run.judge = observer, judge
        return run
    return decorate

