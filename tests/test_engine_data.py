"""Data sources: local tarball/tree decoded once into a uint8 cache; torchvision; the offline
error."""
import pickle
import tarfile
import urllib.error
from pathlib import Path

import pytest
import torch
from PIL import Image

from idmap_lib.engine import data

from support import SHARED



def _fake_tree(root: Path, per_class=3, classes=tuple("0123456789")):
    for split in ("train", "test"):
        for c in classes:
            (root / split / c).mkdir(parents=True)
            for i in range(per_class):
                Image.new("L", (28, 28), color=int(c) * 20 + i).save(root / split / c / f"{i}.jpg",
                                                                     quality=100)
    return root


def test_tree_and_tarball_decode_once_to_the_same_uint8_tensors(tmp_path, capsys, caplog):
    tree = _fake_tree(tmp_path / "mnist-jpeg")
    with caplog.at_level("INFO", logger="idmap_lib.engine.data"):
        d1 = data.load("mnist", tree, root=tmp_path / "r")
    # a chapter's page shows nothing of it (issue 42: no build log on a page)
    assert not capsys.readouterr().out
    out = caplog.text  # the log line the command line shows
    assert ("decoding mnist-jpeg once into the cache (mnist-" in out
            and "decoded 30+30 images in " in out)
    assert str(tmp_path) not in out  # no machine's paths: a page that decodes shows this line
    assert d1.x_train.dtype == torch.uint8 and d1.x_train.shape == (30, 1, 28, 28)
    assert d1.y_train.tolist() == [c for c in range(10) for _ in range(3)]
    assert abs(int(d1.x_train[4, 0, 10, 10]) - 21) <= 2  # class 1, image 1: grey 21 (JPEG q100)
    tar = tmp_path / "mnist-jpeg.tar.gz"
    with tarfile.open(tar, "w:gz") as t:
        t.add(tree / "train", "train"), t.add(tree / "test", "test")
    (tmp_path / "mnist-jpeg").rename(tmp_path / "moved")
    # directory holding the tarball
    d2 = data.load("mnist", tmp_path, root=tmp_path / "r", verbose=False)
    assert d2.source["kind"] == "local" and d2.source["path"].endswith("mnist-jpeg.tar.gz")
    assert torch.equal(d1.x_train, d2.x_train) and torch.equal(d1.y_test, d2.y_test)
    caches = sorted((tmp_path / "r" / "cache").glob("mnist-*.pt"))
    assert len(caches) == 2  # one per source fingerprint
    # a second load reads the cache (no decode recorded)
    d3 = data.load("mnist", tar, root=tmp_path / "r", verbose=False)
    assert "decode_seconds" not in d3.source and torch.equal(d3.x_train, d2.x_train)


def test_a_cifar_tree_decodes_to_rgb_even_from_a_grey_jpeg_and_an_empty_split_is_an_error(tmp_path):
    classes = data.DATASETS["cifar10"][2]
    for split in ("train", "test"):
        for i, c in enumerate(classes):
            (tmp_path / "t" / split / c).mkdir(parents=True)
            Image.new("RGB", (32, 32), color=(20 * i, 255 - 20 * i,
                                              100)).save(tmp_path / "t" / split / c / "0.png")
    # a grey image
    Image.new("L", (32, 32), color=77).save(tmp_path / "t" / "train" / "truck" / "1.png")
    d = data.load("cifar10", tmp_path / "t", root=tmp_path / "r", verbose=False)
    assert d.x_train.shape == (11, 3, 32, 32) and d.y_train.tolist() == list(range(10)) + [9]
    assert (d.x_train[2, :, 5, 5].tolist() == [40, 215, 100]
            and d.x_train[10, :, 0, 0].tolist() == [77, 77, 77])
    for p in (tmp_path / "t" / "test").glob("*/*"):
        p.unlink()
    with pytest.raises(ValueError, match="no images under test/<class>/"):
        data.load("cifar10", tmp_path / "t", root=tmp_path / "r2", verbose=False)


def test_real_cifar10_from_shared_data():
    d = data.load("cifar10", SHARED, verbose=False)
    assert d.x_train.shape == (50000, 3, 32, 32) and d.x_test.shape == (10000, 3, 32, 32)
    assert (d.y_train.bincount().tolist() == [5000] * 10
            and d.y_test.bincount().tolist() == [1000] * 10)
    assert d.source["sha256"].startswith("d34c68f61cca57aa")
    sub = data.stratified_subset(d.y_train, 20, seed=3)
    # all of each class
    assert torch.equal(data.stratified_subset(d.y_test, 1000, seed=0), torch.arange(10000))
    with pytest.raises(ValueError, match="class 0 has 1000 examples, fewer than per_class=1001"):
        data.stratified_subset(d.y_test, 1001, seed=0)
    assert d.y_train[sub].bincount().tolist() == [20] * 10
    assert torch.equal(sub, data.stratified_subset(d.y_train, 20, seed=3))
    mean, std = data.normalization("per_pixel_mean", d.x_train[sub])
    assert mean.shape == (1, 3, 32, 32) and torch.all(std == 1)
    m2, s2 = data.normalization("mean_std", d.x_train[sub])
    assert m2.shape == (1, 3, 1, 1) and 0.15 < float(s2.min()) < 0.35


def test_offline_without_data_is_one_clear_error(tmp_path, monkeypatch):
    def no_network(*a, **k):
        raise urllib.error.URLError("network is unreachable (mocked)")
    import torchvision.datasets.cifar as tv_cifar
    import torchvision.datasets.mnist as tv_mnist
    monkeypatch.setattr(tv_cifar, "download_and_extract_archive", no_network)
    monkeypatch.setattr(tv_mnist, "download_and_extract_archive", no_network)
    monkeypatch.setattr(tv_mnist, "download_url", no_network, raising=False)
    monkeypatch.setenv("IDMAP_DATA", str(tmp_path / "nowhere"))
    for name in ("cifar10", "cifar100", "mnist"):
        with pytest.raises(data.DataUnavailable) as e:
            data.load(name, root=tmp_path / "empty")
        msg = str(e.value)
        assert ("IDMAP_DATA" in msg and "--data" in msg and "download" in msg
                and f"{name}-jpeg.tar.gz" in msg)
        # what torchvision met, by type
        assert "Error: " in msg and "network is unreachable (mocked)" in msg
        # MNIST's loader wraps it
        assert ("(URLError: <urlopen error" in msg) == name.startswith("cifar")
        assert f"no local copy was found in IDMAP_DATA={tmp_path / 'nowhere'}. Either" in msg
    with pytest.raises(data.DataUnavailable, match="--data"):
        data.load("cifar10", tmp_path / "nowhere", root=tmp_path / "empty")
    with pytest.raises(ValueError, match="valid"):
        data.load("imagenet")


def test_the_environment_variable_names_a_local_copy_decoded_under_root(tmp_path, monkeypatch):
    tree = _fake_tree(tmp_path / "mnist-jpeg", per_class=1)
    monkeypatch.setenv("IDMAP_DATA", str(tmp_path))  # a directory holding mnist-jpeg/
    clock = iter([10.0, 11.23456])  # the decode, timed: 1.23456 s
    monkeypatch.setattr(data.time, "perf_counter", lambda: next(clock))
    d = data.load("mnist", root=tmp_path / "r", verbose=False)
    (cache,) = (tmp_path / "r" / "cache").glob("mnist-*.pt")
    assert (d.name == "mnist" and d.x_train.shape == (10, 1, 28, 28)
            and d.y_test.tolist() == list(range(10)))
    assert d.source == {"kind": "local", "path": str(tree.resolve()), "sha256": d.source["sha256"],
                        "cache": str(cache.resolve()), "decode_seconds": d.source["decode_seconds"]}
    assert cache.name == f"mnist-{d.source['sha256'][:16]}.pt" and len(d.source["sha256"]) == 64
    assert d.source["decode_seconds"] == 1.23


class _NotATensor(dict):
    pass


def test_a_cache_holding_more_than_tensors_is_refused(tmp_path):
    """The decoded cache is read with torch.load(weights_only=True): a file that would run code is
    not loaded."""
    tree = _fake_tree(tmp_path / "mnist-jpeg", per_class=1)
    d = data.load("mnist", tree, root=tmp_path / "r", verbose=False)
    cache = Path(d.source["cache"])
    torch.save(_NotATensor(x_train=d.x_train, y_train=d.y_train, x_test=d.x_test, y_test=d.y_test),
               cache)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        data.load("mnist", tree, root=tmp_path / "r", verbose=False)


class _FakeTorchvision:
    """torchvision's dataset classes without the network: records how it was called, serves known
    pixels."""
    calls = []

    def __init__(self, root, train, download):
        self.calls.append((type(self).__name__, root, train, download))
        n = 3 if train else 2
        shape = (n, 28, 28) if type(self).__name__ == "MNIST" else (n, 32, 32, 3)
        self.data = (torch.arange(n * torch.Size(shape[1:]).numel()).reshape(shape).remainder(251).to(torch.uint8))
        self.targets = list(range(n))


@pytest.mark.parametrize("name, cls, shape", [("mnist", "MNIST", (1, 28, 28)),
                                              ("cifar10", "CIFAR10", (3, 32, 32)),
                                              ("cifar100", "CIFAR100", (3, 32, 32))])
def test_torchvision_downloads_into_root_in_the_local_copys_layout(tmp_path, monkeypatch, name, cls,
                                                                   shape):
    import torchvision.datasets as tvd
    monkeypatch.setattr(tvd, cls, type(cls, (_FakeTorchvision,), {}))
    monkeypatch.delenv("IDMAP_DATA", raising=False)
    _FakeTorchvision.calls.clear()
    d = data.load(name, root=tmp_path)
    assert _FakeTorchvision.calls == [(cls, str(tmp_path), True, True),
                                      (cls, str(tmp_path), False, True)]
    assert d.name == name and d.x_train.shape == (3, *shape) and d.x_test.shape == (2, *shape)
    assert (d.x_train.dtype == torch.uint8 and d.x_train.is_contiguous()
            and d.y_train.dtype == torch.int64)
    # N,H,W (MNIST) or N,H,W,C (CIFAR)
    raw = tvd.__dict__[cls](str(tmp_path), train=True, download=True).data
    # channels first, pixel for pixel
    want = raw.unsqueeze(1) if raw.ndim == 3 else raw.permute(0, 3, 1, 2)
    assert (torch.equal(d.x_train, want) and d.y_train.tolist() == [0, 1, 2]
            and d.y_test.tolist() == [0, 1])
    assert d.source == {"kind": "torchvision", "dataset": cls, "root": str(tmp_path.resolve())}


def test_data_root_is_never_the_working_directory(monkeypatch, tmp_path):
    """Recorded runs are found from the library's data root (issue 22.1): $IDMAP_ROOT, else the
    checkout's data/, else a folder of the user's own -- a relative path would follow the notebook's
    working directory."""
    from idmap_lib.engine import data

    monkeypatch.delenv("IDMAP_ROOT", raising=False)
    # used from a checkout (clone, tests)
    assert data.data_root() == data._CHECKOUT / "data"
    # pip-installed: no pyproject above it
    monkeypatch.setattr(data, "_CHECKOUT", tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data.data_root() == tmp_path / "xdg" / "idmap"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert data.data_root().is_absolute()
    monkeypatch.setenv("IDMAP_ROOT", str(tmp_path / "mine"))
    assert data.data_root() == tmp_path / "mine"
