import os
import shutil
import tempfile

import pytest

# Tests never touch the user's kernel-tuning cache: every session gets a fresh one (and subprocesses
# started by tests inherit it). Tests that need a particular kernel variant pin it explicitly.
_CACHE = tempfile.mkdtemp(prefix="puffgpu-test-cache-")
os.environ["PUFFGPU_CACHE"] = _CACHE


def pytest_unconfigure(config):
    shutil.rmtree(_CACHE, ignore_errors=True)


@pytest.fixture(scope="session")
def gpu():
    from trainer.gpu import get_gpu
    return get_gpu()
