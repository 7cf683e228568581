"""The lines of the library, the tools and the tests stay within the repository's length (ruff,
configured in pyproject.toml; the tests' own limit in tests/ruff.toml)."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def ruff(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "ruff", "check", *args], cwd=cwd,
                          capture_output=True, text=True)


def test_every_line_of_the_library_tools_and_tests_is_within_the_configured_length():
    """The README's command, as written there (`python -m ruff check idmap_lib idmap_book idmap_class tools tests`)."""
    readme = (ROOT / "README.md").read_text()
    assert "python -m ruff check idmap_lib idmap_book idmap_class tools tests`" in readme
    r = ruff("idmap_lib", "idmap_book", "idmap_class", "tools", "tests")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_the_check_finds_a_line_over_the_length(tmp_path):
    """The lint reads this repository's configuration: a planted long line is found."""
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (tmp_path / "long.py").write_text("x = " + "1 + " * 30 + "1\n")
    (tmp_path / "short.py").write_text("x = 1\n")
    assert ruff("short.py", cwd=tmp_path).returncode == 0
    r = ruff("long.py", cwd=tmp_path)
    assert r.returncode == 1 and "E501" in r.stdout



def test_no_folder_of_the_library_is_left_out_of_the_check():
    """A planted long line in a module of every library folder is found (a folder excluded by name,
    as ``book`` once matched ``idmap_book`` too, would pass unchecked)."""
    line = "x = " + "1 + " * 30 + "1\n"
    folders = sorted({p.parent for package in ("idmap_lib", "idmap_book", "idmap_class")
                      for p in (ROOT / package).rglob("*.py")} | {ROOT / "tools"})
    for folder in folders:
        name = (folder / "planted_long_line.py").relative_to(ROOT)
        r = subprocess.run([sys.executable, "-m", "ruff", "check", "--force-exclude",
                            "--stdin-filename", str(name), "-"], input=line, cwd=ROOT,
                           capture_output=True, text=True)
        assert r.returncode == 1 and "E501" in r.stdout, f"{name} is not checked"
