"""Shared helpers: where the core's test vectors live (they are never copied here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
VECTORS = REPO / "agentfw-core" / "vectors"
T0 = 1_796_047_500_000


def load(name: str) -> Any:
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))


@pytest.fixture
def vectors() -> Path:
    return VECTORS
