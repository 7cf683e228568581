"""An exercise chapter read as parts: the book's cells, and each exercise (a sphinx-exercise
block: statement, starter cells, grading cells, its dropdown solution) gathered as one part.

What the editions (editions.py: Otter's master notebook, a solved copy for tests) are made from.
Cells tagged ``instructor`` or ``book-only`` (notes for instructors, sentences about the book's
hidden solutions) are left out.
"""
from __future__ import annotations

import ast
import re

DROP_TAGS = {"instructor", "book-only"}


def src(cell):
    """A cell's text (nbformat keeps it as a string or a list of lines)."""
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def tags(cell):
    """A cell's tags."""
    return set(cell.get("metadata", {}).get("tags", []))


def defined(source):
    """Top-level names a code cell defines (assignments, functions, classes)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                names |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def is_grading(source):
    """Whether `source` calls a grader (``checks.check_...`` or ``ablations.check``)."""
    return bool(re.search(r"\b(checks\.check_\w+|ablations\.check)\(", source))


DIRECTIVE = re.compile(r"```\{(exercise|solution)-(start|end)\}[^\n]*\n(?::[^\n]*\n)*```\n?", re.M)


def strip_directives(text):
    return DIRECTIVE.sub("", text).strip()


def label_of(text):
    """An exercise's ``:label:``, as a Python name."""
    m = re.search(r":label:\s*(\S+)", text)
    return m.group(1).replace("-", "_") if m else None


def split_chapter(nb):
    """The chapter as a list of parts: ("cell", cell) or ("exercise", {label, prompt, starters,
    grading, solutions}), with the cells tagged instructor/book-only left out."""
    parts, cur, where = [], None, None
    for cell in nb["cells"]:
        if tags(cell) & DROP_TAGS:
            continue
        text = src(cell)
        if cell["cell_type"] == "markdown" and "{exercise-start}" in text:
            cur = {"label": label_of(text), "prompt": [], "starters": [], "grading": [],
                   "solutions": [], "after": []}
            parts.append(("exercise", cur))
            where = "exercise"
        if cell["cell_type"] == "markdown" and "{solution-start}" in text:
            where = "solution"
        if where is None:
            parts.append(("cell", cell))
        elif where == "exercise":
            if cell["cell_type"] == "markdown":
                if strip_directives(text) and "{exercise-end}" not in text:
                    cur["prompt"].append(strip_directives(text))
            elif is_grading(text) and not defined(text):
                cur["grading"].append(text)
            else:
                cur["starters"].append(text)
        elif where == "solution" and cell["cell_type"] == "code":
            cur["solutions"].append(text)
        if cell["cell_type"] == "markdown" and "{exercise-end}" in text:
            where = "graded"
        if cell["cell_type"] == "markdown" and "{solution-end}" in text:
            where = None
        if where == "graded" and cell["cell_type"] == "code":
            (cur["grading"] if is_grading(text) else cur["starters"]).append(text)
        elif where == "graded" and cell["cell_type"] == "markdown" and strip_directives(text):
            cur["after"].append(strip_directives(text))
    return parts


def solution_for(starter, solutions):
    """The solution cell that defines every name `starter` defines, its grader calls left out (they
    stay tests); None if none does."""
    names = defined(starter)
    for s in solutions:
        if names and names <= defined(s):
            # the grading stays a test
            body = "\n".join(ln for ln in s.splitlines() if not is_grading(ln))
            return body.strip()
    return None
