"""checks/student.py: what the student edition installs on Colab (issue 33.6)."""
import importlib.metadata
import importlib.util

from idmap_class import student


def test_otter_is_installed_with_every_missing_requirement_down_the_graph_and_nothing_upgraded(monkeypatch, capsys):
    """otter's own requirements and theirs, each installed only where nothing of that name is
    (``--no-deps``): after the install ``pip check`` finds no requirement missing. What the runtime
    ships (ipywidgets 7) stays."""
    graph = {"otter-grader": ["ipywidgets>=8", "nbformat", "dill", "pytest; extra == 'test'"],
             "nbformat": ["fastjsonschema", "traitlets>=5"], "fastjsonschema": [], "dill": [],
             "jsonpointer": []}
    present = {"ipywidgets", "traitlets"}  # what the runtime ships (an older ipywidgets: kept)
    calls = []

    def run(cmd, check):
        assert cmd[3:6] == ["install", "-q", "--no-deps"]
        calls.append(cmd[6:])
        present.update(n.split("==")[0] for n in cmd[6:])

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(student.subprocess, "run", run)
    monkeypatch.setattr(student, "_installed", lambda d: d in present)
    monkeypatch.setattr(importlib.metadata, "requires", lambda d: graph[d])
    got = student.ensure_otter("otter-grader==7.0.0")
    assert calls == [["otter-grader==7.0.0"], ["nbformat", "dill"], ["fastjsonschema"]]
    assert got == ["otter-grader==7.0.0", "nbformat", "dill", "fastjsonschema"]
    # an extra is not installed; nothing upgraded
    assert "pytest" not in present and "ipywidgets" in present
    unmet = [r for d in present if d in graph for r in graph[d]
             if "extra" not in r and r.split(">")[0].split(";")[0].strip() not in present]
    assert unmet == []
    assert "installed otter-grader==7.0.0 and nbformat, dill, fastjsonschema (nothing already here changed)" in \
        capsys.readouterr().out
