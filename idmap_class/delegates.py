"""Answers that are the library's, not the student's: a graded object of the implementation
exercises that is, calls or imports idmap_lib (its units, shortcuts, probes, or the graders'
references) is flagged and marked 0, read from the notebook's source by the trusted grader (never
run).

The grading sandbox does not hold the library (:mod:`.collect`), so an answer that reaches it in a
way this reading misses fails there anyway (it cannot import it); this says why, in the grader's
words. What the student edition allows (:data:`ALLOWED`) is said in the edition itself.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

# the library and the packages built on it: what the graders compare with
LIBRARY = ("idmap_lib", "idmap_book", "idmap_class")


def _ours(mod) -> str:
    """The package of ours `mod` belongs to, or ''."""
    top = (mod or "").split(".")[0]
    return top if top in LIBRARY else ""
ALLOWED = ("Your answers may use Python's standard library (`math`...), `torch` (`torch.nn`, "
           "`torch.nn.functional`) and `numpy`; not `idmap_lib` (`im`, `checks`, `probes`): its "
           "units, shortcuts and probes are what the graders compare your code with, so an answer "
           "that is, calls or imports them scores 0 (and is flagged), and the grader runs your "
           "code where the library is not installed.")
DYNAMIC = {"__import__", "importlib", "exec", "eval", "globals"}


def _trees(nb_path):
    for c in json.loads(Path(nb_path).read_text()).get("cells", []):
        if c.get("cell_type") == "code":
            src = c.get("source", "")
            src = "".join(src) if isinstance(src, list) else str(src)
            try:
                yield ast.parse("\n".join(ln for ln in src.splitlines()
                                          if not ln.lstrip().startswith(("%", "!"))))
            except SyntaxError:
                continue


def _library_names(trees) -> set:
    """Every name the notebook binds to something of the library's (imports, and assignments from
    them)."""
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {(a.asname or a.name).split(".")[0] for a in node.names
                          if _ours(a.name)}
            elif isinstance(node, ast.ImportFrom) and _ours(node.module):
                names |= {a.asname or a.name for a in node.names}
    return names


def _definitions(trees) -> dict:
    """{top-level name: [the statements that define it]} (def, class, assignment, import)."""
    defs = {}
    for tree in trees:
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defs.setdefault(stmt.name, []).append(stmt)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            defs.setdefault(n.id, []).append(stmt)
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for a in stmt.names:
                    defs.setdefault((a.asname or a.name).split(".")[0], []).append(stmt)
    return defs


def uses_library(nb_path, name: str) -> str:
    """'' where graded object `name` is the student's own code, else what of the library it uses."""
    trees = list(_trees(nb_path))
    library, defs = _library_names(trees), _definitions(trees)
    seen, todo = set(), [name]
    while todo:  # the definition, and every name of the notebook's it refers to, in turn
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        for stmt in defs.get(n, []):
            for node in ast.walk(stmt):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    mod = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                    if _ours(mod):
                        return f"imports {_ours(mod)}"
                    if (mod or "") == "importlib":
                        return "imports modules by name (importlib)"
                elif isinstance(node, ast.Name):
                    if node.id in library:
                        return "uses idmap_lib (a name the notebook imported from it)"
                    if node.id in DYNAMIC:
                        return "imports or runs code by name (__import__, exec, eval, globals)"
                    if node.id in defs and node.id not in seen:
                        todo.append(node.id)
                elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                        and any(lib in node.value for lib in LIBRARY):
                    return "names idmap_lib"
    return ""


def flagged(nb_path, chapter_plan) -> dict:
    """{question: why} for every implementation question whose graded object uses the library."""
    out = {}
    for call in chapter_plan["calls"]:
        if call["check"] == "ablations.check" or not call["args"]:
            continue
        try:
            name = ast.parse(call["args"][0], mode="eval").body
        except SyntaxError:
            continue
        why = uses_library(nb_path, name.id) if isinstance(name, ast.Name) else ""
        if why and call["question"] not in out:
            out[call["question"]] = (f"{name.id} {why}: the answer is the library's, not yours "
                                     f"(flagged; see what the notebook says may be imported)")
    return out
