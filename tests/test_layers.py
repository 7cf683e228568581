"""The layers, as the packages and folders show them: the library that trains (``idmap_lib``:
models <- engine <- the command line and the ``import idmap_lib as im`` API), then the book's
evidence, prose and figures built on it (``idmap_book``), then the classroom built on both
(``idmap_class``, the exercise graders). No module imports upward: read from every module's source
(``ast``), at module level and inside functions alike."""
import ast
import importlib
from pathlib import Path

import pytest

import idmap_lib as im

ROOT = Path(im.__file__).resolve().parents[1]
PACKAGES = ("idmap_lib", "idmap_book", "idmap_class")
# the longest name a module starts with says its layer
LAYERS = {"idmap_lib.models": 0, "idmap_lib.engine": 1, "idmap_lib": 2, "idmap_book": 3,
          "idmap_class": 4}
NAMES = ["models", "engine", "the library's API and command line", "book", "classroom"]
# the old import paths of the book and the classroom, forwarded for one release by name (never an
# import: idmap_lib/_forward.py)
FORWARDS = {"idmap_lib.book", "idmap_lib.checks"}


def modules():
    """{module name: path} of every module of the three packages."""
    out = {}
    for p in sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py")):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


MODULES = modules()
SOURCES = [p for n, p in MODULES.items() if n not in FORWARDS]


def layer(module: str) -> int:
    for name in sorted(LAYERS, key=len, reverse=True):
        if module == name or module.startswith(name + "."):
            return LAYERS[name]
    raise AssertionError(f"{module} is in no layer")


def imported(name: str, path: Path, source: str | None = None):
    """(line, module) of every idmap_lib module that the module `name` imports, anywhere in its
    source: a name imported from a package is that package's submodule where one exists, else the
    package itself."""
    tree = ast.parse(source if source is not None else path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1]
                                + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                       for a in node.names]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and getattr(node.func, "attr",
                          getattr(node.func, "id", None)) in ("import_module", "__import__")):
            targets = [node.args[0].value]
        else:
            continue
        for t in targets:
            if isinstance(t, str) and t.split(".")[0] in PACKAGES:
                yield node.lineno, t


def upward(name: str, path: Path, source: str | None = None) -> list:
    return [f"{path.relative_to(ROOT)}:{line}: {NAMES[layer(name)]} imports {t} "
            f"({NAMES[layer(t)]})"
            for line, t in sorted(set(imported(name, path, source))) if layer(t) > layer(name)]


def test_every_module_is_in_a_layer():
    assert {layer(n) for n in MODULES} == set(LAYERS.values())
    assert {n for n in MODULES if layer(n) == LAYERS["idmap_lib"]} == {
        "idmap_lib", "idmap_lib.__main__", "idmap_lib.cli", "idmap_lib._forward"} | FORWARDS


def test_no_module_imports_upward():
    problems = [p for name, path in MODULES.items() for p in upward(name, path)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("module, planted", [
    ("idmap_lib.models.units", "from ..engine import recipes"),
    ("idmap_lib.models.pruning", "import idmap_lib"),
    ("idmap_lib.engine.trainer", "def f():\n    from idmap_book.evidence.claims import CLAIMS\n"),
    ("idmap_lib.engine.loop", "def f():\n    from idmap_lib import cli\n"),
    ("idmap_lib.engine.stacked", "import idmap_class"),
    ("idmap_lib.cli", "def f():\n    from idmap_book.plan import sweep\n"),
    ("idmap_book.evidence.verdicts",
     "def f():\n    import importlib\n    importlib.import_module('idmap_class.batch')\n"),
])
def test_a_planted_upward_import_is_caught(module, planted):
    path = MODULES[module]
    assert upward(module, path) == []
    assert len(upward(module, path, path.read_text() + "\n\n" + planted + "\n")) == 1


def import_circle(sources: dict | None = None) -> list:
    """An import circle among the package's modules (deferred imports inside functions count: they
    only hide one), as the list of modules round it, or [] (``graphlib``). `sources`: {module:
    source} to read instead."""
    import graphlib
    sources = sources or {}
    graph = {n: {t for _, t in imported(n, p, sources.get(n))} - {n} for n, p in MODULES.items()}
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as e:
        return e.args[1]
    return []


def test_no_import_circle():
    assert import_circle() == [], " -> ".join(import_circle())


# inside the engine, the arrows of training: the steppers -> the loop -> the one entry. A stepper
# may import the loop (its contract, ``share_recipe``), never the entry; the loop imports neither
# a stepper (the entry hands it one) nor the entry.
STEPPER_MODULES = {"idmap_lib.engine.solo", "idmap_lib.engine.fused", "idmap_lib.engine.stacked"}
LOOP, ENTRY = "idmap_lib.engine.loop", "idmap_lib.engine.trainer"


def arrows_back(name: str, path: Path, source: str | None = None) -> list:
    against = ({ENTRY} if name in STEPPER_MODULES else
               {ENTRY} | STEPPER_MODULES if name == LOOP else set())
    return [f"{path.relative_to(ROOT)}:{line}: {name} imports {t}"
            for line, t in sorted(set(imported(name, path, source))) if t in against]


def test_the_steppers_stand_below_the_loop_and_the_loop_below_the_entry():
    problems = [p for name, path in MODULES.items() for p in arrows_back(name, path)]
    assert not problems, "\n".join(problems)
    entry = {t for _, t in imported(ENTRY, MODULES[ENTRY])}
    # the entry drives the loop with its default stepper (a caller hands it another)
    assert {"idmap_lib.engine.solo", LOOP} <= entry


@pytest.mark.parametrize("module, planted", [
    ("idmap_lib.engine.stacked", "from .trainer import train\n"),
    ("idmap_lib.engine.fused", "def f():\n    from . import trainer\n"),
    ("idmap_lib.engine.loop", "from .solo import Solo\n"),
    ("idmap_lib.engine.loop", "from .trainer import train\n"),
])
def test_a_planted_arrow_back_is_caught(module, planted):
    path = MODULES[module]
    assert arrows_back(module, path) == []
    assert len(arrows_back(module, path, path.read_text() + "\n\n" + planted)) == 1


def test_a_planted_import_circle_is_caught():
    """figures/live.py imports evidence/runs.py; runs importing live back (even inside a function)
    closes a circle."""
    live, runs = "idmap_book.figures.live", "idmap_book.evidence.runs"
    assert runs in {t for _, t in imported(live, MODULES[live])}
    circle = import_circle({runs: MODULES[runs].read_text()
                            + "\n\ndef f():\n    from ..figures import live\n"})
    assert {live, runs} <= set(circle)


def test_the_stable_api_and_the_recipes_builders():
    """``im.x`` names stay where chapters and scripts use them; every builder a recipe names is a
    model."""
    assert set(im.__all__) == {
        "UNITS", "SHORTCUTS", "BLOCKS", "FINALS", "MLP_KINDS", "cifar_resnet", "wide_resnet", "mlp",
        "imagenet_resnet",
        "make_unit", "residual_units", "zero_residuals", "gates", "unit_layout", "EXPERIMENTS",
        "config", "lr_at",
        "train", "run", "load_results", "load_data"}
    assert all(hasattr(im, n) for n in im.__all__)
    builders = {im.config(e, v)["model"]["builder"] for e, x in im.EXPERIMENTS.items()
                for v in x["variants"]}
    assert builders == {"cifar_resnet", "wide_resnet", "mlp"}
    assert all(getattr(im, b) is getattr(im.models, b) for b in builders)


def test_the_library_says_what_and_why_not_which_issue():
    """Docstrings and comments say what and why; the issue a line came from belongs in git log."""
    import re

    found = [f"{p.relative_to(ROOT)}:{i}" for p in SOURCES
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"(?i)\bissue [0-9]", line)]
    assert not found, "issue numbers in the library: " + ", ".join(found)


# each imports only the rooms before it
BOOK_ROOMS = ["page", "maths", "evidence", "plan", "figures"]


def room(module: str):
    """The index of the book room `module` sits in (None outside the rooms: book/__init__,
    __main__)."""
    parts = module.split(".")
    if len(parts) > 1 and parts[0] == "idmap_book" and parts[1] in BOOK_ROOMS:
        return BOOK_ROOMS.index(parts[1])
    return None


def room_problems(name: str, path: Path, source: str | None = None) -> list:
    here = room(name)
    return [f"{path.relative_to(ROOT)}:{line}: {BOOK_ROOMS[here]} imports {t}"
            for line, t in sorted(set(imported(name, path, source)))
            if here is not None and t.startswith("idmap_book")
            and (room(t) is None or room(t) > here)]


def test_the_book_rooms_import_only_the_rooms_before_them():
    problems = [p for name, path in MODULES.items() for p in room_problems(name, path)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("module, planted", [
    ("idmap_book.evidence.rule", "def f():\n    from ..plan import sweep\n"),
    ("idmap_book.page.palette", "from ..evidence.claims import CLAIMS\n"),
    # the book package itself sits above the rooms
    ("idmap_book.maths.theory", "from .. import say\n"),
])
def test_a_planted_import_from_a_later_room_is_caught(module, planted):
    path = MODULES[module]
    assert room_problems(module, path) == []
    assert len(room_problems(module, path, path.read_text() + "\n\n" + planted)) == 1


def test_every_book_module_is_in_a_room_and_the_book_names_it_there():
    """book/__init__ re-exports each module by its short name from the room it sits in
    (``book.claims``)."""
    import idmap_book as book

    found = {n.split(".")[2]: n.split(".")[1] for n in MODULES if room(n) is not None
             and n.count(".") == 2}
    assert found == book.ROOM_OF
    assert {n for n in MODULES if n.startswith("idmap_book.")
            and room(n) is None} == {"idmap_book.__main__"}
    assert book.claims is importlib.import_module("idmap_book.evidence.claims")


def test_init_files_only_re_export():
    """A package's __init__ names what its modules define; it defines nothing itself but the
    short-name lookup."""
    defs = [f"{p.relative_to(ROOT)}:{n.lineno} {n.name}"
            for p in SOURCES if p.name == "__init__.py"
            for n in ast.parse(p.read_text()).body
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name != "__getattr__"]
    assert not defs, "\n".join(defs)


def test_no_chapter_sets_torch_threads_itself():
    """One thread policy: the chapters' setup() sets torch's threads (every physical core); no
    chapter does."""
    import json

    book = ROOT / "book"
    found = [p.name for p in sorted(book.rglob("*.ipynb"))
             if "set_num_threads" in "".join("".join(c["source"])
                                             for c in json.loads(p.read_text())["cells"])]
    assert not found, found


# the command lines import each command's modules when it runs (their --help stays quick; noted in
# each); the loop imports the DDP helpers only under torchrun (one process never needs them); every
# other module imports the library at its top, where its header lists what it needs
LAZY = {"idmap_lib/cli.py", "idmap_class/__main__.py", "idmap_book/plan/commands.py"}
ONLY_UNDER_TORCHRUN = {("idmap_lib/engine/loop.py", "distributed")}


def test_the_library_imports_itself_at_module_level():
    found = sorted(f"{p.relative_to(ROOT)}:{s.lineno}" for p in SOURCES
                   if str(p.relative_to(ROOT)) not in LAZY
                   for f in ast.walk(ast.parse(p.read_text()))
                   if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                   for s in ast.walk(f)
                   if isinstance(s, ast.ImportFrom)
                   and (s.level or (s.module or "").split(".")[0] in PACKAGES)
                   and (str(p.relative_to(ROOT)), s.module) not in ONLY_UNDER_TORCHRUN)
    assert not found, found


# where torch's threads may be set for good: a chapter kernel's default (setup), a DDP rank's share of
# the cores, the grading sandbox's process (checks/box.py: it runs
# without the library); every other change is device.threads' block
SETS_THREADS = {"idmap_lib/engine/device.py", "idmap_book/page/setup.py",
                "idmap_lib/engine/distributed.py", "idmap_class/box.py"}


def test_the_library_changes_torch_threads_through_one_context():
    found = [str(p.relative_to(ROOT)) for p in SOURCES if "set_num_threads" in p.read_text()]
    assert set(found) <= SETS_THREADS, sorted(set(found) - SETS_THREADS)
    from idmap_lib.engine import device

    import torch

    before = torch.get_num_threads()
    with device.threads(1):
        assert torch.get_num_threads() == 1
        with device.threads(None):
            assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def scale_lists(source: str) -> list[int]:
    """Lines of `source` that spell out two or more scale names as a literal (a tuple, list, set or
    dict keys): a second definition of which scales there are."""
    from idmap_lib.engine import recipes

    names = set(recipes.SCALES)
    found = []
    for n in ast.walk(ast.parse(source)):
        elts = (n.keys if isinstance(n, ast.Dict) else n.elts
                if isinstance(n, (ast.Tuple, ast.List, ast.Set)) else [])
        if len(elts) >= 2 and all(isinstance(e, ast.Constant) and e.value in names for e in elts):
            found.append(n.lineno)
    return found


def test_which_scales_there_are_is_said_only_in_recipes():
    """The scales are data in engine/recipes.py (SCALES, CPU_SCALES, CLAIM_SCALES); the models, the
    engine, the book and the command line name them from there. (The exercises' classroom scales are
    the graders' own.)"""
    found = [f"{path.relative_to(ROOT)}:{line}" for name, path in MODULES.items()
             if name != "idmap_lib.engine.recipes" and not name.startswith("idmap_class")
             for line in scale_lists(path.read_text())]
    assert not found, found
    assert scale_lists('SCALES = ("cpu", "full")\n') == [1] and scale_lists('s = "cpu"\n') == []


def test_the_lr_jump_probe_is_named_only_in_recipes():
    """The probe's scale name is said once (recipes.JUMP_PROBE): no module but recipes and no
    chapter spells it."""
    import json

    from idmap_lib.engine.recipes import JUMP_PROBE

    def spelled(source):
        return [n.lineno for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Constant)
                and n.value == JUMP_PROBE]

    found = [f"{path.relative_to(ROOT)}:{line}" for name, path in MODULES.items()
             if name != "idmap_lib.engine.recipes" for line in spelled(path.read_text())]
    for p in sorted((ROOT / "book").glob("*.ipynb")):
        cells = json.loads(p.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        code = "\n".join(line for line in code.splitlines()
                         if not line.lstrip().startswith(("%", "!")))
        found += [f"{p.name}:{line}" for line in spelled(code)]
    assert not found, found
    assert spelled(f'x = f(scale="{JUMP_PROBE}")\n') == [1]


HANDFUL = 10  # the most book modules a chapter may import


def chapter_modules(source: str) -> set[str]:
    """The book modules a chapter's code imports (``from idmap_book import claims``, ``...
    import idmap_book.evidence.claims``), each once, by its short name; the page helpers the
    book re-exports by name (``say``, ``styled``, ``setup``, ...) are the page's vocabulary, not
    modules."""
    import idmap_book as book

    found = set()
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("idmap_book"):
            if n.module == "idmap_book":
                found |= {a.name for a in n.names if a.name in book.ROOM_OF}
            else:
                found.add(n.module.rpartition(".")[2])
        elif isinstance(n, ast.Import):
            found |= {a.name.rpartition(".")[2] for a in n.names
                      if a.name.startswith("idmap_book.")}
    return found


def test_a_chapter_imports_a_handful_of_book_modules():
    """Chapters are thin: prose, a few library calls. The blocks that chapters 7-10 repeat are one
    function each (book/figures/blocks.py, yourself.cell), so no chapter needs more than a handful
    of modules."""
    import json

    over = {}
    for p in sorted((ROOT / "book").glob("*.ipynb")):
        cells = json.loads(p.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        code = "\n".join(line for line in code.splitlines()
                         if not line.lstrip().startswith(("%", "!")))
        mods = chapter_modules(code)
        if len(mods) > HANDFUL:
            over[p.name] = sorted(mods)
    assert not over, over
    planted = "from idmap_book import claims, curves, say\nimport " \
              "idmap_book.evidence.rule\nfrom idmap_book.evidence.tables import styled\n"
    assert chapter_modules(planted) == {"claims", "curves", "rule", "tables"}


def folder_joins(source: str) -> list[int]:
    """Lines of `source` that join a path with "results" or "checkpoints" (``x / "checkpoints"``): a
    second definition of where those folders are."""
    return [n.lineno for n in ast.walk(ast.parse(source)) if isinstance(n, ast.BinOp)
            and isinstance(n.op, ast.Div)
            and isinstance(n.right, ast.Constant) and n.right.value in ("results", "checkpoints")]


def test_where_results_and_checkpoints_go_is_said_only_in_paths():
    """engine/paths.py says where results and checkpoints are kept, the library's and a reader's
    runs folder's (runs_folder); nobody else joins those names onto a path. (Gradescope's results/
    is Gradescope's layout.)"""
    own = {"idmap_lib.engine.paths", "idmap_class.gradescope"}
    found = [f"{path.relative_to(ROOT)}:{line}" for name, path in MODULES.items()
             if name not in own
             for line in folder_joins(path.read_text())]
    assert not found, found
    assert (folder_joins('p = root / "checkpoints"\n') == [1]
            and folder_joins('p = root / "weights"\n') == [])


def test_the_moved_commands_forward_to_the_book_and_the_classroom(capsys, monkeypatch):
    """``python -m idmap_lib sweep|mnist|book ...|checks ...`` (their forms before the book and the
    classroom became packages) run ``python -m idmap_book ...`` and ``python -m idmap_class ...``
    for one release; the library names them, never imports them."""
    from idmap_lib import cli
    from idmap_book import __main__ as book_main
    from idmap_class import __main__ as checks_main

    got = []
    monkeypatch.setattr(book_main, "main", lambda argv: got.append(("book", argv)) or 3)
    monkeypatch.setattr(checks_main, "main", lambda argv: got.append(("checks", argv)))
    assert cli.main(["book", "check", "--expect", "u"]) == 3 and cli.main(["checks", "guide"]) == 0
    assert cli.main(["sweep", "--next"]) == 3 and cli.main(["mnist", "--list"]) == 3
    assert got == [("book", ["check", "--expect", "u"]), ("checks", ["guide"]),
                   ("book", ["sweep", "--next"]), ("book", ["mnist", "--list"])]
    assert "python -m idmap_book sweep" in cli.__doc__


def test_the_old_import_paths_forward_to_the_same_modules():
    """``idmap_lib.book.X`` and ``idmap_lib.checks.X`` are ``idmap_book.X`` and ``idmap_class.X``
    themselves (one copy of each module), also as ``python -m`` (a fresh interpreter)."""
    import subprocess
    import sys

    code = ("import idmap_lib.book.evidence.claims as a, idmap_book.evidence.claims as b\n"
            "from idmap_lib.checks import delegates\nimport idmap_class.delegates as d\n"
            "from idmap_lib import book\nimport idmap_book\n"
            "assert a is b and delegates is d and book is idmap_book, (a, b)\n"
            "assert a.__spec__.name == 'idmap_book.evidence.claims'\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-800:]
    run = subprocess.run([sys.executable, "-m", "idmap_lib.checks", "--help"], capture_output=True,
                         text=True, cwd=ROOT)
    assert run.returncode == 0 and "python -m idmap_class" in run.stdout, run.stderr[-800:]


def test_the_setup_cell_imports_before_it_installs_what_is_missing():
    """A chapter's setup cell imports ``idmap_book.page.repository`` (so ``import idmap_lib``)
    and only then installs the requirements that are missing: nothing on that path may need a
    requirement besides torch (a third-party import at a module's top there breaks Colab's first
    run). Planted: tqdm at loop.py's top."""
    import subprocess
    import sys

    from idmap_book.page.repository import requirements

    blocked = sorted({r for r in requirements() if r not in ("torch", "torchvision", "numpy")})
    code = ("import sys\nfor m in %r: sys.modules[m] = None\n" % blocked
            + "import idmap_lib, idmap_book.page.repository\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT)
    assert run.returncode == 0, run.stderr[-800:]
    assert "tqdm" in blocked and "plotly" in blocked


@pytest.mark.parametrize("argv", [["train", "--help"], None])
def test_the_command_that_trains_and_the_api_import_nothing_of_the_book_or_the_classroom(argv):
    """`python -m idmap_lib train` and `import idmap_lib` load the models and the engine only (the
    command had imported 13 book modules for one tuple of MNIST depths)."""
    import subprocess
    import sys

    run = ("import runpy; sys.argv = ['idmap_lib'] + %r\ntry:\n    runpy.run_module('idmap_lib', "
           "run_name='__main__')\nexcept SystemExit:\n    pass\n" % argv) if argv else \
        "import idmap_lib\n"
    code = ("import sys\n" + run + "print(' '.join(m for m in sys.modules if "
            "m.split('.')[0] in %r), file=sys.stderr)" % (PACKAGES,))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    loaded = r.stderr.strip().splitlines()[-1].split()
    assert "idmap_lib.engine.loop" in loaded or argv is None
    assert loaded and all(layer(m) <= LAYERS["idmap_lib"] and m not in FORWARDS
                          for m in loaded), [m for m in loaded if layer(m) > 2]


# what ``python -m idmap_lib train`` imports when it trains full_preact-110 (one step, on a random
# CIFAR-10 of the recipe's size: no disk, no download): {file under idmap_lib/: its lines}
TRAIN_ONE_STEP = """
import json, runpy, sys, tempfile
from pathlib import Path
import torch
from idmap_lib.engine import data
def random_cifar(name, path=None, **kw):
    g = torch.Generator().manual_seed(0)
    x = lambda n: torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=g)
    return data.Data(name, x(20000), torch.arange(20000) % 10, x(2000), torch.arange(2000) % 10)
data.load = random_cifar
d = tempfile.mkdtemp()
sys.argv = ["idmap_lib", "train", "--experiment", "a_table2_activations", "--variant",
            "full_preact-110", "--max-steps", "1", "--out", d, "--checkpoint-dir", d,
            "--no-progress"]
try:
    runpy.run_module("idmap_lib", run_name="__main__")
except SystemExit as e:
    assert not e.code, e.code
top = Path(sys.modules["idmap_lib"].__file__).parent
files = {Path(m.__file__).relative_to(top).as_posix(): len(Path(m.__file__).read_text().splitlines())
         for n, m in sys.modules.items() if n.split(".")[0] == "idmap_lib"}
print(json.dumps(files), file=sys.stderr)
"""
READING_FILES, READING_LINES = 8, 2500  # the reading path: what a newcomer reads, in order
CLOSURE_FILES, CLOSURE_LINES = 28, 3650  # all that training imports (a budget: growth is seen)


def reading_path(doc: str) -> tuple[list[str], list[str]]:
    """The reading path of ``idmap_lib.__doc__`` (its numbered lines: "1. models/registry.py: ...")
    and the helpers it names (the paragraph "Helpers on the way, ..."), as files under
    idmap_lib/."""
    import re

    path = re.findall(r"^\d+\. ([\w/]+\.py): ", doc, re.M)
    para = re.search(r"^Helpers on the way.*?(?:\n\n|\Z)", doc, re.M | re.S)
    helpers = re.findall(r"(?<![\w/])((?:models/|engine/)?\w+\.py)", para.group() if para else "")
    return path, helpers


def reading_path_problems(doc: str, closure: dict[str, int]) -> list[str]:
    """What is wrong with the reading path of `doc` for a training that imports `closure`."""
    path, helpers = reading_path(doc)
    lines, rest = sum(closure.get(f, 0) for f in path), set(closure) - set(path)
    out = [f"{f} is on the reading path but training does not import it"
           for f in path if f not in closure]
    if not path or len(path) > READING_FILES or lines > READING_LINES:
        out.append(f"the reading path is {len(path)} files, {lines} lines: at most "
                   f"{READING_FILES}, {READING_LINES}")
    out += [f"training imports {f}: put it on the reading path or name it among the helpers"
            for f in sorted(rest - set(helpers))]
    out += [f"{f} is named a helper but training does not import it (or it is on the path)"
            for f in sorted(set(helpers) - rest)]
    if len(closure) > CLOSURE_FILES or sum(closure.values()) > CLOSURE_LINES:
        out.append(f"training imports {len(closure)} files, {sum(closure.values())} lines: at "
                   f"most {CLOSURE_FILES}, {CLOSURE_LINES}")
    return out


def test_a_newcomer_reads_a_handful_of_files_to_train_resnet_110():
    """``idmap_lib.__doc__`` names, in order, the files that say how a ResNet-110 trains (at most 8,
    2,500 lines), then every other module the training imports, each a helper taken by its name;
    all that it imports stays within a budget. Measured on the command itself, training a step."""
    import json
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", TRAIN_ONE_STEP], capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    closure = json.loads(r.stderr.strip().splitlines()[-1])
    assert "engine/loop.py" in closure and "models/networks.py" in closure
    assert reading_path_problems(im.__doc__, closure) == []


def test_a_planted_module_or_a_longer_reading_path_is_caught():
    path, helpers = reading_path(im.__doc__)
    assert path[0] == "models/registry.py" and path[-1] == "engine/trainer.py"
    closure = {f: 100 for f in path + helpers}
    assert reading_path_problems(im.__doc__, closure) == []
    new = reading_path_problems(im.__doc__, {**closure, "engine/new.py": 10})
    assert any("engine/new.py" in p for p in new)
    longer = reading_path_problems(im.__doc__, {**closure, "engine/loop.py": 2000})
    assert any("reading path is 8 files" in p for p in longer), longer
    ninth = im.__doc__.replace("8. engine/trainer.py:", "8. engine/trainer.py: x\n9. cli.py:")
    assert any("9 files" in p for p in reading_path_problems(ninth, closure))
    grown = {**closure, "engine/data.py": CLOSURE_LINES}
    assert any(f"at most {CLOSURE_FILES}, {CLOSURE_LINES}" in p
               for p in reading_path_problems(im.__doc__, grown))


def definitions(source: str, names) -> list[tuple[str, int]]:
    """Where `source` defines one of `names`: a function, a parameter or an assigned variable."""
    out = []
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in names:
            out.append((n.name, n.lineno))
        elif isinstance(n, ast.arg) and n.arg in names:
            out.append((n.arg, n.lineno))
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in names:
            out.append((n.id, n.lineno))
    return out


def test_one_idea_one_name():
    """``say`` shows a page's computed prose (page/prose.py), ``in_sentence`` lowercases a title
    inside a sentence (claim_words.py); a name means one thing, so each is defined once, and the
    words of something are ``<thing>_in_words``, never a bare ``in_words``. A title is never
    lowercased whole (``power`` once wrote 'bn after addition')."""
    import re

    found, where = {}, []
    for name, path in MODULES.items():
        source = path.read_text()
        for what, line in definitions(source, ("say", "in_words", "in_sentence")):
            found.setdefault(what, []).append(name)
            where.append(f"{name}:{line} {what}")
        assert not re.search(r"TITLES\[[^]]+\]\.lower\(\)|title\[0\]\.lower\(\)", source), name
    assert found == {"say": ["idmap_book.page.prose"],
                     "in_sentence": ["idmap_book.evidence.claim_words"]}, where
    assert definitions("def f(say=print):\n    in_words = 1\n", ("say", "in_words")) == [
        ("say", 1), ("in_words", 2)]
