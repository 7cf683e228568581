"""The recorded runs as data: every result names what it trained (its config hash and training hash,
both derived from its config), so that a run is found by what it trains and never counted twice
under two labels."""
import json
from pathlib import Path

import pytest

from idmap_lib.engine.results import RESULTS_DIR, config_hash, training_hash


def test_every_recorded_result_carries_its_config_and_training_hashes():
    files = sorted(Path(RESULTS_DIR).glob("*.json"))
    assert len(files) > 200
    seen = {}
    for f in files:
        r = json.loads(f.read_text())
        assert r["config_hash"] == config_hash(r["config"]), f.name
        assert r.get("training_hash") == training_hash(r["config"]), f.name
        assert (r["training_hash"] not in seen), (f"{f.name} trains what "
                                                  f"{seen[r['training_hash']]} trained")
        seen[r["training_hash"]] = f.name


def test_every_record_was_evaluated_when_its_config_says():
    """The test set is evaluated where ``outcome.eval_steps`` says (window ends that are multiples
    of eval_every, and the last step), up to where a failed run stopped: the config and the record
    agree."""
    from idmap_lib.engine.outcome import eval_steps

    for f in sorted(Path(RESULTS_DIR).glob("*.json")):
        r = json.loads(f.read_text())
        last = r["history"]["train"][-1]["step"] if r["history"]["train"] else 0
        got = [e["step"] for e in r["history"]["test"]]
        assert got == eval_steps(r["config"], until=last), f.name


def test_eval_steps_follow_the_window_ends():
    from idmap_lib.engine.outcome import eval_steps

    assert eval_steps({"steps": 400, "log_every": 10, "eval_every": 100}) == [100, 200, 300, 400]
    # ResNet-1001 at the CPU scale
    assert eval_steps({"steps": 128, "log_every": 10, "eval_every": 64}) == [128]
    assert eval_steps({"steps": 46800, "log_every": 100,
                       "eval_every": 2340}) == [11700, 23400, 35100, 46800]
    assert eval_steps({"steps": 400, "log_every": 10, "eval_every": 100}, until=144) == [100]


FAMILIES = ("a_table1_shortcuts", "a_table2_activations", "a_table3_preact", "b_resnet32", "b_wrn",
            "a_swaps")


@pytest.mark.slow
@pytest.mark.parametrize("experiment", FAMILIES)
def test_a_recorded_run_of_every_family_retrains_its_first_window_as_recorded(experiment, cifar):
    """Issue 40.6: today's library, given a recorded run's config and seed, trains its first logged
    window as recorded: bit for bit on the machine kind it was recorded on (same CPU, torch,
    precision, threads), within the spot check's loose tolerance elsewhere. A change that moves what
    a family trains fails here, naming the run."""
    from idmap_class import spotcheck

    found = [json.loads(f.read_text())
             for f in sorted(Path(RESULTS_DIR).glob(f"{experiment}__*__s0__*.json"))]
    found = [r for r in found if r["config"]["dataset"] == "cifar10"
             and r["config"]["steps"] <= 400]
    if not found:
        pytest.skip(f"no recorded seed-0 run of {experiment}")
    r = min(found, key=lambda x: (x["config"]["model"]["kwargs"].get("depth", 0),
                                  x["config"]["variant"]))
    got = spotcheck.retrain_first_steps(r, data=cifar)
    want, have = r["history"]["train"][0]["train_loss"], got["history"]["train"][0]["train_loss"]
    # the machine kind: its CPU's name, torch and precision (spotcheck.SAME_MACHINE), and that
    # precision the CPU's own choice (no "amp" in the config): an AVX-512 EPYC and an AVX2-only one
    # are both "AMD EPYC", and only "auto" tells them apart (bf16 on the first, float32 on the
    # second); a run that names its precision may have been recorded on either
    same = all((r.get(k[0]) or {}).get(k[1]) == (got.get(k[0]) or {}).get(k[1]) if len(k) == 2 else
               r.get(k[0]) == got.get(k[0]) for k in spotcheck.SAME_MACHINE)
    same = same and not r["config"].get("amp")
    # elsewhere the window rounds otherwise: within 5 %, a weak test (measured against runs
    # recorded in bf16 on the AVX-512 EPYC: 1.6 % retrained in bf16 on an AMX Xeon, 2026-12-05; at
    # most 1.0 % (a_swaps' full_preact+no_final-110; the others 0.01-0.5 %) retrained in float32 at
    # AVX2, emulated on that EPYC with ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2,
    # 2026-12-06); on the recorded machine kind, bit for bit
    tol = spotcheck.EXACT_TOL if same else 0.05 * want
    assert (abs(have - want) <= tol), (f"{r['config']['variant']} seed 0: first window {have} now, "
                                       f"{want} recorded")
