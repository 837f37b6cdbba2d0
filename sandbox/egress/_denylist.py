"""The denylist: hosts (and optionally URL path prefixes) the agent must not reach, such as the benchmark's
own released data. A denied request or tunnel is answered 403 and logged with `blocked: true`.

Entries and requests are compared after one normalisation (`normal_host`, `normal_path`, `split_url`), shared by
the egress proxy and the gateway's filter of provider-side tool results: the denylist must match what a server
will serve, not the bytes an agent chose to spell it with. The normalisation leans to blocking: where servers
differ (an encoded slash, a backslash, letter case in a path), it reads the URL the way that reaches the entry.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote


class DenylistError(ValueError):
    """An entry the proxy cannot use; the message names it."""


@dataclass(frozen=True)
class DenyRule:
    """One entry: `host` blocks the host and all its subdomains; `host/path` only URLs under that path."""

    host: str
    path_prefix: str | None = None
    """Normal (`normal_path`): what is compared."""
    spelled: str | None = field(default=None, compare=False)
    """The entry's path as written (shown, and passed to a provider's domain filter); None: `path_prefix`."""

    def __str__(self) -> str:
        return self.host + (self.spelled or self.path_prefix or "")


# Tab, line feed and carriage return are dropped from URLs by browsers (WHATWG URL standard, "basic URL parser").
_INVISIBLE = re.compile(r"[\t\n\r]")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def normal_host(host: str) -> str:
    """A host name as a resolver sees it: percent-escapes decoded, case folded, internationalised labels in their
    ASCII (IDNA) form, trailing dots, IPv6 brackets and a port dropped."""
    text = _INVISIBLE.sub("", unquote(host.strip(), errors="replace"))
    if text.startswith("["):  # an IPv6 literal, with or without a port after it
        return text[1:].split("]", 1)[0].lower()
    if text.count(":") == 1:
        text = text.split(":", 1)[0]
    text = text.rstrip(".\u3002\uff0e\uff61")  # dots of every script end a fully qualified name
    try:
        # the stdlib codec maps (nameprep: NFKC and case folding) and splits on every script's full stop
        text = text.encode("idna").decode("ascii")
    except UnicodeError:
        pass  # not a name IDNA accepts (an empty label, a label too long): compared as it is, case folded
    return text.lower().rstrip(".")


def normal_path(path: str) -> str:
    """A URL path as a server resolves it, for matching: query and fragment dropped, backslashes read as
    slashes, every percent-escape decoded once (an encoded slash separates segments), path parameters
    (`;...` in a segment) dropped, empty and `.` segments removed, `..` applied, letters case folded.
    The result starts with `/` and has no trailing slash."""
    text = _INVISIBLE.sub("", path).split("#", 1)[0].split("?", 1)[0]
    text = unquote(text.replace("\\", "/"), errors="replace").replace("\\", "/")
    segments: list[str] = []
    for segment in text.split("/"):
        segment = segment.split(";", 1)[0]
        if segment in ("", "."):
            continue
        if segment == "..":
            if segments:
                segments.pop()
            continue
        segments.append(segment)
    return "/" + "/".join(segments).lower()


def split_url(url: str) -> tuple[str, str]:
    """(normal host, normal path) of a URL as a browser would open it: scheme optional, any number of slashes or
    backslashes after it, userinfo and port dropped. A URL without a host gives an empty host."""
    text = _INVISIBLE.sub("", url.strip())
    if (scheme := _SCHEME.match(text)) is not None:
        text = text[scheme.end():]
    text = text.lstrip("/\\")
    cut = min((i for i in (text.find(c) for c in "/\\?#") if i >= 0), default=len(text))
    authority, rest = text[:cut], text[cut:]
    return normal_host(authority.rpartition("@")[2]), normal_path(rest or "/")


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
        host = normal_host(host)
        for rule in self.rules:
            if rule.path_prefix is None and _host_matches(rule.host, host):
                return rule
        return None

    def blocks_url(self, host: str, path: str) -> DenyRule | None:
        """The rule that denies a request for `path` (query included) on `host`, if any."""
        return self._rule_for(normal_host(host), normal_path(path))

    def blocks(self, url: str) -> DenyRule | None:
        """The rule that denies `url` (a whole URL, as a provider's tool result names it), if any."""
        host, path = split_url(url)  # both normal already: decoded once, as the proxy decodes a request
        return self._rule_for(host, path) if host else None

    def _rule_for(self, host: str, path: str) -> DenyRule | None:
        """The rule for a normal host and path: the host or a parent domain of it, and (for a path entry) the
        entry's path itself or one below it (`/a/b` is under `/a`, `/ab` is not)."""
        for rule in self.rules:
            if _host_matches(rule.host, host) and (
                    rule.path_prefix is None or path == rule.path_prefix or path.startswith(rule.path_prefix + "/")):
                return rule
        return None


def parse_entry(entry: str) -> DenyRule:
    text = entry.strip()
    for scheme in ("http://", "https://"):
        if text.lower().startswith(scheme):
            text = text[len(scheme):]
    raw_host, slash, path = text.partition("/")
    raw_host = raw_host.removeprefix("*.")  # `*.example.org` means what `example.org` does
    # ports are not part of an entry: a denied host is denied on every port
    host = "" if any(c in raw_host for c in " */?#@\\") else normal_host(raw_host)
    if not host:
        raise DenylistError(f"denylist entry {entry!r} does not start with a host name")
    prefix = normal_path(path) if slash and path else None
    if prefix is None or prefix == "/":
        return DenyRule(host=host)
    return DenyRule(host=host, path_prefix=prefix, spelled="/" + path.strip("/"))
