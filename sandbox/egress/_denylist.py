"""The denylist: hosts (and optionally URL path prefixes) the agent must not reach, such as the benchmark's
own released data. A denied request or tunnel is answered 403 and logged with `blocked: true`."""

from dataclasses import dataclass
from pathlib import Path


class DenylistError(ValueError):
    """An entry the proxy cannot use; the message names it."""


@dataclass(frozen=True)
class DenyRule:
    """One entry: `host` blocks the host and all its subdomains; `host/path` only URLs under that path."""

    host: str
    path_prefix: str | None = None

    def __str__(self) -> str:
        return self.host + (self.path_prefix or "")


def _host_matches(rule_host: str, host: str) -> bool:
    return host == rule_host or host.endswith("." + rule_host)


class Denylist:
    """Entries are `example.org` (the host and every subdomain), `*.example.org` (the same), or
    `example.org/datasets/omnidr` (only URLs on that host whose path starts with the prefix; such an entry
    cannot be applied to a TLS tunnel the proxy does not intercept, which only names a host)."""

    def __init__(self, entries: list[str] | tuple[str, ...] = ()) -> None:
        self.rules: tuple[DenyRule, ...] = tuple(parse_entry(e) for e in entries if e.strip())

    @classmethod
    def from_sources(cls, inline: list[str], files: list[Path]) -> "Denylist":
        """Entries from comma-separated command-line values and from files (one per line, `#` starts a comment)."""
        entries = [part for value in inline for part in value.split(",")]
        for path in files:
            for line in path.read_text("utf-8").splitlines():
                entry = line.split("#", 1)[0].strip()
                if entry:
                    entries.append(entry)
        return cls(entries)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def __len__(self) -> int:
        return len(self.rules)

    def blocks_host(self, host: str) -> DenyRule | None:
        """The host-wide rule that denies every connection to `host`, if any (used for CONNECT)."""
        host = _normal_host(host)
        for rule in self.rules:
            if rule.path_prefix is None and _host_matches(rule.host, host):
                return rule
        return None

    def blocks_url(self, host: str, path: str) -> DenyRule | None:
        """The rule that denies a request for `path` (query included) on `host`, if any."""
        host = _normal_host(host)
        for rule in self.rules:
            if not _host_matches(rule.host, host):
                continue
            if rule.path_prefix is None or _path_under(path, rule.path_prefix):
                return rule
        return None


def _path_under(path: str, prefix: str) -> bool:
    path = path.split("?", 1)[0].split("#", 1)[0] or "/"
    if prefix.endswith("/"):
        return path.startswith(prefix) or path == prefix[:-1]
    return path == prefix or path.startswith(prefix + "/")


def _normal_host(host: str) -> str:
    return host.strip().rstrip(".").lower()


def parse_entry(entry: str) -> DenyRule:
    text = entry.strip()
    for scheme in ("http://", "https://"):
        if text.lower().startswith(scheme):
            text = text[len(scheme):]
    host, slash, path = text.partition("/")
    host = _normal_host(host)
    if host.startswith("*."):
        host = host[2:]
    if ":" in host and not host.startswith("["):
        host = host.split(":", 1)[0]  # ports are not part of an entry: a denied host is denied on every port
    if not host or any(c in host for c in " */?#@"):
        raise DenylistError(f"denylist entry {entry!r} does not start with a host name")
    prefix = "/" + path if slash and path else None
    return DenyRule(host=host, path_prefix=prefix)
