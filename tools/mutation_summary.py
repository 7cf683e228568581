"""Score of the last `make mutation` run, per module, from mutmut's records in mutants/.

score = killed / (killed + survived), over the mutants that were run, leaving out those judged equivalent in
tests/mutation_equivalent.txt (one mutant name per line, then '#' and why). Timeouts count as killed (the
mutant made the tests hang: the suite noticed). Mutants mutmut has not run yet ("not checked") are counted
apart, so a partial run says how partial it is. Survivors that are not judged equivalent are listed.
"""
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATUS = {1: "killed", 3: "killed", 0: "survived", None: "not checked", 5: "no tests", 33: "no tests",
          34: "skipped", 36: "timeout", -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout"}


def equivalent(path=ROOT / "tests" / "mutation_equivalent.txt"):
    if not path.exists():
        return set()
    return {line.split("#")[0].strip() for line in path.read_text().splitlines() if line.split("#")[0].strip()}


def main(mutants=ROOT / "mutants"):
    metas = sorted(mutants.glob("**/*.py.meta"))
    if not metas:
        sys.exit("no mutmut results in mutants/: run `make mutation` first")
    eq = equivalent()
    per = defaultdict(Counter)
    survivors = []
    for meta in metas:
        module = meta.name[: -len(".py.meta")]
        for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            status = STATUS.get(code, "suspicious")
            if status == "survived" and name in eq:
                status = "equivalent"
            per[module][status] += 1
            if status == "survived":
                survivors.append(name)
    cols = ["killed", "timeout", "survived", "equivalent", "no tests", "not checked", "suspicious"]
    print(f"{'module':<12}" + "".join(f"{c:>13}" for c in cols) + f"{'score':>9}")
    total = Counter()
    for module, c in sorted(per.items()):
        total.update(c)
        print(f"{module:<12}" + "".join(f"{c[k]:>13}" for k in cols) + f"{_score(c):>9}")
    print(f"{'all':<12}" + "".join(f"{total[k]:>13}" for k in cols) + f"{_score(total):>9}")
    if survivors:
        print(f"\n{len(survivors)} survivors not judged equivalent (`mutmut show NAME` shows the change):")
        for s in survivors:
            print("  " + s)


def _score(c):
    done = c["killed"] + c["timeout"] + c["survived"]
    return f"{100 * (c['killed'] + c['timeout']) / done:.1f}%" if done else "-"


if __name__ == "__main__":
    main()
