"""The old import paths of the packages that moved out of the library, forwarded for one release:
``idmap_lib.book`` is ``idmap_book`` (the book's evidence, prose and figures) and
``idmap_lib.checks`` is ``idmap_class`` (the classroom). ``import idmap_lib.book.evidence.claims``
gives the very module ``idmap_book.evidence.claims`` (one copy, not two), and ``python -m
idmap_lib.checks`` runs the classroom's command line. Nothing of the library imports them."""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys


class _Alias(importlib.abc.Loader):
    """Loads an old name as the module already imported under its new one."""

    def __init__(self, module):
        self.module, self.spec = module, module.__spec__

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        module.__spec__ = self.spec  # the import system set the old name's spec: keep the real one


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, old: str, new: str):
        self.old, self.new = old, new

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(self.old + ".") or fullname.endswith(".__main__"):
            return None  # (python -m idmap_lib.book: found in the new package's folder, run as is)
        real = self.new + fullname[len(self.old):]
        module = importlib.import_module(real)
        return importlib.util.spec_from_loader(fullname, _Alias(module),
                                               is_package=hasattr(module, "__path__"))


def forward(old: str, new: str) -> None:
    """Make the package ``old`` (being imported) the package ``new``, with every module below it."""
    if not any(isinstance(f, _Finder) and f.old == old for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder(old, new))
    sys.modules[old] = importlib.import_module(new)
