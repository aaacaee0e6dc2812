"""The README's quick start is two commands, and CI runs the second one verbatim."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def quick_start() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


@pytest.fixture
def ci_script() -> str:
    path = ROOT / ".ci" / "run"
    if not path.is_file():
        pytest.skip("not running from a source checkout")
    return path.read_text()


def test_quick_start_is_two_commands():
    install_and_probe, install_and_test = quick_start()
    assert install_and_probe.endswith("qcom-ext probe") and "[pocl]" in install_and_probe
    assert "pytest" in install_and_test and "test]" in install_and_test


def test_ci_runs_the_readme_test_command_verbatim(ci_script):
    test_command = quick_start()[1]
    assert test_command in ci_script.splitlines() or any(
        line.startswith(test_command + " ||") for line in ci_script.splitlines()
    )
