"""Fixtures of the trajectory tests: the real native logs (skipped when absent) and the project's
own small fixtures."""

from pathlib import Path

import pytest
from testkit import ROOT

NATIVE_LOGS = ROOT.parent / "shared" / "fixtures" / "native-logs"
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def native_logs() -> Path:
    if not NATIVE_LOGS.is_dir():
        pytest.skip(f"real native logs not found at {NATIVE_LOGS}")
    return NATIVE_LOGS


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES
