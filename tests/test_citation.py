"""The book's version is defined once (idmap_lib.__version__): the package metadata reads it,
CITATION.cff and the site's footer say the same, and the Python floor is one number wherever it is
stated."""
import re
import sys
from pathlib import Path

import idmap_lib

ROOT = Path(__file__).resolve().parents[1]


def test_one_version_in_the_library_the_citation_and_the_footer():
    cff = (ROOT / "CITATION.cff").read_text()
    assert re.search(r"^version: (\S+)$", cff, re.M).group(1) == idmap_lib.__version__
    # both papers cited beside the book
    assert "arXiv:1603.05027" in cff and "arXiv:1611.01260" in cff
    assert 'dynamic = ["version"]' in (ROOT / "pyproject.toml").read_text()
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    try:
        import idmap_site
    finally:
        sys.path.pop(0)
    assert f"idmap {idmap_lib.__version__}" in idmap_site.footer()


def test_one_python_floor():
    floor = re.search(r'requires-python = ">=(3\.\d+)"',
                      (ROOT / "pyproject.toml").read_text()).group(1)
    assert f"Python {floor} or newer" in (ROOT / "README.md").read_text()
    assert sys.version_info >= tuple(map(int, floor.split(".")))
