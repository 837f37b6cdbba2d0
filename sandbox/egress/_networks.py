"""`--refuse-net`: networks the proxy never connects to, in the modes that reach the web.

The sandbox's own Docker networks (the attempt's internal network, the helpers' addresses) are not the web:
an agent that names one of their addresses, or a name that resolves into one, gets 403. The check resolves
the name itself, just before mitmproxy connects (mitmproxy resolves it again to connect): a name whose answer
changes between the two look-ups (DNS rebinding) is not covered.
"""

import asyncio
import ipaddress
import socket
from collections.abc import Iterable

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

MARK = "a network of the sandbox itself"
"""Part of every refusal message, so a refusal is recognised in mitmproxy's error text."""


def _address(text: str) -> Address | None:
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0].strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


class RefusedNetworks:
    """The networks of `--refuse-net`."""

    def __init__(self, networks: Iterable[Network]) -> None:
        self.networks = tuple(networks)

    def __bool__(self) -> bool:
        return bool(self.networks)

    def _holding(self, host: str, address: Address) -> str | None:
        for network in self.networks:
            if address.version == network.version and address in network:
                shown = str(address) if str(address) == host else f"{host} is {address},"
                return f"{shown} in {network}, {MARK}"
        return None

    def literal_refusal(self, host: str) -> str | None:
        """Why `host` is refused when it is an IP address in a refused network (no look-up); else None."""
        address = _address(host)
        return self._holding(host, address) if address is not None else None

    async def refusal(self, host: str, port: int) -> str | None:
        """Why a connection to host:port is refused: the address, or any address the name resolves to, lies in a
        refused network. None when none does, or when the name does not resolve (the connection fails anyway)."""
        if not self.networks:
            return None
        address = _address(host)
        if address is not None:
            return self._holding(host, address)
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return None
        for info in infos:
            resolved = _address(str(info[4][0]))
            if resolved is not None and (reason := self._holding(host, resolved)) is not None:
                return reason
        return None
