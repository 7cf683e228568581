"""The real datasets, loaded once per test module from the offline copy (IDMAP_DATA, or
../shared/data)."""
import pytest

from idmap_lib.engine import data
from support import SHARED


@pytest.fixture(scope="module")
def mnist():
    return data.load("mnist", SHARED, verbose=False)


@pytest.fixture(scope="module")
def cifar():
    return data.load("cifar10", SHARED, verbose=False)
