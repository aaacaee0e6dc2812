"""``python -m benchmarks [CASE|GROUP|SUITE ...]``: ``qcom-ext bench``'s runner over the
wheel's on-device cases and the lab's (``benchmarks/cases_*.py``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from qcom_ext.tools.bench.run import PACKAGES
from qcom_ext.tools.bench.run import main as run_main

__all__ = ["LAB_PACKAGES", "main"]

#: The wheel's cases, then the lab's.
LAB_PACKAGES = (*PACKAGES, "benchmarks")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the named cases and suites of the wheel and the lab; 0 on success."""
    return run_main(argv, prog="python -m benchmarks", packages=LAB_PACKAGES)


if __name__ == "__main__":
    sys.exit(main())
