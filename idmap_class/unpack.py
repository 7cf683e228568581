"""A submission read, never run: unpacked into a scratch folder of its own (:func:`unpack`: no path
outside it, no link, no pickle -- Otter's ``.OTTER_LOG`` is a dill pickle and is never loaded -- no
checkpoint, a size limit), its links and special files removed (:func:`strip_links`), its
free-text answers read from the source (:func:`free_text`)."""
from __future__ import annotations

import ast
import json
import os
import shutil
import stat
import zipfile
from pathlib import Path

from .chapter_parts import src

# a submission's files, unpacked (runs are ~10 kB each; checkpoints stay out)
MAX_UNPACKED_MB = 200
# pickles and weights: a grader never reads them
NEVER = (".otter_log", ".pkl", ".pickle", ".dill", ".pt", ".pth", ".npy", ".npz")
FREE_TEXT = ("prediction", "explanation")  # prefixes of the names whose text the CSV collects


def unpack(sub: Path, scratch: Path) -> tuple[Path | None, str, list[str]]:
    """(the submission's notebook copied into `scratch`, or None; why not; what was left out)."""
    left_out = []
    if sub.stat().st_size == 0:
        return None, "empty file", left_out
    if sub.suffix == ".zip":
        if not zipfile.is_zipfile(sub):
            return None, ("not a readable zip (corrupt or cut off): ask the student to export "
                          "again"), left_out
        try:
            with zipfile.ZipFile(sub) as z:
                infos = z.infolist()
                if sum(i.file_size for i in infos) > MAX_UNPACKED_MB * 2 ** 20:
                    return None, f"the zip unpacks to more than {MAX_UNPACKED_MB} MB", left_out
                for info in infos:
                    rel = Path(info.filename)
                    if info.is_dir():
                        continue
                    link = (info.external_attr >> 16) & 0o170000 == 0o120000
                    if rel.is_absolute() or ".." in rel.parts or link:
                        left_out.append(f"{info.filename} (outside the submission, or a link)")
                        continue
                    if rel.name == ".OTTER_LOG":  # in every export of Otter's: a pickle, never read
                        continue
                    if (rel.name.lower().endswith(NEVER) or "checkpoints" in rel.parts
                            or "__MACOSX" in rel.parts):
                        left_out.append(info.filename)
                        continue
                    target = scratch / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(z.read(info))
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
            return None, f"corrupt zip ({e}): ask the student to export again", left_out
        found = [p for p in scratch.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts]
        if len(found) != 1:
            return None, f"the zip holds {len(found)} notebooks, not one", left_out
        nb_path = found[0]
    else:
        nb_path = scratch / sub.name
        shutil.copyfile(sub, nb_path)
    try:
        nb = json.loads(nb_path.read_text())
        assert isinstance(nb.get("cells"), list)
    except (ValueError, UnicodeDecodeError, AssertionError, AttributeError):
        return None, "not a notebook (invalid JSON)", left_out
    return nb_path, "", left_out


def strip_links(folder: Path) -> list[str]:
    """Remove, without following any, every entry under `folder` that is not a plain folder or a
    plain file with one name (symbolic links, hard links, devices, pipes, sockets: what a notebook
    could make to point the trusted grader at a file of the instructor's or at the book's runs);
    returns their paths relative to `folder`."""
    gone = []
    for top, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            p = Path(top) / name
            st = os.lstat(p)
            plain = stat.S_ISDIR(st.st_mode) or (stat.S_ISREG(st.st_mode) and st.st_nlink == 1)
            if not plain:
                gone.append(str(p.relative_to(folder)))
                p.unlink()
        dirs[:] = [d for d in dirs if (Path(top) / d).is_dir() and not (Path(top) / d).is_symlink()]
    return sorted(gone)


def free_text(nb_path) -> dict:
    """{name: text} of the prediction_.../explanation_... strings the notebook assigns (read, not
    run)."""
    found = {}
    for cell in json.loads(Path(nb_path).read_text())["cells"]:
        if cell.get("cell_type") != "code":
            continue
        try:
            tree = ast.parse(src(cell))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                    isinstance(node.value.value, str):
                for t in node.targets:
                    if isinstance(t, ast.Name) and t.id.startswith(FREE_TEXT):
                        found[t.id] = " ".join(node.value.value.split())
    return found
