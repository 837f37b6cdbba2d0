"""What a command pays to start: no stage loads the gateway's server (aiohttp) unless it runs a gateway."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["omnidr.cli", "omnidr.harness", "omnidr.pipeline", "omnidr.trajectory",
                                    "omnidr.attempts", "omnidr.evaluation"])
def test_a_stage_loads_without_the_gateway_server(module):
    check = f"import sys, {module}; print(sorted(m for m in ('aiohttp', 'sandbox.gateway._app') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_gateway_package_still_serves_its_server_names():
    from sandbox.gateway import RunningGateway, start_gateway

    assert start_gateway.__module__ == RunningGateway.__module__ == "sandbox.gateway._app"
