"""Where the proxy may connect, in the modes that reach the web (log, intercept, record).

The web is the public internet. The proxy refuses, with 403 and a reason in network.jsonl:
- the sandbox's own Docker networks (`--refuse-net`: the attempt's internal network, the helpers' pool), whatever
  else is allowed (`sandbox_network`);
- every address that is not on the public internet (`private_network`): loopback, link-local (the cloud metadata
  service 169.254.169.254 and fd00:ec2::254 among them), private (10/8, 172.16/12, 192.168/16, fc00::/7),
  shared (100.64/10), multicast, unspecified and the other special-purpose ranges of IANA's registries (Python's
  `ipaddress.is_global`), with an IPv4 address carried inside an IPv6 one (mapped, NAT64, 6to4, Teredo) judged as
  that IPv4 address; unless the operator opens a range on purpose (`--allow-net CIDR`: an internal mirror) or
  names one endpoint (`--allow-endpoint HOST:PORT`: the search door, that host and port and nothing else).

The check is on the address connected to: a name is resolved here, every address it resolves to must pass, and
the connection is pinned to the first of them (`EgressAddon.server_connect`), so a name whose answer changes
between the check and the connection (DNS rebinding) gains nothing. Any spelling of an address (decimal
`2130706433`, octal `0177.0.0.1`, hex `0x7f.1`, short `127.1`) is read the way the system's resolver reads it,
which is how the connection would have read it.
"""

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

MARK = "refused by the sandbox's address policy"
"""Part of every refusal message, so a refusal is recognised in mitmproxy's error text."""
SANDBOX_MARK = "a network of the sandbox itself"
PRIVATE_MARK = "not on the public internet"

_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def parse_network(text: str, flag: str) -> Network:
    """A network given on a command line as ADDRESS/PREFIX (`flag` names the option); ValueError of one line."""
    try:
        return ipaddress.ip_network(text.strip())
    except ValueError as exc:
        raise ValueError(f"{flag} {text!r}: give a network as ADDRESS/PREFIX with no host bits set, e.g. "
                         f"10.20.0.0/16 ({exc})") from None


def _address(text: str) -> Address | None:
    """The IP address `text` spells in the standard notation (no look-up), an IPv4-mapped one as IPv4."""
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0].strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _embedded(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (NAT64, 6to4, Teredo's client), if any."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


RefusalReason = Literal["sandbox_network", "private_network"]


@dataclass(frozen=True)
class Refusal:
    reason: RefusalReason
    message: str

    @staticmethod
    def from_error(text: str) -> "Refusal | None":
        """The refusal behind an error message that carries one (mitmproxy's text around it), else None."""
        if MARK not in text:
            return None
        message = text.split("refused: ", 1)[-1].split(" If you plan", 1)[0].strip()
        return Refusal("sandbox_network" if SANDBOX_MARK in text else "private_network", message)


@dataclass(frozen=True)
class Verdict:
    """What the policy says of one destination: a refusal, or the address to connect to (None: unresolved)."""

    refusal: Refusal | None
    address: str | None = None


class AddressPolicy:
    def __init__(self, refused: Iterable[Network] = (), allowed: Iterable[Network] = (),
                 endpoints: Iterable[tuple[str, int]] = ()) -> None:
        self.refused = tuple(refused)
        self.allowed = tuple(allowed)
        self.endpoints = frozenset((host.lower().rstrip("."), port) for host, port in endpoints)

    @staticmethod
    def is_name(host: str) -> bool:
        """True when `host` is a name to resolve, not an IP address in standard notation."""
        return _address(host) is None

    def judge(self, host: str, port: int, address: Address) -> Refusal | None:
        """Why a connection to `address` (what `host` names) on `port` is refused, or None."""
        shown = str(address) if str(address) == host else f"{host} is {address},"
        for candidate in (address, _embedded(address)):
            if candidate is None:
                continue
            for network in self.refused:
                if candidate.version == network.version and candidate in network:
                    return Refusal("sandbox_network", f"{shown} in {network}, {SANDBOX_MARK} ({MARK})")
        if (host.lower().rstrip("."), port) in self.endpoints:
            return None
        for candidate in (address, _embedded(address)):
            if candidate is None:
                continue
            if any(candidate.version == n.version and candidate in n for n in self.allowed):
                continue
            if not candidate.is_global or candidate.is_multicast:
                return Refusal("private_network", f"{shown} {PRIVATE_MARK} ({MARK})")
        return None

    def literal(self, host: str, port: int) -> Refusal | None:
        """The refusal of `host` when it is an IP address in standard notation (no look-up), else None."""
        address = _address(host)
        return self.judge(host, port, address) if address is not None else None

    async def check(self, host: str, port: int) -> Verdict:
        """Resolve `host` as the connection would, judge every address it resolves to, and name the first one as
        the address to connect to. A name that does not resolve is not refused here (the connection fails)."""
        address = _address(host)
        if address is not None:
            return Verdict(self.judge(host, port, address), str(address))
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return Verdict(None)
        resolved = [a for a in (_address(str(info[4][0])) for info in infos) if a is not None]
        for each in resolved:
            if (refusal := self.judge(host, port, each)) is not None:
                return Verdict(refusal)
        return Verdict(None, str(resolved[0]) if resolved else None)
