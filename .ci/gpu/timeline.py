"""pytest plugin for the GPU machine: writes "<unix time> <test id>" to $OUT/timeline.log as
each test starts, so nvidia-smi's samples in gpu_mem.log can be matched to tests.

    python3 -m pytest -p timeline ...   (with .ci/gpu on PYTHONPATH; suite.sh does this)
"""

import os
import time

_LOG = None


def pytest_runtest_logstart(nodeid, location):
    global _LOG
    if _LOG is None:
        _LOG = open(os.path.join(os.environ.get("OUT", "."), "timeline.log"), "a")  # noqa: SIM115 (open for the whole run)
    _LOG.write(f"{time.time():.1f} {nodeid}\n")
    _LOG.flush()
