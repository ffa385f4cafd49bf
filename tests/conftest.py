import os

import pytest

from tests.helpers import BUILD_CACHE


@pytest.fixture(scope="session", autouse=True)
def _build_cache():
    # Builds are slow on 2 cores: every test shares one content-addressed cache.
    os.environ["KERNELSEEK_CACHE"] = str(BUILD_CACHE)
    return BUILD_CACHE
