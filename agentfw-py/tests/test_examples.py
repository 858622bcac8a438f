"""The examples a bot author would copy still run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_two_agents_example() -> None:
    run = subprocess.run([sys.executable, str(EXAMPLES / "two_agents.py")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "refused by rule `deny-forwarded-commands`" in run.stdout
    assert "refused on sight" in run.stdout
    assert "is refused on sight" in run.stdout or "containment" in run.stdout or "matches text" in run.stdout
