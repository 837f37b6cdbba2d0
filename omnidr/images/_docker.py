"""Connecting to the Docker engine, with one clear line when it is not there."""

import docker
from docker.errors import DockerException

from omnidr.errors import UserError


def docker_client(timeout_s: int = 120) -> docker.DockerClient:
    """A client for the engine named by DOCKER_HOST (default: the local socket), checked with a ping."""
    try:
        client = docker.from_env(timeout=timeout_s)
        client.ping()
    except DockerException as exc:
        first = str(exc).splitlines()[0][:200]
        raise UserError(
            f"cannot reach the Docker engine ({first}); start it (e.g. `systemctl start docker`) "
            "or point DOCKER_HOST at a running engine"
        ) from None
    return client
