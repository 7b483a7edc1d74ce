import pytest


@pytest.fixture(scope="session")
def gpu():
    from trainer.gpu import get_gpu
    return get_gpu()
