import os

import pytest

from evals.harness.measurement.device_lock import LOCK_DIR_ENV
from tests.helpers import BUILD_CACHE, LOCK_DIR


@pytest.fixture(scope="session", autouse=True)
def _build_cache():
    # Builds are slow on 2 cores: every test shares one content-addressed cache, this
    # checkout's own (never ~/.cache). The device lock is this checkout's too: another
    # checkout's tests on the same machine must not make these wait or time out.
    os.environ["KERNELSEEK_CACHE"] = str(BUILD_CACHE)
    os.environ[LOCK_DIR_ENV] = str(LOCK_DIR)
    return BUILD_CACHE
