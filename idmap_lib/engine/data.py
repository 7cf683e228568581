"""Datasets as uint8 tensors: CIFAR-10, CIFAR-100, MNIST.

Two sources, one result (`Data`: uint8 images N x C x H x W, int64 labels, and a record of the
source):

* torchvision's normal download into ``data/`` (what readers, Colab and instructors get by default);
* a local copy: an image-folder tree (``train/<class>/*.jpg``, ``test/<class>/*.jpg``) or a
  ``.tar.gz`` of one (the layout of ``../shared/data/*.tar.gz``), chosen by the ``data`` argument /
  ``--data`` option or the ``IDMAP_DATA`` environment variable. It may name the tarball itself, an
  extracted tree, or a directory holding ``<name>-jpeg.tar.gz`` / ``<name>-jpeg/`` / ``<name>/``.

A local copy is decoded once into ``data/cache/<name>-<sha256 prefix>.pt`` (uint8 tensors); JPEGs
are never decoded again, let alone per epoch. Preprocessing (Paper A: per-pixel mean subtraction;
Wide ResNets: per-channel mean/std; MNIST: pixels / 255) is computed here and applied on the
training device by the trainer, after the batch is gathered from the uint8 tensors.
"""
from __future__ import annotations

import hashlib
import io
import logging
import os
import re
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

LOG = logging.getLogger(__name__)

DATASETS = {
    # name: (torchvision class, image shape, classes in canonical label order)
    "cifar10": ("CIFAR10", (3, 32, 32), ["airplane", "automobile", "bird", "cat", "deer",
                                         "dog", "frog", "horse", "ship", "truck"]),
    "cifar100": ("CIFAR100", (3, 32, 32), None),
    "mnist": ("MNIST", (1, 28, 28), [str(d) for d in range(10)]),
}
NUM_CLASSES = {"cifar10": 10, "cifar100": 100, "mnist": 10}
# (train, test) images
SIZES = {"cifar10": (50000, 10000), "cifar100": (50000, 10000), "mnist": (60000, 10000)}
ENV_VAR = "IDMAP_DATA"
# the repository checkout, when the package is used from one
_CHECKOUT = Path(__file__).resolve().parents[2]


def data_root() -> Path:
    """The library's data root (recorded results, checkpoints, weights, downloads, the
    decoded-dataset cache): ``$IDMAP_ROOT``, else data/ of the repository checkout the package is
    used from (a clone on Colab, the tests, the book build), else a folder of the user's own. Never
    the working directory: the same library finds the same recorded runs wherever a notebook
    runs."""
    if os.environ.get("IDMAP_ROOT"):
        return Path(os.environ["IDMAP_ROOT"])
    if (_CHECKOUT / "pyproject.toml").is_file():
        return _CHECKOUT / "data"
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "idmap"


DEFAULT_ROOT = data_root()


class DataUnavailable(RuntimeError):
    """No source could provide the dataset (offline and no local copy)."""


@dataclass
class Data:
    name: str
    x_train: torch.Tensor  # uint8, N x C x H x W
    y_train: torch.Tensor  # int64, N
    x_test: torch.Tensor
    y_test: torch.Tensor
    source: dict = field(default_factory=dict)  # recorded with every result

    @property
    def num_classes(self) -> int:
        return NUM_CLASSES[self.name]


# ----------------------------------------------------------------------------------------------
# locating a local copy

def _find_local(name: str, path: Path) -> Path | None:
    """The tarball or tree for `name` at `path` (a tarball, a tree, or a directory holding
    either)."""
    if path.is_file():
        return path if path.name.endswith((".tar.gz", ".tgz", ".tar")) else None
    if not path.is_dir():
        return None
    for cand in (f"{name}-jpeg.tar.gz", f"{name}.tar.gz", f"{name}-jpeg", name):
        p = path / cand
        if p.is_file() or (p / "train").is_dir():
            return p
    if (path / "train").is_dir() and (path / "test").is_dir():
        return path  # the directory is itself an image-folder tree
    return None


def _fingerprint(src: Path) -> str:
    """sha256 of a tarball's bytes, or of a tree's file list with sizes (cheap, content-sensitive
    enough)."""
    h = hashlib.sha256()
    if src.is_file():
        with open(src, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    else:
        for p in sorted(src.rglob("*")):
            if p.is_file():
                h.update(f"{p.relative_to(src)}:{p.stat().st_size}\n".encode())
    return h.hexdigest()


_SPLIT_RE = re.compile(r"(?:^|/)(train|test)/([^/]+)/([^/]+)$")


def _natural_key(s: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def _decode_local(name: str, src: Path) -> dict:
    """Decode every image of a tarball/tree once. Labels: class folders in canonical order."""
    import numpy as np
    from PIL import Image

    mode = "L" if DATASETS[name][1][0] == 1 else "RGB"

    def decode(b):  # PIL (torchvision.io's decoders are deprecated since 0.29)
        a = np.array(Image.open(io.BytesIO(b)).convert(mode))  # a writable copy
        return torch.from_numpy(a[:, :, None] if a.ndim == 2 else a).permute(2, 0, 1)

    files = {"train": [], "test": []}  # (class, filename, bytes)
    if src.is_file():
        with tarfile.open(src, "r:*") as tar:
            for m in tar:
                mt = _SPLIT_RE.search(m.name) if m.isfile() else None
                if mt:
                    files[mt[1]].append((mt[2], mt[3], tar.extractfile(m).read()))
    else:
        for split in files:
            for p in (src / split).glob("*/*"):
                if p.is_file():
                    files[split].append((p.parent.name, p.name, p.read_bytes()))
    classes = sorted({c for c, _, _ in files["train"]}, key=_natural_key)
    canonical = DATASETS[name][2]
    if canonical is not None:
        if sorted(classes) != sorted(canonical):
            raise ValueError(f"{src}: class folders {classes} do not match {name}'s classes "
                             f"{canonical}")
        classes = canonical
    index = {c: i for i, c in enumerate(classes)}
    out = {}
    for split, items in files.items():
        if not items:
            raise ValueError(f"{src}: no images under {split}/<class>/")
        items.sort(key=lambda t: (index[t[0]], _natural_key(t[1])))
        xs = [decode(b) for _, _, b in items]
        out[f"x_{split}"] = torch.stack(xs).contiguous()
        out[f"y_{split}"] = torch.tensor([index[c] for c, _, _ in items], dtype=torch.int64)
    return out


def _atomic_save(obj, path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def load_local(name: str, src: Path, root: Path = DEFAULT_ROOT, verbose: bool = True) -> Data:
    """Decode `src` once into root/cache/<name>-<sha prefix>.pt, then load that cache."""
    sha = _fingerprint(src)
    cache = Path(root) / "cache" / f"{name}-{sha[:16]}.pt"
    if cache.exists():
        d = torch.load(cache, weights_only=True)
        decode_s = None
    else:
        if verbose:  # (a log line: the command line shows it, a chapter's page does not)
            LOG.info(f"decoding {Path(src).name} once into the cache ({cache.name}) ...")
        t0 = time.perf_counter()
        d = _decode_local(name, src)
        decode_s = time.perf_counter() - t0
        _atomic_save(d, cache)
        if verbose:
            LOG.info(f"decoded {len(d['y_train'])}+{len(d['y_test'])} images in {decode_s:.1f} s")
    source = {"kind": "local", "path": str(Path(src).resolve()), "sha256": sha,
              "cache": str(cache.resolve())}
    if decode_s is not None:
        source["decode_seconds"] = round(decode_s, 2)
    return Data(name, d["x_train"], d["y_train"], d["x_test"], d["y_test"], source)


def load_torchvision(name: str, root: Path = DEFAULT_ROOT) -> Data:
    """torchvision's CIFAR10/CIFAR100/MNIST, downloaded into `root` on first use."""
    import torchvision.datasets as tvd

    cls = getattr(tvd, DATASETS[name][0])
    sets = [cls(str(root), train=t, download=True) for t in (True, False)]
    xy = []
    for s in sets:
        x = torch.as_tensor(s.data)
        x = x.unsqueeze(1) if x.ndim == 3 else x.permute(0, 3, 1, 2)  # MNIST N,H,W; CIFAR N,H,W,C
        xy += [x.to(torch.uint8).contiguous(), torch.as_tensor(s.targets, dtype=torch.int64)]
    return Data(name, *xy, source={"kind": "torchvision", "dataset": DATASETS[name][0],
                                   "root": str(Path(root).resolve())})


def load(name: str, data: str | os.PathLike | None = None, root: str | os.PathLike = DEFAULT_ROOT,
         verbose: bool = True) -> Data:
    """Load dataset `name` (cifar10, cifar100, mnist) as uint8 tensors.

    Order: the explicit `data` path (``--data``), else ``$IDMAP_DATA`` if it holds this dataset,
    else torchvision's download into `root`. With none working, one error names both ways to get the
    data.
    """
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; valid: {sorted(DATASETS)}")
    root = Path(root)
    if data is not None:
        src = _find_local(name, Path(data))
        if src is None:
            raise DataUnavailable(f"--data {data}: no {name} copy there (expected a .tar.gz or a "
                                  f"tree train/<class>/*.jpg, test/<class>/*.jpg, or a directory "
                                  f"holding {name}-jpeg.tar.gz)")
        return load_local(name, src, root, verbose)
    env = os.environ.get(ENV_VAR)
    if env:
        src = _find_local(name, Path(env))
        if src is not None:
            return load_local(name, src, root, verbose)
    try:
        return load_torchvision(name, root)
    except Exception as e:  # offline: URLError, RuntimeError, OSError ...
        raise DataUnavailable(
            f"cannot get {name}: torchvision could not download it into {root.resolve()} "
            f"({type(e).__name__}: {e}) and no local copy was "
            f"found{f' in {ENV_VAR}={env}' if env else ''}. Either connect to the internet so "
            f"torchvision can download it, or point the environment variable {ENV_VAR} (or the "
            f"--data option) at a local copy: a directory holding {name}-jpeg.tar.gz, the tarball "
            f"itself, or an image-folder tree train/<class>/*.jpg, test/<class>/*.jpg.") from e


# ----------------------------------------------------------------------------------------------
# preprocessing and subsets

def normalization(kind: str, x_train: torch.Tensor):
    """(mean, std) to apply as (x/255 - mean) / std, per the recipe.

    per_pixel_mean: Paper A ("per-pixel mean subtracted"): mean image over the training set, std 1.
    mean_std: Wide ResNets (Paper B): per-channel mean and std over the training set.
    scale: MNIST (Paper B, "pixels / 255"): mean 0, std 1.
    """
    c = x_train.shape[1]
    # sums in float64 over chunks: no float copy of the whole dataset
    s1 = torch.zeros(x_train.shape[1:], dtype=torch.float64)
    s2 = torch.zeros(x_train.shape[1:], dtype=torch.float64)
    for chunk in x_train.split(4096):
        x = chunk.double().div_(255)
        s1 += x.sum(0)
        s2 += x.square().sum(0)
    n = len(x_train)
    if kind == "per_pixel_mean":
        return (s1 / n).float().unsqueeze(0), torch.ones(1, c, 1, 1)
    if kind == "mean_std":
        m = s1.sum((1, 2)) / (n * s1[0].numel())
        var = (s2.sum((1, 2)) - m.square() * n * s1[0].numel()) / (n * s1[0].numel() - 1)
        return m.float().view(1, c, 1, 1), var.sqrt().float().view(1, c, 1, 1)
    if kind == "scale":
        return torch.zeros(1, c, 1, 1), torch.ones(1, c, 1, 1)
    raise ValueError(f"unknown preprocessing {kind!r}; valid: per_pixel_mean, mean_std, scale")


def stratified_subset(y: torch.Tensor, per_class: int, seed: int) -> torch.Tensor:
    """Indices of `per_class` examples of every class, drawn with a seeded generator, sorted."""
    g = torch.Generator().manual_seed(seed)
    idx = []
    for c in torch.unique(y).tolist():
        members = (y == c).nonzero().flatten()
        if len(members) < per_class:
            raise ValueError(f"class {c} has {len(members)} examples, fewer than "
                             f"per_class={per_class}")
        idx.append(members[torch.randperm(len(members), generator=g)[:per_class]])
    return torch.cat(idx).sort().values
