"""The exercise graders (idmap_class) pass the reference solutions and catch typical wrong
answers with the right hint. (The editions and batch grading: test_editions.py.)"""
import json
import math
import os
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import idmap_class as checks



@pytest.fixture(autouse=True)
def _threads():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def fails(check, answer, *hint_words):
    """`check(answer)` raises AssertionError whose message contains every one of `hint_words`."""
    with pytest.raises(AssertionError) as e:
        check(answer)
    flat = " ".join(str(e.value).split())  # messages are wrapped: compare with whitespace collapsed
    for w in hint_words:
        assert w in flat, f"expected {w!r} in the message:\n{e.value}"
    assert all(len(line) <= checks.WIDTH for line in str(e.value).splitlines())
    return str(e.value)


# ---- exercise 1 ----------------------------------------------------------------------------------

class PreAct(nn.Module):
    """Reference solution: Paper A Fig 4(e)."""

    order = "preact"

    def __init__(self, channels, bias=False):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=bias)
        self.bn2 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=bias)

    def forward(self, x):
        r = torch.relu
        if self.order == "post":  # Fig 4(a) with the same layers
            return r(x + self.bn2(self.conv2(r(self.bn1(self.conv1(x))))))
        if self.order == "relu_after_add":
            return r(x + self.conv2(r(self.bn2(self.conv1(r(self.bn1(x)))))))
        if self.order == "no_shortcut":
            return self.conv2(r(self.bn2(self.conv1(r(self.bn1(x))))))
        # always batch statistics: right in train mode, wrong in eval
        if self.order == "functional_bn":
            bn = lambda m, t: F.batch_norm(t, None, None, m.weight, m.bias,
                                           training=True)  # noqa: E731
            return x + self.conv2(r(bn(self.bn2, self.conv1(r(bn(self.bn1, x))))))
        return x + self.conv2(r(self.bn2(self.conv1(r(self.bn1(x))))))


def variant(order, **kw):
    return type(f"PreAct_{order}", (PreAct,), {"order": order, **kw})


def test_full_preact_passes_reference(capsys):
    assert checks.check_full_preact_unit.status(PreAct) == "passed"
    assert "PASSED check_full_preact_unit" in capsys.readouterr().out


def test_full_preact_catches_post_activation_order():
    fails(checks.check_full_preact_unit, variant("post"), "Fig 4a", "eval mode")


def test_full_preact_catches_relu_after_addition():
    fails(checks.check_full_preact_unit, variant("relu_after_add"), "activation after the addition")


def test_full_preact_catches_missing_shortcut():
    fails(checks.check_full_preact_unit, variant("no_shortcut"), "shortcut is missing")


def test_full_preact_catches_eval_mode_bn():
    msg = fails(checks.check_full_preact_unit, variant("functional_bn"), "in eval mode")
    assert "in train mode" not in msg


def test_full_preact_catches_conv_bias_and_layout():
    fails(checks.check_full_preact_unit, lambda c: PreAct(c, bias=True), "bias")

    class Renamed(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.body = PreAct(c)

        def forward(self, x):
            return self.body(x)
    fails(checks.check_full_preact_unit, Renamed, "no attribute `bn1`")
    fails(checks.check_full_preact_unit, PreAct(4), "pass the class itself")


def test_full_preact_catches_in_place_input():
    class InPlace(PreAct):
        def forward(self, x):
            x += self.conv2(torch.relu(self.bn2(self.conv1(torch.relu(self.bn1(x))))))
            return x
    fails(checks.check_full_preact_unit, InPlace, "in place")


# ---- exercise 2 ----------------------------------------------------------------------------------

def gate(x, W_g, b_g):
    return torch.sigmoid(F.conv2d(x, W_g, b_g))


def exclusive_gating(x, Fx, W_g, b_g):
    g = gate(x, W_g, b_g)
    return (1 - g) * x + g * Fx


def test_gating_passes_reference():
    assert checks.check_exclusive_gating.status(exclusive_gating) == "passed"


@pytest.mark.parametrize("wrong, hint", [
    (lambda x, Fx, W, b: x + gate(x, W, b) * Fx, "(1 - g) factor on the shortcut is missing"),
    (lambda x, Fx, W, b: (1 - gate(x, W, b)) * x + Fx, "shortcut-only gating, Fig 2(d)"),
    (lambda x, Fx, W, b: gate(x, W, b) * x + (1 - gate(x, W, b)) * Fx, "swapped"),
    (lambda x, Fx, W, b: (1 - gate(Fx, W, b)) * x + gate(Fx, W, b) * Fx, "computed from F(x)"),
    (lambda x, Fx, W, b: (1 - gate(x, W, None)) * x + gate(x, W, None) * Fx, "bias b_g is missing"),
])
def test_gating_catches_wrong_formulas(wrong, hint):
    fails(checks.check_exclusive_gating, wrong, hint)


# ---- exercise 3 ----------------------------------------------------------------------------------

def test_direct_term_passes_product_and_matches_a_real_stack(capsys):
    assert checks.check_direct_term.status(math.prod) == "passed"
    out = capsys.readouterr().out
    assert "measured 0.00515378" in out  # 0.9^50, measured by autograd in a zero-residual stack


def test_measured_direct_term_is_prod_lambda():
    lams = [0.7, 1.3, 0.9, 1.1, 0.5]
    assert checks.measured_direct_term(lams) == pytest.approx(math.prod(lams), rel=1e-12)


@pytest.mark.parametrize("wrong, hint", [
    (sum, "you returned the sum"),
    (lambda lams: lams[0] ** len(lams) if lams else 1.0, "may differ from unit to unit"),
    (lambda lams: math.prod(lams) if lams else 0.0, "empty product is 1"),
    (lambda lams: math.prod(lams[1:]), "Eqn 8"),
])
def test_direct_term_catches_wrong_answers(wrong, hint):
    fails(checks.check_direct_term, wrong, hint)


def test_vanishing_depth():
    right = lambda lam, eps: next(n for n in range(1, 10 ** 6) if lam ** n < eps)  # noqa: E731
    assert checks.check_vanishing_depth.status(right) == "passed"
    fails(checks.check_vanishing_depth, lambda lam, eps: int(math.log(eps) / math.log(lam)),
          "round up")
    fails(checks.check_vanishing_depth, lambda lam, eps: math.log(eps) / math.log(lam),
          "whole number")


# ---- exercise 4 ----------------------------------------------------------------------------------

class Gated(nn.Module):
    k0 = 1.0

    def __init__(self, F):
        super().__init__()
        self.F = F
        self.k = nn.Parameter(torch.full((), self.k0))

    def forward(self, x):
        return torch.relu(self.k) * self.F(x) + x


def gated(forward=None, k0=1.0):
    body = {"k0": k0}
    if forward is not None:
        body["forward"] = forward
    return type("GatedVariant", (Gated,), body)


def test_gated_residual_passes_reference():
    assert checks.check_gated_residual.status(Gated) == "passed"


def test_gated_residual_catches_k_initialised_to_zero():
    fails(checks.check_gated_residual, gated(k0=0.0), "k starts at 0", "never gets a gradient")


def test_gated_residual_catches_sigmoid_gate():
    fails(checks.check_gated_residual, gated(lambda s, x: torch.sigmoid(s.k) * s.F(x) + x),
          "sigmoid(k) is never 0")


def test_gated_residual_catches_gated_plain_layer():
    def plain(s, x):
        g = torch.relu(s.k)
        return g * s.F(x) + (1 - g) * x
    fails(checks.check_gated_residual, gated(plain), "gated PLAIN layer")


def test_gated_residual_catches_detached_gate_and_extra_parameters():
    fails(checks.check_gated_residual, gated(lambda s, x: torch.relu(s.k).item() * s.F(x) + x),
          "dE/dk")

    class Extra(Gated):
        def __init__(self, F):
            super().__init__(F)
            self.bias = nn.Parameter(torch.zeros(()))
    fails(checks.check_gated_residual, Extra, "expected F's")


# ---- exercise 5 ----------------------------------------------------------------------------------

def truncation_rate(unit, x):
    y = unit.shortcut(x, unit.residual(x))
    return (y < 0).double().mean()


def test_truncation_passes_reference():
    assert checks.check_truncation_rate.status(truncation_rate) == "passed"


@pytest.mark.parametrize("wrong, hint", [
    (lambda u, x: 1 - truncation_rate(u, x), "fraction that survives"),
    (lambda u, x: (u.residual(x) < 0).double().mean(), "F(x) alone"),
    (lambda u, x: truncation_rate(u.eval(), x), "eval mode"),
])
def test_truncation_catches_wrong_answers(wrong, hint):
    fails(checks.check_truncation_rate, wrong, hint)


# ---- stubs, batch grading, the students' copy ----------------------------------------------------

def stub(*args, **kwargs):
    raise NotImplementedError("exercise")


def test_stub_is_reported_not_attempted(capsys):
    # no exception: a notebook with stubs runs through
    assert checks.check_direct_term(stub) is None
    assert "NOT ATTEMPTED check_direct_term" in capsys.readouterr().out
    assert checks.check_gated_residual.status(stub) == "not attempted"


def test_grade_a_namespace():
    """checks.grade (the chapter's last cell) runs every grader on what a namespace defines."""
    res = checks.grade({"direct_term": sum, "GatedResidual": Gated, "truncation_rate": stub})
    assert res["4 gated residual"] == "passed"
    assert res["3a direct term"].startswith("failed") and "direct_term = " in res["3a direct term"]
    assert res["5 truncation rate"] == "not attempted"
    assert res["1 full pre-activation unit"] == "missing"


# ----------------------------------------------------------------------------------------------
# what the sandbox leaves

def test_links_and_special_files_a_notebook_made_are_removed_unread(tmp_path):
    """Issue 45.2: a symlink from the runs folder to the book's runs, a seed.txt linked to a file of
    the instructor's, a hard link and a pipe are removed without being followed; plain files and
    folders stay."""
    import os
    from idmap_class import unpack

    secret = tmp_path / "secret"
    secret.write_text("instructor only")
    sub = tmp_path / "sub"
    runs = sub / "idmap_runs"
    runs.mkdir(parents=True)
    (runs / "mine.json").write_text("{}")
    (runs / "seed.txt").symlink_to(secret)
    (runs / "book").symlink_to(Path(__file__).resolve().parents[1] / "data" / "classroom")
    os.link(secret, runs / "hard.json")
    os.mkfifo(runs / "pipe")
    gone = unpack.strip_links(sub)
    assert gone == ["idmap_runs/book", "idmap_runs/hard.json", "idmap_runs/pipe",
                    "idmap_runs/seed.txt"]
    assert (sorted(p.name for p in runs.iterdir()) == ["mine.json"]
            and secret.read_text() == "instructor only")


def test_extract_reads_the_values_after_the_last_cell_and_writes_its_status(tmp_path):
    """Issue 45.5: the extraction cell ran past the notebook's end (IndexError, no status, every
    sandbox exit 1)."""
    import json
    import subprocess
    import sys
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("answers = {'a': 1.5}"),
                nbformat.v4.new_code_cell("1 / 0")]
    path = tmp_path / "n.ipynb"
    nbformat.write(nb, path)
    plan = {"calls": [{"question": "q1", "check": "ablations.check",
                       "args": ["'x'", "None", "answers", "None"]}]}
    out = tmp_path / "values.json"
    # (issue 60: the plan on the command line, never a file in the sandbox)
    done = subprocess.run([sys.executable, "-m", "idmap_class.extract", str(path),
                           json.dumps(plan), str(out)], capture_output=True, text=True,
                          timeout=1200)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "RuntimeWarning" not in done.stderr  # (an un-awaited is_alive warned at every run)
    assert json.loads(out.read_text())["calls"][0]["answers"] == {"a": 1.5}
    status = json.loads(Path(str(out) + ".status").read_text())
    # (a cell's own error is the notebook's output, allowed: the rest still ran)
    assert status["cells"] == 2 and status["kernel_died"] is False


def test_grading_refuses_at_once_where_the_sandbox_cannot_import_the_library(tmp_path, monkeypatch):
    """Issue 45.5: an environment whose editable install points elsewhere gave every honest student
    0/6."""
    from idmap_class import batch, sandbox

    (tmp_path / "alice.ipynb").write_text("{}")
    monkeypatch.setattr(sandbox, "run",
                        lambda *a, **k: sandbox.Outcome(1, 0.1, "ModuleNotFoundError: No module "
                                                             "named 'idmap_lib'"))
    with pytest.raises(RuntimeError,
                       match="cannot import the library.*No module named 'idmap_lib'.*nobody was "
                             "graded"):
        batch.grade_folder(tmp_path, chapter="ablations", csv_path=tmp_path / "g.csv",
                           isolate=False, progress=None)
    assert not (tmp_path / "g.csv").exists()
    monkeypatch.undo()
    batch.preflight()  # this environment: it imports


def test_feedback_never_echoes_a_long_answer_value():
    """Issue 45.3: an answer built from the host name and a listing of /etc came back whole in the
    feedback."""
    from idmap_class import ablation_grading as g

    leak = "host-x:" + "ssh_host_rsa_key " * 20
    assert len(g.shown(leak)) == g.SHOWN_CHARS and g.shown(0.25) == "0.25"
    what, _ = g._compare("constant_scaling", "k", ("abs", 0.1), leak, 0.5, {}, "x")
    assert "ssh_host_rsa_key ssh" not in what and len(what) < 80


def test_a_book_run_relabelled_with_its_first_steps_retrained_is_caught_by_its_later_history():
    """Issue 45.1: the spot check retrains only the first steps, so a book run relabelled to a new
    seed with those steps trained again passed it. Its later windows still equal the book run's;
    another seed's never do."""
    import copy
    from idmap_class import batch, spotcheck

    book = batch.book_runs()
    assert len(book) >= 90
    s0 = next(r for r in book if r["config"]["seed"] == 0 and "constant_scaling" in r["path"])
    forged = copy.deepcopy(s0)
    forged["config"]["seed"] = 4242
    first = forged["history"]["train"][0]
    first["train_loss"] += 0.05  # the first window, retrained under the new seed
    forged["first_steps"] = [x + 0.01 for x in forged.get("first_steps", [])]
    assert spotcheck.copied({"a": forged}, book) == {"a": s0["path"]}
    others = [r for r in book if r["path"] != s0["path"]]
    twin = next(r for r in others if r["config"]["variant"] == s0["config"]["variant"] and
                r["config"].get("scale") == s0["config"].get("scale"))
    # an honest run of another seed: its own history
    assert spotcheck.copied({"b": twin}, [s0]) == {}
    assert batch._fingerprint({"x": ("q", forged)}) == batch._fingerprint({"x": ("q", s0)})


def test_an_unattempted_ablation_says_what_is_still_a_stub(capsys):
    """Issue 42.3: 'answers ... still raises NotImplementedError' where `answers` is a dict of
    `...`."""
    from idmap_class import ablations
    from idmap_lib.engine.results import find_result

    name = "constant_scaling"
    runs = {k: find_result(c, ablations.BOOK_RUNS, same_training=False)
            for k, c in ablations.configs(name, 0).items()}
    if None in runs.values():
        pytest.skip("the book's classroom runs of constant_scaling are not recorded")
    got = ablations.status(name, runs, {a: ... for a in ablations.ABLATIONS[name].answers}, "p",
                           scale=None)
    out = capsys.readouterr().out
    assert (got == "not attempted" and "every entry of `answers` is still `...`" in out
            and "raises" not in out)


def test_each_exercise_gives_one_time_a_student_plans_by():
    """Issue 42.3: 'timed alone: 0.6 min' sat above a table of 156 + 158 s runs. Each exercise now
    opens with one time for a laptop CPU (the idle timing, doubled, whole minutes up) and one for a
    Colab GPU."""
    import math
    from idmap_class import ablations, guide, marking

    for name in ablations.ABLATIONS:
        t = ablations.run_times(name)
        note = guide.scales_note(name)
        assert note.startswith("**Time.** Allow about ") and note.count("**Time.**") == 1
        if t["cpu_s"]:
            assert (f"about {math.ceil(guide.LAPTOP_FACTOR * t['cpu_s'] / 60)} min on a laptop "
                    f"CPU") in note
        assert f"about {math.ceil(t['gpu']['s'] / 60)} min on a Colab GPU" in note


def test_the_instructor_guide_has_points_a_rubric_model_answers_and_a_session_plan():
    """Issue 42.3: goals, expected answers and commands, but no points, no rubric, no model answer,
    no plan."""
    from idmap_class import ablations, guide, marking

    text = guide.instructor_guide()
    assert "## Marks, rubric and a session plan" in text and "**Points per exercise: 4.**" in text
    assert all(f"- **{name}**: " in text for name in ablations.ABLATIONS)
    assert set(marking.MODEL_ANSWERS) == set(ablations.ABLATIONS) and "two hours" in text


def test_a_fork_bomb_stops_at_the_sandboxs_task_limit(tmp_path):
    """A notebook that forks without end gets no more than Limits.tasks processes, and leaves no
    cgroup."""
    import os
    import sys

    from idmap_class import sandbox
    if sandbox.available() or sandbox.task_limit():
        pytest.skip(sandbox.available() or sandbox.task_limit())
    bomb = ("import os, time\nn = 0\ntry:\n    for i in range(400):\n        if os.fork() == 0:\n"
            "            time.sleep(30)\n            os._exit(0)\n        n += 1\n"
            "except OSError as e:\n    print('stopped:', e)\nprint('forked', n)\n")
    out = sandbox.run([sys.executable, "-c", bomb], tmp_path,
                      limits=sandbox.Limits(wall_s=60, tasks=40))
    assert "stopped" in out.output and int(out.output.split("forked")[-1]) < 40, out
    assert out.seconds < 30  # its children were killed with it, not waited for
    assert not list(Path("/sys/fs/cgroup/pids").glob(f"idmap-sandbox-{os.getpid()}-*"))


class _Marker:
    """A pickle that, if anything ever loaded it, would leave a file behind."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_the_gradescope_run_removes_pickles_and_links_unread_and_never_calls_otters_runner(tmp_path, monkeypatch):
    """The autograder zip's run_otter.py (what Gradescope runs) hands the submission to
    checks/gradescope.py, which removes Otter's log, pickles, weights and links unread before
    anything is graded, grades as the batch grades a row (here a stand-in for batch.grade_one, which
    sees what is left) and writes results.json; Otter's runner (which would score in the student's
    kernel and load its log) is never imported."""
    import pickle
    import runpy
    import zipfile

    from idmap_class import batch
    from idmap_class.autograder import RUN_OTTER

    sub = tmp_path / "submission"
    (sub / "idmap_runs").mkdir(parents=True)
    (sub / "ablations.ipynb").write_text("{}")
    (sub / "idmap_runs" / "run.json").write_text("{}")
    marker, secret = tmp_path / "pickle-ran", tmp_path / "instructor-only.txt"
    secret.write_text("4242")
    (sub / ".OTTER_LOG").write_bytes(pickle.dumps(_Marker(str(marker))))
    (sub / "idmap_runs" / "weights.pt").write_bytes(pickle.dumps(_Marker(str(marker))))
    (sub / "idmap_runs" / "seed.txt").symlink_to(secret)
    (sub / "book_runs").symlink_to(tmp_path)
    seen = {}

    def grade_one(zipped, plan, limits, isolate):
        seen["files"] = sorted(zipfile.ZipFile(zipped).namelist())
        q = plan["questions"][0]
        return {"student": "x", "total": 1.0, "possible": 2.0, "reason": "", q: 1.0,
                f"{q}: feedback": ""}

    monkeypatch.setattr(batch, "grade_one", grade_one)
    monkeypatch.setattr(batch, "preflight", lambda *a: None)
    monkeypatch.setitem(sys.modules, "otter.run.run_autograder", None)  # importing it would raise
    monkeypatch.setenv("IDMAP_AUTOGRADER_DIR", str(tmp_path))
    script = tmp_path / "run_otter.py"
    script.write_text(RUN_OTTER.format(chapter="ablations"))
    runpy.run_path(str(script), run_name="__main__")
    assert seen["files"] == ["ablations.ipynb", "idmap_runs/run.json"]
    assert not marker.exists() and secret.read_text() == "4242"
    out = json.loads((tmp_path / "results" / "results.json").read_text())
    assert out["score"] == 1.0 and [t["score"] for t in out["tests"]][:2] == [1.0, 0.0]
    assert "removed unread" in out["output"] and ".OTTER_LOG" in out["output"]


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/python3").exists(),
                    reason="needs a root grader and a system Python any user can run")
def test_without_bubblewrap_a_root_grader_runs_the_students_code_as_nobody(tmp_path):
    """Gradescope's container is root and has no user namespaces: the notebook then runs as the
    unprivileged user, which cannot write outside its folder; a Python it cannot reach is one clear
    message, not a crash."""
    from idmap_class import sandbox

    code = ("import os\nprint(os.getuid(), os.getgroups())\nopen('mine.txt', "
            "'w').write('x')\nopen('/root/x', 'w')")
    out = sandbox.run(["/usr/bin/python3", "-I", "-c", code], tmp_path, isolate=False)
    assert (f"{sandbox.UNPRIVILEGED} []" in out.output
            and "Permission denied: '/root/x'" in out.output)
    assert (tmp_path / "mine.txt").read_text() == "x" and not Path("/root/x").exists()
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    (locked / "py").write_bytes(Path("/usr/bin/python3").read_bytes())
    (locked / "py").chmod(0o700)
    (tmp_path / "work").mkdir()
    out = sandbox.run([str(locked / "py"), "-c", "1"], tmp_path / "work", isolate=False)
    assert out.returncode == 126 and "nobody" in out.output

