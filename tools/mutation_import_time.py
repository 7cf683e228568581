"""Run the mutants of code that runs at import time, which mutmut itself cannot exercise.

mutmut's forkserver imports the package once, before it picks a mutant, and forks a worker per
mutant; a function called while the package is imported (recipes._table1/2/3 and _swaps, which build
EXPERIMENTS) has then already run unmutated, so its mutants "survive" whatever the tests say. Here
each such mutant runs in a fresh process with MUTANT_UNDER_TEST set before the import (how mutmut's
trampolines pick the active mutant), on the tests that guard the recipes. Results go to
mutants/import-time.json, which tools/mutation_summary.py reads in place of mutmut's verdicts for
these mutants.

    python tools/mutation_import_time.py [NAME ...]
        (the import-time mutants among NAMEs; default: all of them)
"""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = ROOT / "mutants"
RESULTS = MUTANTS / "import-time.json"
FUNCTIONS = ("idmap_lib.engine.recipes.x__table1__", "idmap_lib.engine.recipes.x__table2__",
             "idmap_lib.engine.recipes.x__table3__", "idmap_lib.engine.recipes.x__swaps__")
TESTS = ["tests/test_recipes_frozen.py", "tests/test_engine_recipes.py", "--deselect",
         "tests/test_engine_recipes.py::test_unknown_names_are_clear_errors"]  # a subprocess's test


def import_time(names):
    return sorted(n for n in names if n.startswith(FUNCTIONS))


def verdicts():
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else {}


def _pytest(mutant):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MUTANT_UNDER_TEST": mutant}
    return subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                           *TESTS],
                          cwd=MUTANTS, env=env, capture_output=True, text=True).returncode


def run(names):
    # no mutant active: the tests must pass, or every "kill" would be false
    if names and _pytest("") != 0:
        sys.exit("the recipe tests fail on the unmutated code in mutants/: fix that (or rerun "
                 "mutmut) first")
    done = verdicts()
    for i, name in enumerate(names, 1):
        code = _pytest(name)
        # 2, 4: the tests were not collected (a conftest or test module failed to import): with
        # the check above passed, the mutant broke the package's import
        done[name] = {0: "survived", 1: "killed", 2: "killed", 4: "killed"}.get(code,
                                                                                 f"error {code}")
        print(f"[{i}/{len(names)}] {name}: {done[name]}", flush=True)
        RESULTS.write_text(json.dumps(done, indent=1, sort_keys=True))
    return done


if __name__ == "__main__":
    from mutation_summary import records

    run(import_time(sys.argv[1:] or records()))
