"""Where ``probe(verify=True)`` finds the runner of the crash trials.

The trials run selftest cases in child processes, the tools layer's job
(:func:`qcom_ext.tools.verify.runner.verify`); the verdicts they leave are the device
layer's (:mod:`qcom_ext.device.verdicts`). The probe asks :func:`run`; the runner is
installed from above: the package (``qcom_ext/__init__.py``, which sits on top of every
layer and runs before any module of it) installs one that loads the tools layer on first
use, so no layer imports one above it and ``import qcom_ext`` stays cheap.

>>> seen = []
>>> previous = install(lambda caps: seen.append(caps) or "verified")
>>> run("caps"), seen
('verified', ['caps'])
>>> _ = install(previous)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Runner", "install", "run"]

#: Takes a device's report (``DeviceCaps``), runs the trials it needs and returns the
#: report with their verdicts applied.
Runner = Callable[[Any], Any]

_runner: Runner | None = None


def install(runner: Runner | None) -> Runner | None:
    """Make ``runner`` the trial runner; returns the one it replaces."""
    global _runner
    previous, _runner = _runner, runner
    return previous


def run(caps: Any) -> Any:
    """``caps`` with the verdicts of the installed runner's trials applied; ConfigError
    when none is installed."""
    if _runner is None:
        from qcom_ext.errors import ConfigError  # lazily: ``import qcom_ext`` reads this module

        raise ConfigError(
            "probe(verify=True) needs a trial runner and none is installed "
            "(qcom_ext/__init__.py installs qcom_ext.tools.verify's)"
        )
    return _runner(caps)
