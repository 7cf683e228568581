"""Data sources: local tarball/tree decoded once into a uint8 cache; torchvision; the offline error."""
import io
import os
import tarfile
import urllib.error
from pathlib import Path

import pytest
import torch
from PIL import Image

from idmap_lib.engine import data

SHARED = os.environ.get("IDMAP_DATA") or str(Path(__file__).resolve().parents[2] / "shared" / "data")


def _fake_tree(root: Path, per_class=3, classes=tuple("0123456789")):
    for split in ("train", "test"):
        for c in classes:
            (root / split / c).mkdir(parents=True)
            for i in range(per_class):
                Image.new("L", (28, 28), color=int(c) * 20 + i).save(root / split / c / f"{i}.jpg", quality=100)
    return root


def test_tree_and_tarball_decode_once_to_the_same_uint8_tensors(tmp_path):
    tree = _fake_tree(tmp_path / "mnist-jpeg")
    d1 = data.load("mnist", tree, root=tmp_path / "r", verbose=False)
    assert d1.x_train.dtype == torch.uint8 and d1.x_train.shape == (30, 1, 28, 28)
    assert d1.y_train.tolist() == [c for c in range(10) for _ in range(3)]
    assert abs(int(d1.x_train[4, 0, 10, 10]) - 21) <= 2  # class 1, image 1: grey 21 (JPEG q100)
    tar = tmp_path / "mnist-jpeg.tar.gz"
    with tarfile.open(tar, "w:gz") as t:
        t.add(tree / "train", "train"), t.add(tree / "test", "test")
    (tmp_path / "mnist-jpeg").rename(tmp_path / "moved")
    d2 = data.load("mnist", tmp_path, root=tmp_path / "r", verbose=False)  # directory holding the tarball
    assert d2.source["kind"] == "local" and d2.source["path"].endswith("mnist-jpeg.tar.gz")
    assert torch.equal(d1.x_train, d2.x_train) and torch.equal(d1.y_test, d2.y_test)
    caches = sorted((tmp_path / "r" / "cache").glob("mnist-*.pt"))
    assert len(caches) == 2  # one per source fingerprint
    # a second load reads the cache (no decode recorded)
    d3 = data.load("mnist", tar, root=tmp_path / "r", verbose=False)
    assert "decode_seconds" not in d3.source and torch.equal(d3.x_train, d2.x_train)


def test_real_cifar10_from_shared_data():
    d = data.load("cifar10", SHARED, verbose=False)
    assert d.x_train.shape == (50000, 3, 32, 32) and d.x_test.shape == (10000, 3, 32, 32)
    assert d.y_train.bincount().tolist() == [5000] * 10 and d.y_test.bincount().tolist() == [1000] * 10
    assert d.source["sha256"].startswith("d34c68f61cca57aa")
    sub = data.stratified_subset(d.y_train, 20, seed=3)
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
        assert "IDMAP_DATA" in msg and "--data" in msg and "download" in msg and f"{name}-jpeg.tar.gz" in msg
    with pytest.raises(data.DataUnavailable, match="--data"):
        data.load("cifar10", tmp_path / "nowhere", root=tmp_path / "empty")
    with pytest.raises(ValueError, match="valid"):
        data.load("imagenet")
