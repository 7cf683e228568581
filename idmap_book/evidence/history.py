"""Each rule's history, from the records: the commit at which a claim's present rule (and the
synthesis statuses' rule) took its form, when its data were first recorded, and, where the rule
took its form after some of its data, the verdict under the rule it replaced, where today's code can
still read it. The pages never type "fixed before its runs": ``preregistration`` says it only of
the claims the records bear out, and names the others.

``FORMS`` is the one typed part: each commit that gave a rule its present form, with its date, both
checked against ``git log`` by the tests. Everything else (which runs existed, their dates, the
verdicts) is read from the recorded runs.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass

from .claim_words import listed, words
from .claims import CLAIMS, CLAIMS_BY_KEY, FP32_CLAIMS, PROBES
from .judge import evaluate
from .metrics import LR_JUMP, stuck_before_jump_by_loss
from .runs import seed_runs
from .seeds import ALL_SEEDS

STATUSES = "synthesis statuses"  # the rule of the synthesis page's statuses (synthesis.status)


@dataclass(frozen=True)
class Form:
    commit: str      # the commit that gave the rule this form (short hash)
    date: str        # its commit date, UTC (checked against git by the tests)
    what: str        # what took this form, in words
    keys: tuple      # the claims whose rule it set (or STATUSES)
    earlier: str = ""  # how the rule it replaced reads the same runs, "" where today's code cannot
    introduced: tuple = ()  # the claims first written in this commit: they replaced no rule


def _jump_claims() -> tuple:
    return tuple(c.key for c in CLAIMS if any(t.metric in LR_JUMP for t in c.tests))


FORMS = (
    Form("a542be0", "2026-12-03T23:57:19+00:00",
         "both sides judged alike, every run counted as what it measured, a run left out only "
         "for what it did, a start never reached counted at the run's length, by ranks",
         tuple(c.key for c in CLAIMS + PROBES if c not in FP32_CLAIMS)),
    Form("44ebbfe", "2026-12-04T00:28:45+00:00",
         "the swap claims' seeds, 0-2 and then 3-4 where three leave a part open",
         tuple(c.key for c in CLAIMS if c.key.startswith("swap_"))),
    Form("271c844", "2026-12-04T10:04:56+00:00",
         "the float32 check by ranks, a diverged run the largest rise",
         tuple(c.key for c in FP32_CLAIMS)),
    Form("c223c2c", "2026-12-04T02:33:32+00:00",
         "a mechanism judged only by the swaps that change that one part", (STATUSES,),
         earlier="statuses over all rows"),
    Form("f909178", "2026-12-07T03:20:41+00:00",
         "a run stuck before the jump is one at chance by its training error whose loss has not "
         "fallen, no longer one whose loss is at chance", _jump_claims(), earlier="stuck by loss",
         introduced=("swap_jump_original_zero_gamma_scaled_input",
                     "swap_jump_separates_zero_gamma")),
)


def form_of(key: str) -> Form:
    """The form `key`'s rule has today: the last of FORMS that set it."""
    found = [f for f in FORMS if key in f.keys]
    if not found:
        raise KeyError(f"no rule form records {key!r}: add it to history.FORMS")
    return max(found, key=lambda f: f.date)


def _dates(runs) -> list[str]:
    return sorted(r["date"] for r in runs if r.get("date"))


def claim_runs(claim, out_dir=None) -> dict:
    """{variant: its recorded runs} of every variant a claim reads (all seeds recorded)."""
    return {v: seed_runs(claim.experiment, v, claim.scale, ALL_SEEDS, out_dir)[0]
            for v in claim.variants}


def record(key: str, out_dir=None, runs=None) -> dict:
    """{"form", "runs", "before", "first", "read_before", "fresh"} of a claim (or STATUSES, with its
    `runs` {row: runs} given): its rule's present form, how many of its runs are recorded and how
    many of them before that form, the date of the first, the variants with runs recorded before
    it and those with none recorded before it (``fresh``: the claim was written before their
    runs)."""
    form = form_of(key)
    runs = claim_runs(CLAIMS_BY_KEY[key], out_dir) if runs is None else runs
    dates = {v: _dates(rs) for v, rs in runs.items()}
    every = sorted(d for ds in dates.values() for d in ds)
    return {"form": form, "runs": len(every), "before": sum(d < form.date for d in every),
            "first": every[0] if every else None,
            "read_before": [v for v, ds in dates.items() if ds and ds[0] < form.date],
            "fresh": [v for v, ds in dates.items() if not ds or ds[0] >= form.date]}


def earlier_verdict(key: str, out_dir=None) -> str | None:
    """The claim's verdict under the rule its present form replaced, where today's code can read it
    (the loss-only "stuck before the jump"); None where it cannot."""
    if form_of(key).earlier != "stuck by loss":
        return None
    return evaluate(CLAIMS_BY_KEY[key], out_dir=out_dir, stuck=stuck_before_jump_by_loss).verdict


def _day(iso: str) -> str:
    return iso[:10]


def _both(key, out_dir=None, verdict=None, earlier=None) -> str:
    """The verdicts under the present rule and the one it replaced, in words."""
    if key != STATUSES:
        earlier = earlier_verdict(key, out_dir)
        verdict = verdict or evaluate(CLAIMS_BY_KEY[key], out_dir=out_dir).verdict
    if earlier is None:
        return "the rule it replaced is not in today's code"
    if earlier == verdict:
        return f"the rule it replaced gives the same verdict, *{verdict}*"
    return f"under the rule it replaced *{earlier}*, today *{verdict}*"


def _form_words(f: Form) -> str:
    return f"commit {f.commit}, {_day(f.date)}: {f.what}"


def after_data(key: str, out_dir=None, runs=None, verdict=None, earlier=None) -> str:
    """One sentence for a claim (or STATUSES) whose rule took its form after some of its data: when,
    after how many runs, and the verdicts under both rules where the earlier can be read; "" where
    the rule came first."""
    rec = record(key, out_dir, runs)
    if not rec["before"]:
        return ""
    return (f"its rule took its present form ({_form_words(rec['form'])}) after {rec['before']} "
            f"of its {rec['runs']} runs were recorded (the first on {_day(rec['first'])}); "
            + _both(key, out_dir, verdict, earlier))


def _runs_words(key, rec) -> str:
    e = CLAIMS_BY_KEY[key].experiment
    said = f"{rec['before']} of its {rec['runs']} runs recorded before"
    if rec["fresh"]:
        said += (f"; none then of {listed([words(e, v) for v in rec['fresh']])}, the runs it was "
                 f"written for")
    return said


def preregistration(keys, out_dir=None) -> str:
    """What the records say of the claims `keys`: how many took their present rule before any of
    their runs was recorded, and, grouped by the form their rule took, each that did not, with
    how many of its runs came first and its verdict under both rules. The one sentence a page may
    say about pre-registration."""
    recs = {k: record(k, out_dir) for k in keys}
    late = [k for k in keys if recs[k]["before"]]
    head = (f"Every test here ({len(keys)}) took its present rule before any of its runs was "
            f"recorded" if not late else
            "This test took its present rule after some of its runs were recorded"
            if len(keys) == 1 else
            f"{len(keys) - len(late)} of these {len(keys)} tests took their present rule before "
            f"any of their runs was recorded, {len(late)} after some were")
    groups = {}
    for k in late:
        groups.setdefault(recs[k]["form"], []).append(k)
    said = [head + "."]
    for form, ks in sorted(groups.items(), key=lambda g: g[0].date):
        each = [f"*{CLAIMS_BY_KEY[k].title}* ({_runs_words(k, recs[k])}"
                + (f"; {_both(k, out_dir)})" if form.earlier and k not in form.introduced
                   else ", first written then)" if k in form.introduced else ")") for k in ks]
        tail = "" if form.earlier else " The rule it replaced is not in today's code."
        said.append(f"At commit {form.commit} ({_day(form.date)}), {form.what}: "
                    + ", ".join(each) + "." + tail)
    return " ".join(said)


RULES = "When each test took its present rule, against when its runs were recorded"


def folded(markdown: str, label: str = RULES) -> str:
    """`markdown` folded under `label` in the book's fold style (a details element; its Markdown
    still rendered; a wide table in it scrolls inside the fold), so that a page's length does not
    grow with what a reader opens on demand. The block that scrolls takes the keyboard's focus
    (a region named by the fold's label: WCAG 2.1.1), so that its arrow keys scroll it too."""
    name = html.escape(re.sub(r"<[^>]+>|[*`]", "", label), quote=True)
    return (f'<details class="admonition hide above-output idmap-fold"><summary><p '
            f'class="admonition-title">{label}</p></summary>\n<div style="max-width: 100%; '
            f'overflow-x: auto" tabindex="0" role="region" aria-label="{name}">\n\n{markdown}\n\n'
            f'</div>\n</details>')
