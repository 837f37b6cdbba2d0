"""Reach a model endpoint on the host's loopback from the gateway container.

A server on 127.0.0.1 (a local model server, or a test's fake API) is not reachable from a container.
`LoopbackRelay` listens on the host's address on the gateway's Docker network and copies bytes both
ways to the loopback port, for the duration of a run; only that one port is exposed, and only to
containers on that network. The run records the user's URL; the relay's address is used only to
reach it.
"""

import ipaddress
import socket
import threading
from urllib.parse import urlsplit, urlunsplit

from omnidr.errors import UserError

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]"}


def is_loopback_url(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def network_host_ip(client, network: str) -> str:
    """The host's own address on a Docker bridge network (its gateway)."""
    net = client.networks.get(network)
    for config in net.attrs.get("IPAM", {}).get("Config") or []:
        if config.get("Gateway"):
            return config["Gateway"]
        if config.get("Subnet"):
            return str(next(ipaddress.ip_network(config["Subnet"]).hosts()))
    raise UserError(f"Docker network {network} has no IPv4 gateway; a loopback model endpoint cannot be relayed to it")


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (dst, src):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class LoopbackRelay:
    """TCP relay bind_ip:<free port> -> 127.0.0.1:target_port, in daemon threads."""

    def __init__(self, target_port: int, bind_ip: str, target_host: str = "127.0.0.1"):
        self.target = (target_host, target_port)
        self.server = socket.create_server((bind_ip, 0))
        self.server.settimeout(0.5)
        self.address = self.server.getsockname()[:2]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="omnidr-loopback-relay", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                conn.close()  # the endpoint is down: the gateway sees a closed connection and retries
                continue
            conn.settimeout(None)
            threading.Thread(target=_pump, args=(conn, upstream), daemon=True).start()
            threading.Thread(target=_pump, args=(upstream, conn), daemon=True).start()

    def url_for(self, url: str) -> str:
        """`url` with its loopback host and port replaced by the relay's address."""
        parts = urlsplit(url)
        return urlunsplit((parts.scheme, f"{self.address[0]}:{self.address[1]}", parts.path, parts.query, parts.fragment))

    def close(self) -> None:
        self._stop.set()
        self.server.close()
        self._thread.join(timeout=2)


def relay_loopback_urls(client, urls: list[str], network: str) -> tuple[dict[str, str], list[LoopbackRelay]]:
    """Start a relay for every loopback URL; returns {original URL: reachable URL} and the relays to close."""
    mapping, relays = {}, []
    for url in urls:
        if not is_loopback_url(url) or url in mapping:
            continue
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        relay = LoopbackRelay(port, network_host_ip(client, network))
        relays.append(relay)
        mapping[url] = relay.url_for(url)
    return mapping, relays


def unanswered_from_network(client, image: str, network: str, urls: list[str]) -> dict[str, str]:
    """Probe `urls` from a short-lived container on `network`, as the gateway will reach them (names
    only that Docker network resolves, loopback relays): {URL: why it did not answer} for those that
    did not. `image` carries `sandbox/` (the gateway's)."""
    import json

    if not urls:
        return {}
    container = client.containers.run(image, ["-m", "sandbox.reach", *urls], entrypoint=["python"], network=network,
                                      detach=True, labels={"org.omnidr.role": "reach-probe"})
    from requests.exceptions import RequestException

    try:  # removed in every case, a Ctrl-C included: nothing of the probe outlives it
        try:
            container.wait(timeout=30 + 15 * len(urls))
        except RequestException:
            raise UserError(f"the reachability probe on Docker network {network} did not finish; "
                            "check that the engine is not overloaded and rerun") from None
        out = container.logs(stdout=True, stderr=False)
    finally:
        container.remove(force=True)
    try:
        return json.loads(out.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise UserError(f"the reachability probe on Docker network {network} printed no answer; "
                        "run `omnidr images build gateway`") from None
