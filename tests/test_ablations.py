"""The ablation exercises run end to end (the chapter's notebook, at the quick scale), and their
graders pass correct submissions and reject the typical wrong ones: the baseline submitted, another
scale, an answer that disagrees with the student's own runs, an edited or unfinished run; answers
within the seed spread are accepted either way."""
import copy
import json
import os
import time
from functools import partial
from pathlib import Path

import pytest

from idmap_class import ablation_grading, ablations, editions
from idmap_lib.engine.results import config_hash

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "book" / "06_ablations.ipynb"
NAMES = list(ablations.ABLATIONS)
PRED = "A prediction written before running, long enough."

pytestmark = pytest.mark.skipif(not (os.environ.get("IDMAP_DATA")
                                     or (ROOT / "data" / "cache").is_dir()),
                                reason="needs CIFAR-10 and MNIST (IDMAP_DATA)")


@pytest.fixture(scope="module")
def quick_runs(tmp_path_factory):
    """Execute the ablations chapter as a student who solved it would (editions.solved_notebook: the
    book's solutions in place of the starters) at the quick scale: every exercise trains its runs
    through the library and its grading cell passes. Returns the runs' folder and the notebook's
    printed output."""
    import nbformat
    from nbclient import NotebookClient
    # IDMAP_TEST_RUNS: a folder kept between sessions (runs recorded there are looked up, not
    # trained again)
    runs_dir = Path(os.environ.get("IDMAP_TEST_RUNS") or tmp_path_factory.mktemp("idmap_runs"))
    runs_dir.mkdir(parents=True, exist_ok=True)
    env = {"IDMAP_ABLATION_SCALE": "quick", "IDMAP_RUNS": str(runs_dir), "OMP_NUM_THREADS": "1"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        solved = editions.solved_notebook(CHAPTER, runs_dir.parent / "solved.ipynb")
        nb = nbformat.read(solved, as_version=4)
        NotebookClient(nb, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(runs_dir.parent)}}).execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    outputs = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                        for o in c.get("outputs", []))
    return runs_dir, outputs


def runs_of(name, runs_dir):
    return ablations.run(name, PRED, scale="quick", out_dir=runs_dir, progress=False)


def truth(name, runs):
    return ablations.ABLATIONS[name].truth(runs)


def fails(name, runs, answers, *words, scale="quick"):
    with pytest.raises(AssertionError) as e:
        ablations.check(name, runs, answers, scale=scale)
    flat = " ".join(str(e.value).split())
    for w in words:
        assert w in flat, f"expected {w!r} in:\n{e.value}"
    return flat


def test_chapter_runs_end_to_end_and_every_solution_passes(quick_runs):
    runs_dir, out = quick_runs
    for name in NAMES:
        assert f"PASSED check_{name}" in out, name
    recorded = [json.loads(p.read_text()) for p in runs_dir.glob("*.json")]
    assert {r["config"]["scale"] for r in recorded} == {"ablation-quick"}
    assert len(recorded) == sum(len(ab.runs) for ab in ablations.ABLATIONS.values())
    for r in recorded:  # recorded through the library, with provenance and the prediction
        assert r["config_hash"] == config_hash(r["config"]) and "versions" in r and "git" in r
        assert r["exercise"]["prediction"].strip()


@pytest.mark.parametrize("name", NAMES)
def test_correct_answers_pass(quick_runs, name):
    runs = runs_of(name, quick_runs[0])
    # the notebook's prediction, stored with its runs
    mine = next(iter(runs.values()))["exercise"]["prediction"]
    assert ablations.status(name, runs, truth(name, runs), mine, scale="quick") == "passed"
    # its own
    assert (next(iter(runs.values()))["config"]["seed"] == ablations.student_seed(quick_runs[0]) >= 1000)
    # a submission is also accepted as the result files' paths (as the autograder finds them)
    paths = {k: r["path"] for k, r in runs.items()}
    assert ablations.status(name, paths, truth(name, runs), scale="quick") == "passed"


@pytest.mark.parametrize("name", NAMES)
def test_baseline_submitted_as_the_ablation_is_named(quick_runs, name):
    ab = ablations.ABLATIONS[name]
    runs = runs_of(name, quick_runs[0])
    other = next(k for k in ab.runs if k != ab.baseline)
    bad = {**runs, other: runs[ab.baseline]}
    fails(name, bad, truth(name, runs), "is the baseline", ab.baseline)


@pytest.mark.parametrize("name", NAMES)
def test_wrong_scale_is_named(quick_runs, name):
    runs = runs_of(name, quick_runs[0])
    fails(name, runs, truth(name, runs), "quick scale", "asks for the classroom scale",
          scale="classroom")


def test_recipe_run_instead_of_the_exercise_is_another_scale(quick_runs):
    runs = runs_of("constant_scaling", quick_runs[0])
    r = copy.deepcopy(runs["constant_scaling-0.5-1"])
    import idmap_lib as im
    r["config"] = im.config("a_table1_shortcuts", "constant_scaling-0.5-1", "cpu", 0)
    r["config_hash"] = config_hash(r["config"])
    fails("constant_scaling", {**runs, "constant_scaling-0.5-1": r},
          truth("constant_scaling", runs),
          "scale 'cpu'")


@pytest.mark.parametrize("name", NAMES)
def test_answer_that_disagrees_with_own_runs_fails(quick_runs, name):
    ab = ablations.ABLATIONS[name]
    runs = runs_of(name, quick_runs[0])
    right = truth(name, runs)
    key = next(a for a in ab.answers if ab.judge[a][0] in ("abs", "rel", "exact"))
    wrong = {**right, key: (right[key] or 0) + 1 if ab.judge[key][0] != "exact" else "not a depth"}
    fails(name, runs, wrong, key, "your runs give")


def test_judgement_against_own_runs_beyond_and_within_the_spread(quick_runs, monkeypatch):
    runs = runs_of("constant_scaling", quick_runs[0])
    right = truth("constant_scaling", runs)
    wrong = {**right, "scaled_is_worse": not right["scaled_is_worse"]}
    monkeypatch.setattr(ablation_grading, "spread", lambda: {})
    fails("constant_scaling", runs, wrong, "scaled_is_worse", "beyond the seed spread")
    gap = abs(right["loss_gap"])
    monkeypatch.setattr(ablation_grading, "spread",
                        lambda: {"constant_scaling": {"answers": {"loss_gap": gap + 1}}})
    # runs cannot tell
    assert ablations.status("constant_scaling", runs, wrong, scale="quick") == "passed"


def test_argmin_within_spread(quick_runs, monkeypatch):
    runs = runs_of("exclusive_gate_bias", quick_runs[0])
    right = truth("exclusive_gate_bias", runs)
    losses = {b: ablations.final(runs[f"b{b}"]) for b in ablations.B_G}
    worst = max(losses, key=losses.get)
    monkeypatch.setattr(ablation_grading, "spread", lambda: {})
    fails("exclusive_gate_bias", runs, {**right, "best_b_g": worst}, "best_b_g", "lowest loss")
    sp = {f"b{b}": {"train_loss": losses[worst] - min(losses.values()) + 1e-6}
          for b in ablations.B_G}
    monkeypatch.setattr(ablation_grading, "spread", lambda: {"exclusive_gate_bias": {"runs": sp}})
    assert ablations.status("exclusive_gate_bias", runs, {**right, "best_b_g": worst},
                            scale="quick") == "passed"


def test_edited_unfinished_and_missing_runs_and_unattempted_answers(quick_runs):
    name = "gate_depth"
    runs = runs_of(name, quick_runs[0])
    right = truth(name, runs)
    edited = copy.deepcopy(runs)
    edited["gresnet-d2"]["config"]["steps"] += 1
    fails(name, edited, right, "edited after the run")
    stopped = copy.deepcopy(runs)
    stopped["gresnet-d2"]["status"] = "stopped"
    fails(name, stopped, right, "did not finish")
    fails(name, {k: v for k, v in runs.items() if k != "gresnet-d50"}, right,
          "'gresnet-d50' is missing")
    stub = {a: ... for a in ablations.ABLATIONS[name].answers}
    assert ablations.status(name, runs, stub, scale="quick") == "not attempted"
    fails(name, runs, {**right, "mean_k_d2": ...}, "no answer for mean_k_d2")
    with pytest.raises(AssertionError, match="no prediction"):
        ablations.check(name, runs, right, "  ", scale="quick")


def test_run_refuses_to_train_without_a_prediction(tmp_path, capsys):
    # said, not raised: "Run all" goes on
    runs = ablations.run("gate_depth", "   ", scale="quick", out_dir=tmp_path)
    assert runs and all(r is None for r in runs.values()) and not list(tmp_path.glob("*.json"))
    assert "write your prediction first" in capsys.readouterr().out
    assert set(ablations.table(runs).data["status"]) == {"not run"}
    # a run by the name to type (code), never a variant key as prose
    assert "<code>gresnet-d10</code>" in ablations.table(runs).to_html()
    with pytest.raises(AssertionError, match="runs missing"):
        ablations.check("gate_depth", runs, {}, "   ", scale="quick")


def test_an_interrupted_exercise_resumes_where_it_stopped_after_its_first_prediction(tmp_path, monkeypatch, capsys):
    """Issue 33.3: the stop button during an exercise's training keeps a checkpoint of each run and
    says, in one line (trainer.TrainingInterrupted), how to go on; run again, the exercise resumes
    there and ends with the runs an uninterrupted one trains, recorded at the time of the first
    start after the prediction; a prediction rewritten meanwhile starts over."""
    import signal

    from idmap_lib.engine import loop, trainer
    advance, pressed = loop.Loop.advance, []

    def press_at_step_2(self):
        advance(self)
        if self.step == 2 and not pressed:
            pressed.append(self.step)
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(loop.Loop, "advance", press_at_step_2)
    said = "The deeper gates shrink."
    with pytest.raises(trainer.TrainingInterrupted,
                       match="interrupted at step 2 of 4: checkpoints kept"):
        ablations.run("gate_depth", said, seed=7, scale="quick", out_dir=tmp_path / "a",
                      progress=False)
    assert not list((tmp_path / "a").glob("*.json"))
    first = json.loads((tmp_path / "a" / "checkpoints" / "gate_depth.started.json").read_text())
    steps = []

    def counted(self):
        steps.append(self.step)
        advance(self)

    monkeypatch.setattr(loop.Loop, "advance", counted)
    got = ablations.run("gate_depth", said, seed=7, scale="quick", out_dir=tmp_path / "a",
                        progress=False)
    assert sorted(set(steps)) == [2, 3]  # resumed at step 2 (of 0..3), not trained again from 0
    monkeypatch.setattr(loop.Loop, "advance", advance)
    whole = ablations.run("gate_depth", said, seed=7, scale="quick", out_dir=tmp_path / "b",
                          progress=False)
    assert all(r["status"] == "ok" for r in got.values())
    assert {k: r["first_steps"] for k, r in got.items()} == {k: r["first_steps"]
                                                             for k, r in whole.items()}
    assert {k: r["final"]["gates_k"] for k, r in got.items()} == {k: r["final"]["gates_k"]
                                                                  for k, r in whole.items()}
    assert {r["exercise"]["prediction_recorded"]
            for r in got.values()} == {first["prediction_recorded"]}
    # recorded: no weights, no start note left
    assert not list((tmp_path / "a" / "checkpoints").iterdir())

    pressed.clear()
    monkeypatch.setattr(loop.Loop, "advance", press_at_step_2)
    with pytest.raises(trainer.TrainingInterrupted):
        ablations.run("gate_depth", said, seed=7, scale="quick", out_dir=tmp_path / "c",
                      progress=False)
    monkeypatch.setattr(loop.Loop, "advance", advance)
    ablations.run("gate_depth", "Rewritten after seeing the curves.", seed=7, scale="quick",
                  out_dir=tmp_path / "c",
                  progress=False)
    assert ("changed since its runs were interrupted: they start again from step "
            "0" in capsys.readouterr().out)


def test_configs_change_one_thing_and_keep_the_papers_recipe():
    import idmap_lib as im
    for name, ab in ablations.ABLATIONS.items():
        cfgs = ablations.configs(name, 0, "classroom")
        base = cfgs[ab.baseline]
        for key, cfg in cfgs.items():
            exp, variant, kw = ab.runs[key]
            cpu_cfg = im.config(exp, variant, "cpu", 0)
            assert cfg["optimizer"] == cpu_cfg["optimizer"] and cfg["dataset"] == cpu_cfg["dataset"]
            assert cfg["steps"] == ablations.ABLATIONS[name].scales["classroom"]["steps"]
            assert cfg["subset"] == cpu_cfg["subset"] and cfg["batch_size"] == cpu_cfg["batch_size"]
            changed = {k for k in set(cfg["model"]["kwargs"]) | set(base["model"]["kwargs"])
                       if cfg["model"]["kwargs"].get(k) != base["model"]["kwargs"].get(k)}
            assert key == ab.baseline or changed, (name, key)


def test_committed_spread_matches_the_recorded_runs():
    """spread.json (package data, read by the graders) is what the book's recorded runs give."""
    import statistics
    sp = ablations.spread()
    keys = {(ablations.spread_key(n, sc), n, ablations.resolve_scale(n, sc)) for n in NAMES
            for sc in ablations.OFFERED}
    # the gpu scale where it is its own
    assert set(sp) == {k for k, _, _ in keys} and len(keys) > len(NAMES)
    for key, name, scale in keys:
        assert len(sp[key]["seeds"]) >= 3
        per_seed = [ablations.run(name, "", seed=s, scale=scale, out_dir=ablations.BOOK_RUNS)
                    for s in sp[key]["seeds"]]
        assert all(r is not None for p in per_seed for r in p.values()), (key, "not recorded")
        for a, std in sp[key]["answers"].items():
            vals = [ablations.ABLATIONS[name].truth(p)[a] for p in per_seed]
            assert std == pytest.approx(statistics.stdev(vals)), (key, a)


def test_gpu_scale_trains_the_papers_network_within_two_minutes_on_a_t4():
    """Issue 23: the gpu scale of a CIFAR exercise is the recipe's own depth (ResNet-110) on the
    chapters' CPU-scale data, with their lr ramp over the first quarter, and its runs together take
    <= 2 min on a T4 (derived from the H200's measured pace); the MNIST exercises' gpu scale is
    their classroom scale, the same configs."""
    import idmap_lib as im
    for name, ab in ablations.ABLATIONS.items():
        gpu, room = ablations.configs(name, 0, "gpu"), ablations.configs(name, 0, "classroom")
        if ablations.resolve_scale(name, "gpu") == "classroom":
            assert gpu == room and ablations.spread_key(name, "gpu") == name
            continue
        for key, cfg in gpu.items():
            exp, variant, kw = ab.runs[key]
            paper = im.config(exp, variant, "cpu", 0)
            assert (cfg["model"]["kwargs"]["depth"] == paper["model"]["kwargs"]["depth"] == 110), (name, key)
            assert (cfg["subset"] == paper["subset"]
                    and cfg["batch_size"] == paper["batch_size"] == 128)
            sch = cfg["schedule"]
            assert sch["warmup"] == "linear" and sch["warmup_steps"] == cfg["steps"] // 4, sch
            assert sch["milestones"] == [round(cfg["steps"] / 2), round(cfg["steps"] * 3 / 4)], sch
        t = ablations.gpu_time(name)
        assert (t["s"] <= ablations.GPU_BUDGET_S and t["how"] == "derived"
                and "from the H200" in t["basis"]), (name, t)


def test_default_scale_is_gpu_where_cuda_is(monkeypatch):
    import torch
    monkeypatch.delenv("IDMAP_ABLATION_SCALE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert ablations.default_scale() == "gpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert ablations.default_scale() == "classroom"
    monkeypatch.setenv("IDMAP_ABLATION_SCALE", "quick")
    assert ablations.default_scale() == "quick"


def test_runs_are_graded_at_the_scale_they_were_trained_at(monkeypatch, tmp_path):
    """A class mixes CPUs and GPUs, and the instructor's machine grades both: runs of the gpu scale
    are found by the notebook's run cell and graded at their scale on a machine without a GPU; asked
    for another scale, or mixed with runs of another, they are named."""
    import shutil

    import torch

    from idmap_lib.engine.results import find_result
    monkeypatch.delenv("IDMAP_ABLATION_SCALE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    name = "bn_after_addition"
    gpu = {k: find_result(c, ablations.BOOK_RUNS, same_training=False)
           for k, c in ablations.configs(name, 0, "gpu").items()}
    room = {k: find_result(c, ablations.BOOK_RUNS, same_training=False)
            for k, c in ablations.configs(name, 0, "classroom").items()}
    if None in gpu.values() or None in room.values():
        pytest.skip("the book's runs of bn_after_addition are not all recorded")
    assert ablations.submitted_scale(name,
                                     gpu) == "gpu" and ablations.submitted_scale(name, room) == "classroom"
    # a GPU student's runs folder, graded on a CPU: found at their scale, nothing trains
    for r in gpu.values():
        shutil.copy(r["path"], tmp_path)
    monkeypatch.setenv("IDMAP_GRADING", "1")
    handed_in = ablations.run(name, PRED, out_dir=tmp_path, progress=False)
    assert {k: r["config_hash"] for k, r in handed_in.items()} == {k: r["config_hash"]
                                                                   for k, r in gpu.items()}
    assert ablations.status(name, gpu, truth(name, gpu), scale=None) == "passed"
    assert ablations.status(name, room, truth(name, room), scale=None) == "passed"
    fails(name, gpu, truth(name, gpu), "is the gpu scale", "asks for the classroom scale",
          scale="classroom")
    mixed = {"original": gpu["original"], "bn_after_add": room["bn_after_add"]}
    fails(name, mixed, truth(name, mixed), "'bn_after_add' is the classroom scale", scale=None)


@pytest.mark.parametrize("name", NAMES)
def test_a_copy_of_the_books_runs_or_of_another_notebooks_runs_does_not_pass(quick_runs, name, tmp_path, monkeypatch):
    """Can't pass without training: the book's recorded runs (seeds 0-2, in every clone) copied into
    one's runs folder are rejected, and so are runs trained after another prediction than the
    notebook's. Graded as a submission is (IDMAP_GRADING: nothing trains; outside it the run cell
    took the copies' other prediction for a rewritten one and trained the classroom runs again, most
    of an hour of this suite: issue 45.6)."""
    import shutil

    from idmap_lib.engine import trainer
    monkeypatch.setenv("IDMAP_GRADING", "1")
    monkeypatch.setattr(trainer, "train",
                        lambda *a, **k: pytest.fail("a grading test trained"))
    if not ablations.BOOK_RUNS.is_dir():
        pytest.skip("the book's classroom runs are not recorded")
    from idmap_lib.engine.results import find_result
    book = {k: find_result(c, ablations.BOOK_RUNS, same_training=False)
            for k, c in ablations.configs(name, 0).items()}
    if None in book.values():
        pytest.skip(f"the book's classroom runs of {name} are not all recorded")
    # on the book's own pages
    assert ablations.status(name, book, truth(name, book), scale=None) == "passed"
    copy_dir = tmp_path / "idmap_runs"
    copy_dir.mkdir()
    for r in book.values():
        shutil.copy(r["path"], copy_dir)
    # found: the copy's seed, 0
    copied = ablations.run(name, PRED, out_dir=copy_dir, progress=False)
    assert all(r is not None for r in copied.values()) and ablations.student_seed(copy_dir) == 0
    fails(name, copied, truth(name, copied), "one of the book's recorded seeds", "not yours",
          scale=None)
    runs = runs_of(name, quick_runs[0])
    with pytest.raises(AssertionError, match="another prediction than this notebook's"):
        ablations.check(name, runs, truth(name, runs),
                        "Someone else's prediction, copied with the runs.",
                        scale="quick")


def test_a_training_two_exercises_share_is_trained_once(tmp_path, monkeypatch, capsys):
    """Constant scaling's and BN after addition's "original" are one training (the same network,
    data, schedule and seed: ``results.training_hash``): the second exercise records the first's run
    under its own labels and prediction, says so, and grades it (its prediction time is that of the
    exercise it was trained for)."""
    from idmap_lib.engine import trainer
    from idmap_lib.engine.results import training_hash
    run = partial(ablations.run, seed=7, scale="quick", out_dir=tmp_path, progress=False)
    first = run("constant_scaling", PRED)["original"]
    # the second prediction is written later than the first run (times are kept to the second)
    time.sleep(1.1)
    trained, real = [], trainer.train
    monkeypatch.setattr(trainer, "train",
                        lambda cfgs, **kw: trained.extend(cfgs) or real(cfgs, **kw))
    other = "BN after the addition should hurt: the shortcut is no longer an identity."
    runs = run("bn_after_addition", other)
    second = runs["original"]
    # all but the shared one
    assert [c["variant"] for c in trained] == [k for k in runs if k != "original"]
    assert (training_hash(first["config"]) == training_hash(second["config"])
            and first["path"] != second["path"])
    assert (second["exercise"]["name"] == "bn_after_addition"
            and second["exercise"]["trained_for"] == "constant_scaling")
    assert second["exercise"]["prediction"] == other
    # one training, recorded twice
    assert second["history"] == first["history"] and second["date"] == first["date"]
    assert ("the same training as constant_scaling's 'original', which you ran "
            "already" in capsys.readouterr().out)
    assert ablations.status("bn_after_addition", runs, truth("bn_after_addition", runs), other,
                            scale="quick") == "passed"
    # constant scaling's prediction rewritten: its runs are set aside and trained again, never taken
    # back through bn_after_addition's copy of the old training (which was trained before the new
    # prediction)
    rewritten = "Scaling every shortcut by 0.5 should hurt: the direct term shrinks with depth."
    again = run("constant_scaling", rewritten)
    assert ("trained_for" not in again["original"]["exercise"]
            and again["original"]["date"] > first["date"])
    assert ablations.status("constant_scaling", again, truth("constant_scaling", again), rewritten,
                            scale="quick") == "passed"
