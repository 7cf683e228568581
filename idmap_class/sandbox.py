"""A sandbox for code the grader did not write: one student's notebook, run where it cannot reach
anything else.

:func:`run` starts a command inside `bubblewrap <https://github.com/containers/bubblewrap>`_
(``bwrap``, Debian's package ``bubblewrap``): new user, PID, network, IPC and UTS namespaces (no
network at all; it sees only its own processes), the root filesystem made of read-only binds of the
system directories, the Python installation and the grader's checkout (the pristine library and the
published tests), a private ``/tmp``, and one writable folder: the submission's own scratch copy,
mounted at :data:`WORK`. It runs as an unprivileged user, with resource limits (address space, file
size, CPU time, processes and threads at once) and a wall-clock limit; when it ends -- by itself, at
its time limit, or with the grader -- the PID namespace ends with it, and every process it started
is killed (a detached process cannot outlive it).

Nothing else of the machine is visible: not the other submissions, not the CSV, not the instructor's
home (only the folders :func:`binds` lists). Where bubblewrap cannot run (macOS; a container without
user namespaces), :func:`available` says why and the batch grader refuses to run a student's code
unless told ``--no-sandbox``, which keeps the limits and the kill but not the isolation (and, where
the grader is root, runs it as ``nobody``: see the instructor guide).
"""
from __future__ import annotations

import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = "/submission"  # where the submission's scratch folder appears inside the sandbox
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# of /etc only what a dynamically linked Python and a local kernel need: never its secrets
# (/etc/shadow, ssh keys)
ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
       "/etc/nsswitch.conf",
       "/etc/hosts", "/etc/passwd", "/etc/group", "/etc/alternatives")
# what a notebook that runs the library needs of the checkout (the ablations chapter's)
LIBRARY = ("idmap_lib", "idmap_book", "idmap_class", "book/student")
UNPRIVILEGED = 65534  # nobody
MAX_OUTPUT = 64 * 2 ** 20  # bytes of its output kept


@dataclass(frozen=True)
class Limits:
    wall_s: float = 600.0      # the whole notebook, start to end
    # address space of each process (torch's CPU build needs ~2 GB of it to import)
    memory_mb: int = 6144
    file_mb: int = 256         # the largest file it may write
    cpu_s: int = 1200          # CPU seconds of each process
    tasks: int = 512           # processes and threads alive at once (a fork bomb stops there)


@dataclass(frozen=True)
class Outcome:
    returncode: int | None     # None: killed at the wall-clock limit
    seconds: float
    output: str                # the last lines of its stdout and stderr together
    stdout: bytes = b""        # all of them (at most MAX_OUTPUT bytes)

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def _python_dirs() -> list[Path]:
    """The folders the grader's Python lives in: its installation and its virtual environment."""
    dirs = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(),
            Path(sys.executable).resolve().parent.parent}
    return sorted(dirs)


def binds(library: bool = True) -> list[Path]:
    """Every folder the sandbox sees (read-only) besides its own submission: the system, Python and,
    with `library`, of the checkout only the library and the published student editions (never its
    master notebooks, solutions, data or history)."""
    return ([Path(p) for p in SYSTEM + ETC if Path(p).exists()] + _python_dirs()
            + ([ROOT / p for p in LIBRARY] if library else []))


@functools.cache
def available() -> str | None:
    """None where bubblewrap runs here, else why not (what to install or use instead)."""
    exe = shutil.which("bwrap")
    if not exe:
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    probe = subprocess.run([exe, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent",
                            "true"],
                           capture_output=True, text=True)
    if probe.returncode:
        return f"bubblewrap cannot make namespaces here ({probe.stderr.strip()[:200]})"
    return None


def _bwrap(workdir: Path, hidden: list[Path], library: bool, ro: dict) -> list[str]:
    # first: binds go on top
    cmd = [shutil.which("bwrap"), "--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev"]
    for d in binds(library):
        if d.exists():
            cmd += ["--ro-bind", str(d), str(d)]
    # grader folders that happen to lie inside a bound one (a submissions folder in the checkout)
    for h in hidden:
        cmd += ["--tmpfs", str(h)]
    for source, inside in ro.items():
        cmd += ["--ro-bind", str(source), inside]
    cmd += ["--bind", str(workdir), WORK, "--unshare-all", "--hostname", "sandbox",
            "--die-with-parent", "--new-session", "--as-pid-1",
            "--uid", str(UNPRIVILEGED), "--gid", str(UNPRIVILEGED), "--chdir", WORK, "--clearenv"]
    return cmd


def _own_tasks() -> int:
    """Processes and threads of this user now (what RLIMIT_NPROC counts)."""
    n = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            f = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except OSError:
            continue
        if int(f.get("Uid", "-1 ").split()[0]) == os.getuid():
            n += int(f.get("Threads", "1"))
    return n


def _pids_cgroup(tasks: int) -> Path | None:
    """A pids cgroup of its own for one sandbox (cgroup v1's pids hierarchy, or v2), where this user
    may make one: root ignores RLIMIT_NPROC, a cgroup's ``pids.max`` holds for everyone. None where
    none can be made."""
    for base in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
        d = base / f"idmap-sandbox-{os.getpid()}-{time.monotonic_ns()}"
        try:
            d.mkdir()
        except OSError:
            continue
        try:
            (d / "pids.max").write_text(str(tasks))
            return d
        except OSError:
            d.rmdir()
    return None


@functools.cache
def task_limit() -> str | None:
    """None where :attr:`Limits.tasks` holds here, else why not (said once by the batch grader)."""
    d = _pids_cgroup(1)
    if d or os.geteuid() != 0:
        _remove_cgroup(d)
        return None
    return ("the sandbox's process count is not limited here: root ignores RLIMIT_NPROC and no "
            "pids cgroup can be made (grade as an ordinary user, or where /sys/fs/cgroup/pids is "
            "writable)")


def _remove_cgroup(d: Path | None) -> None:
    for _ in range(50):  # its processes were killed; the kernel empties it within moments
        try:
            d and d.rmdir()
            return
        except OSError:
            time.sleep(0.1)


def _limit(limits: Limits, cgroup: Path | None, drop: bool = False):
    """The child's limits, set before it runs bwrap: resources, its process count (a cgroup of its
    own, else RLIMIT_NPROC over this user's tasks), its own process group; `drop`: it runs as
    UNPRIVILEGED (a grader that is root and has no bubblewrap, as on Gradescope, never runs a
    student's code as root)."""
    nproc = None if cgroup else _own_tasks() + limits.tasks

    def apply():
        mb = 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb * mb,) * 2)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb * mb,) * 2)
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s,) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if cgroup:
            (cgroup / "cgroup.procs").write_text(str(os.getpid()))
        else:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc,) * 2)
        os.setsid()  # its own process group: killed as a whole
        if drop:
            os.setgroups([])
            os.setgid(UNPRIVILEGED)
            os.setuid(UNPRIVILEGED)
    return apply


def run(cmd: list[str], workdir, env: dict | None = None, limits: Limits = Limits(), hidden=(),
        isolate: bool = True, library: bool = True, ro: dict | None = None,
        reply=None) -> Outcome:
    """Run `cmd` with `workdir` (made writable for the sandbox's user) as its only writable folder
    and working directory, the environment `env` only (plus HOME and a PATH), under `limits`.
    `hidden`: folders inside :func:`binds` the command must not see; `library`: the checkout's
    library is seen (:func:`binds`); `ro`: {folder here: where the sandbox sees it, read-only}.
    `reply(first line)`: what to write on its stdin once it has printed its first line (else its
    stdin is empty). `isolate=False` runs it without bubblewrap (limits and kill only, as
    UNPRIVILEGED where this process is root)."""
    workdir = Path(workdir).resolve()
    for p in [workdir, *workdir.rglob("*")]:
        if not p.is_symlink():
            p.chmod(0o777 if p.is_dir() else 0o666)
    home = "/tmp" if isolate else str(workdir)
    env = {"HOME": home, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "LANG": "C.UTF-8",
           "JUPYTER_RUNTIME_DIR": f"{home}/.jupyter-runtime", "MPLCONFIGDIR": f"{home}/.mpl",
           "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    if isolate:
        why = available()
        if why:
            raise RuntimeError(f"no sandbox: {why}")
        full = _bwrap(workdir, [Path(h).resolve() for h in hidden], library, ro or {})
        for k, v in env.items():
            full += ["--setenv", k, v]
        full += ["--", *cmd]
        cwd, penv = None, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    else:
        full, cwd, penv = list(cmd), workdir, env
    t0 = time.monotonic()
    cgroup = _pids_cgroup(limits.tasks)
    drop = not isolate and os.geteuid() == 0
    try:
        proc = subprocess.Popen(full, cwd=cwd, env=penv, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT,
                                stdin=subprocess.PIPE if reply else subprocess.DEVNULL,
                                preexec_fn=_limit(limits, cgroup, drop))
    except PermissionError as e:  # the unprivileged user cannot reach the grader's Python
        _remove_cgroup(cgroup)
        return Outcome(126, time.monotonic() - t0,
                       f"{e}: the user nobody (uid {UNPRIVILEGED}) must be able "
                       f"to run it (chmod o+x on its folders, e.g. /root)")
    lines = []
    reader = threading.Thread(target=_read, args=(proc, lines, reply), daemon=True)
    reader.start()
    try:
        rc = proc.wait(timeout=limits.wall_s)
    except subprocess.TimeoutExpired:
        rc = None
    finally:
        try:  # the whole group (and, in bubblewrap, the PID namespace with it)
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if proc.poll() is None:
            proc.wait()
        _remove_cgroup(cgroup)
    reader.join(5)
    out = b"".join(lines)
    tail = "\n".join(out.decode(errors="replace").splitlines()[-30:])
    return Outcome(rc, time.monotonic() - t0, tail, out)


def _read(proc, lines, reply, most=MAX_OUTPUT):
    """Collect `proc`'s stdout (at most `most` bytes), answering its first line with `reply`."""
    size = 0
    for line in proc.stdout:
        if size < most:
            lines.append(line[:most - size])
            size += len(line)
        if reply and len(lines) == 1:
            try:
                proc.stdin.write(reply(line))
                proc.stdin.close()
            except (OSError, ValueError):
                pass
            reply = None
