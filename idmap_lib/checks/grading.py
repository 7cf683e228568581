"""The graders' shared machinery (the implementation and the ablation exercises):

- :func:`grader` makes a check's notebook face: ``check(student)`` prints ``PASSED`` or ``NOT ATTEMPTED`` (the stub
  still raises ``NotImplementedError``) or raises ``AssertionError``; ``check.status(student)`` returns "passed" or
  "not attempted" instead (for batch grading);
- :func:`fail` raises that ``AssertionError``: what differs, then a hint, each wrapped to :data:`WIDTH`;
  :func:`say` prints a wrapped line; :func:`wrap` wraps one;
- :func:`one_thread`: the graders' tensors are tiny, one thread is fastest.
"""
from __future__ import annotations

import contextlib
import functools
import textwrap

import torch

WIDTH = 96  # messages are wrapped to this many characters (the book's output boxes, terminals)

# ---- messages ------------------------------------------------------------------------------------------------

def wrap(text):
    """`text` wrapped to WIDTH characters, continuation lines indented."""
    return textwrap.fill(text, WIDTH, subsequent_indent="    ", break_long_words=False, break_on_hyphens=False)


def say(text):
    """Print `text` wrapped."""
    print(wrap(text))


def fail(check, what, hint):
    """Raise the grader's AssertionError: "<check>: <what>" then "Hint: <hint>", each wrapped."""
    raise AssertionError(wrap(f"{check}: {what}") + "\n" + wrap(f"Hint: {hint}"))


@contextlib.contextmanager
def one_thread():
    """The graders' tensors are tiny: one thread is much faster than several (per-op overhead), and leaves the
    other cores alone."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def grader(thing):
    """Decorator. The check prints PASSED and returns None, raises AssertionError, or (stub code that raises
    NotImplementedError) prints NOT ATTEMPTED and returns None. `check.status(student)` does the same but returns
    "passed" or "not attempted" (for batch grading). `thing` names what the student writes, for NOT ATTEMPTED."""
    def decorate(check):
        @functools.wraps(check)
        def status(student, *args, **kwargs):
            try:
                with one_thread():
                    detail = check(student, *args, **kwargs)
            except NotImplementedError:
                say(f"NOT ATTEMPTED {check.__name__}: {thing} still raises NotImplementedError "
                    "(the stub). Write it, then run this cell again.")
                return "not attempted"
            say(f"PASSED {check.__name__}: {detail}")
            return "passed"

        @functools.wraps(check)
        def run(student, *args, **kwargs):
            status(student, *args, **kwargs)

        run.status = status
        return run
    return decorate
