"""The live-training figure redrawn in place where students run the chapters outside Colab: a real
JupyterLab and a real classic notebook (6.5, the frontend Colab mirrors), each served on localhost
and driven in Chromium.

Each frontend gets its own virtual environment (the pinned versions below, from the package
registries) that sees this environment's packages behind its own (a .pth file), and the kernel
imports the library from this checkout. The notebook is a chapter's own setup cell and its
live-training call; the test watches the one figure's "yours" traces grow as the run logs its
windows. Before ``live.Output`` renewed the figure, JupyterLab with plotly < 7.2 kept its first
drawing (plotly.py #5865) and the classic notebook drew nothing (plotly >= 6 has no extension for
it: ``setup.use_jupyter_renderer``).
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path

import pytest

from support import SHARED

pytestmark = pytest.mark.slow  # a minute or two a frontend

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
# name: (its package, as pinned here; how to serve a folder on a port; the notebook's URL path)
FRONTENDS = {
    "jupyterlab": ("jupyterlab==4.6.6",
                   ["-m", "jupyter", "lab", "--IdentityProvider.token=", "--ServerApp.password=",
                    "--ServerApp.root_dir={dir}"], "lab/tree/live.ipynb?reset"),
    "classic notebook 6.5": ("notebook==6.5.7",
                             ["-m", "notebook", "--NotebookApp.token=", "--NotebookApp.password=",
                              "--notebook-dir={dir}"], "notebooks/live.ipynb"),
}
LIVE = 'mine = live.train_live("b_resnet32", "gated", scale="cpu", run=True, max_steps=40)'
YOURS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(
    g => (g.data || []).filter(t => (t.name || '').startsWith('yours')).reduce((n, t) => n + t.x.length, 0))"""


def _venv(folder: Path, package: str) -> Path:
    """A venv with `package` installed, seeing this environment's packages after its own; skip
    without pip's registries."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    site = subprocess.run([str(folder / "bin" / "python"), "-c",
                           "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], check=True, capture_output=True,
                           text=True).stdout.strip()
    Path(site, "zz_idmap_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pip = subprocess.run([str(folder / "bin" / "python"), "-m", "pip", "install", "-q", package],
                         capture_output=True, text=True)
    if pip.returncode != 0:
        pytest.skip(f"cannot install {package} here: {pip.stderr.strip()[-300:]}")
    return folder / "bin" / "python"


def _notebook(folder: Path):
    """Chapter 10's setup cell, then its live-training call (40 steps: four log windows)."""
    import nbformat

    nb = nbformat.read(ROOT / "book" / "10_gates.ipynb", as_version=4)
    setup = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith("# Setup."))
    nb.cells = [setup, nbformat.v4.new_code_cell("from idmap_book import live\n" + LIVE)]
    nbformat.write(nb, folder / "live.ipynb")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(python: Path, args, folder: Path, port: int, env: dict):
    argv = [str(python), *[a.format(dir=folder) for a in args], "--no-browser", "--allow-root",
            f"--port={port}", "--ip=127.0.0.1"]
    server = subprocess.Popen(argv, cwd=folder, env=env, stdout=open(folder / "server.log", "w"),
                              stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2)
            return server
        except OSError:
            assert server.poll() is None, (folder / "server.log").read_text()[-2000:]
            time.sleep(0.5)
    raise AssertionError("the server did not start: " + (folder / "server.log").read_text()[-2000:])


def _watch(port: int, path: str, shot: Path, seconds=300) -> list[list[int]]:
    """Open the notebook, run its two cells, and read the points of "yours" in every figure on the
    page each second until the cell prints its result line (or `seconds` pass)."""
    from playwright.sync_api import sync_playwright

    seen = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"http://127.0.0.1:{port}/{path}")
        editor = (".jp-NotebookPanel:not(.lm-mod-hidden) .jp-InputArea-editor" if "lab/" in path
                  else ".input_area")
        page.wait_for_selector(editor, timeout=120_000)
        time.sleep(3)  # the kernel connects
        page.locator(editor).first.click()
        page.keyboard.press("Shift+Enter")
        page.keyboard.press("Shift+Enter")
        end = time.time() + seconds
        while time.time() < end:
            time.sleep(1)
            seen.append(page.evaluate(YOURS))
            if page.get_by_text("stopped at step 40").count():  # the cell's last line
                seen.append(page.evaluate(YOURS))
                break
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
    return seen


@pytest.mark.parametrize("frontend", FRONTENDS)
def test_the_live_figure_is_redrawn_in_place(frontend, tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no {CHROMIUM}")
    package, args, path = FRONTENDS[frontend]
    python = _venv(tmp_path / "venv", package)
    work = tmp_path / "work"
    work.mkdir()
    _notebook(work)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "IDMAP_DATA": SHARED,
           "IDMAP_RUNS": str(work / "runs"),
           "JUPYTER_PATH": str(Path(sysconfig.get_paths()["data"]) / "share" / "jupyter"),
           "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
           "JUPYTER_DATA_DIR": str(tmp_path / "data"),
           "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"), "OMP_NUM_THREADS": "1"}
    port = _free_port()
    server = _serve(python, args, work, port, env)
    try:
        seen = _watch(port, path, tmp_path / f"{frontend.split()[0]}.png")
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # the server and its kernel
        server.wait(30)
    drawn = [n for n in seen if n]
    assert drawn, f"no figure of yours was drawn: {seen}"
    # one figure, redrawn: a copy added would leave [0, 2, 4, ...] (for a moment during a swap the
    # old and the new drawing are both on the page, each with the same points)
    assert (len(drawn[-1]) == 1 and all(len(set(n)) == 1
                                        for n in drawn)), f"copies of the figure added: {drawn}"
    counts = [n[0] for n in drawn]
    assert (counts[-1] == 8), (f"the last drawing lacks points (4 windows: loss and error each): "
                               f"{counts}")
    assert (len(set(counts)) >= 3
            and counts == sorted(counts)), f"not redrawn with new points: {counts}"
