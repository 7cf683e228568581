"""Score of the last mutmut run, per module, from mutmut's records in mutants/.

score = killed / (killed + survived), over the mutants that were run, leaving out those judged
equivalent in tests/mutation_equivalent.txt (one mutant name per line, then '#' and why). Timeouts
count as killed (the mutant made the tests hang: the suite noticed). Mutants mutmut has not run yet
("not checked") are counted apart, so a partial run says how partial it is. Survivors that are not
judged equivalent are listed.

Mutants of code that runs at import time are judged by tools/mutation_import_time.py instead (see
there).

`--draw N [--block B]` prints a simple random sample of N of the generated mutants (seeded: the same
N, block and mutants give the same draw) for `make mutation-sample`; `--sample N [--block B]` scores
that sample alone with the score's 95 % Wilson interval: an unbiased estimate of the whole run's
score for a fraction of its time -- as long as no test was written from that sample's survivors
(then draw the next block). `--within FILE` scores the mutants FILE names alone: where a run of a
sample stops partway, the rest it left is a stratum of its own, and a random sample of that stratum
(a seeded draw, run in full) estimates its score (tests/MUTATION.md, block 2).
"""
import argparse
import json
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

from mutation_import_time import import_time, verdicts

ROOT = Path(__file__).resolve().parents[1]
STATUS = {1: "killed", 3: "killed", 0: "survived", None: "not checked", 5: "no tests",
          33: "no tests",
          34: "skipped", 36: "timeout", -24: "timeout", 24: "timeout", 152: "timeout",
          255: "timeout"}
COLS = ["killed", "timeout", "survived", "equivalent", "no tests", "not checked", "suspicious"]


def names_in(path) -> list[str]:
    """The mutant names a file lists, one a line, '#' starting a comment."""
    return [n for line in Path(path).read_text().splitlines() if (n := line.split("#")[0].strip())]


def equivalent(path=ROOT / "tests" / "mutation_equivalent.txt"):
    return set(names_in(path)) if path.exists() else set()


def records(mutants=ROOT / "mutants"):
    """{mutant name: (module, exit code or None)} for every generated mutant: mutmut's verdicts, and
    for the mutants of import-time code (which mutmut cannot exercise) those of
    tools/mutation_import_time.py."""
    metas = sorted(mutants.glob("**/*.py.meta"))
    if not metas:
        sys.exit("no mutmut results in mutants/: run `make mutation` first")
    recs = {name: (meta.name[: -len(".py.meta")], code) for meta in metas
            for name, code in json.loads(meta.read_text())["exit_code_by_key"].items()}
    own = verdicts()
    for name in import_time(recs):
        recs[name] = (recs[name][0], {"killed": 1, "survived": 0}.get(own.get(name)))
    return recs


def draw(names, n, block=0):
    """Block `block` of simple random samples of n mutant names, disjoint: block b is drawn (seed b)
    from the names no earlier block holds. A block whose survivors were read to write tests no
    longer estimates the score without bias; the next block, drawn from the rest, does."""
    rest = set(names)
    if not 0 < n * (block + 1) <= len(rest):
        sys.exit(f"{block + 1} blocks of {n} do not fit in the {len(rest)} generated mutants")
    for b in range(block + 1):
        sample = sorted(random.Random(b).sample(sorted(rest), n))
        rest -= set(sample)
    return sample


def summarize(recs, eq):
    per, survivors = defaultdict(Counter), []
    for name, (module, code) in sorted(recs.items()):
        status = STATUS.get(code, "suspicious")
        if status == "survived" and name in eq:
            status = "equivalent"
        per[module][status] += 1
        if status == "survived":
            survivors.append(name)
    return per, survivors


def score(c):
    done = c["killed"] + c["timeout"] + c["survived"]
    return (c["killed"] + c["timeout"]) / done if done else None


def wilson(k, n):
    """The 95 % Wilson score interval of a proportion k / n (scipy's)."""
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(method="wilson")
    return ci.low, ci.high


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draw", type=int, metavar="N",
                    help="print a seeded random sample of N mutant names")
    ap.add_argument("--sample", type=int, metavar="N", help="score only the sample --draw N gives")
    ap.add_argument("--block", type=int, default=0,
                    help="which of the disjoint samples (default 0)")
    ap.add_argument("--within", metavar="FILE",
                    help="score only the mutants FILE names, one a line ('#' starts a comment): "
                         "e.g. a random sample of those a partial run left")
    a = ap.parse_args(argv)
    recs = records()
    if a.draw:
        print("\n".join(draw(recs, a.draw, a.block)))
        return
    if a.sample:
        recs = {k: recs[k] for k in draw(recs, a.sample, a.block)}
    if a.within:
        named = names_in(a.within)
        if unknown := [n for n in named if n not in recs]:
            sys.exit(f"{a.within} names {len(unknown)} mutants mutants/ does not hold (the first: "
                     f"{unknown[0]}): one name a line, as --draw prints them")
        recs = {k: recs[k] for k in named}
    per, survivors = summarize(recs, equivalent())
    print(f"{'module':<12}" + "".join(f"{c:>13}" for c in COLS) + f"{'score':>9}")
    total = Counter()
    for module, c in sorted(per.items()):
        total.update(c)
        print(f"{module:<12}" + "".join(f"{c[k]:>13}" for k in COLS) + f"{_pct(score(c)):>9}")
    print(f"{'all':<12}" + "".join(f"{total[k]:>13}" for k in COLS) + f"{_pct(score(total)):>9}")
    done = total["killed"] + total["timeout"] + total["survived"]
    if (a.sample or a.within) and done:
        lo, hi = wilson(total["killed"] + total["timeout"], done)
        what = (f"the {len(recs)} mutants {a.within} names" if a.within else
                f"a random sample of {a.sample} of the generated mutants (block {a.block})")
        print(f"\nOver {what}: if they are a random sample, the score of the population they were "
              f"drawn from lies in [{_pct(lo)}, {_pct(hi)}] with 95 % confidence (Wilson); "
              f"{total['not checked']} not run yet.")
    if survivors:
        print(f"\n{len(survivors)} survivors not judged equivalent (`mutmut show NAME` shows the "
              f"change):")
        for s in survivors:
            print("  " + s)


def _pct(x):
    return "-" if x is None else f"{100 * x:.1f}%"


if __name__ == "__main__":
    main()
