"""Asking the Debian archive what it serves now.

Locks record; they do not gate builds (Debian's security archive keeps only its newest version of a
package, so an old pin stops resolving the day a fix ships). Before an image is built, every locked
package is checked against the archive: a version still served is used, one that is not gives way to
the served version, and the difference is reported as drift.

Asking the archive costs one small HTTP request per source (its signed `InRelease` index): when the
digests of its package indices are unchanged since the last resolution, the cached resolution is
reused, so an unchanged archive reuses an unchanged image in well under a second.
"""

import hashlib
import logging
import platform
import re
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

from ._spec import PackageDrift

log = logging.getLogger(__name__)

INRELEASE_TIMEOUT_S = 10.0
_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}

# `apt-get install -s` prints one line per package it would unpack, e.g.
#   Inst chromium (156.0.8078.114-1~deb12u1 Debian-Security:12/oldstable-security [amd64])
#   Inst libc6 [2.36-9+deb12u10] (2.36-9+deb12u13 Debian:12.12/oldstable [amd64])   (an upgrade)
_INST = re.compile(r"^Inst (\S+) (?:\[[^\]]*\] )?\((\S+) ")


def host_arch() -> str:
    machine = platform.machine()
    return _ARCH.get(machine, machine)


def parse_lock(text: str) -> dict[str, str]:
    """A packages.lock: one `name=version` per line; blank lines and `#` comments ignored."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            name, version = line.split("=", 1)
            out[name] = version
    return out


def format_lock(packages: dict[str, str]) -> str:
    return "".join(f"{name}={packages[name]}\n" for name in sorted(packages))


def parse_dpkg(text: str) -> dict[str, str]:
    """`dpkg-query -W -f '${Package}=${Version}\\n'` output."""
    return parse_lock(text)


def parse_simulation(text: str) -> dict[str, str]:
    """Package -> version of every `Inst` line of `apt-get install -s`."""
    out = {}
    for line in text.splitlines():
        m = _INST.match(line)
        if m:
            out[m.group(1).split(":")[0]] = m.group(2)
    return out


def parse_madison(text: str) -> dict[str, set[str]]:
    """Package -> every version `apt-cache madison` says the configured sources serve."""
    out: dict[str, set[str]] = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) >= 3 and parts[2].endswith("Packages"):
            out.setdefault(parts[0], set()).add(parts[1])
    return out


def drift_between(lock_path: str, locked: dict[str, str], got: dict[str, str]) -> list[PackageDrift]:
    """Every package whose version differs between the lock and what the image gets."""
    names = sorted(set(locked) | set(got))
    return [PackageDrift(lock=lock_path, package=n, locked=locked.get(n), served=got.get(n))
            for n in names if locked.get(n) != got.get(n)]


def drift_summary(drift: list[PackageDrift], limit: int = 3) -> str:
    """One line: moved versions first (they are what a reader of the lock cares about), then what the
    lock does not list or the image no longer needs."""
    moved = [d for d in drift if d.locked and d.served]
    added = [d for d in drift if not d.locked]
    gone = [d for d in drift if not d.served]
    shown = (moved + added + gone)[:limit]
    text = ", ".join(d.line() for d in shown)
    counts = [f"{len(moved)} moved" if moved else "", f"{len(added)} not locked" if added else "",
              f"{len(gone)} no longer installed" if gone else ""]
    if len(drift) > limit:
        text += f" ({', '.join(c for c in counts if c)})"
    return text


def index_digest(inrelease: str, components: list[str], arch: str) -> str:
    """Digest of the SHA256 entries of an InRelease for the binary package indices of `components`
    (arch-specific and arch:all). It changes exactly when a package index of the suite changes;
    re-signing the file (the security archive does so daily) leaves it alone."""
    wanted = []
    in_sha256 = False
    for line in inrelease.splitlines():
        if not line.startswith(" "):
            in_sha256 = line.strip() == "SHA256:"
            continue
        if not in_sha256:
            continue
        parts = line.split()
        if len(parts) != 3:
            continue
        path = parts[2]
        for comp in components:
            # the security archive names its components updates/main but lists indices as main/...
            comp = comp.split("/")[-1]
            if path.startswith((f"{comp}/binary-{arch}/Packages", f"{comp}/binary-all/Packages")):
                wanted.append(f"{parts[0]} {path}")
    if not wanted:
        raise ValueError("no package index for the requested components in this InRelease")
    return hashlib.sha256("\n".join(sorted(wanted)).encode()).hexdigest()[:16]


def _source_parts(line: str) -> tuple[str, str, list[str]]:
    parts = line.split()
    if len(parts) < 4 or parts[0] != "deb":
        raise ValueError(f"not a one-line `deb URL SUITE COMPONENT...` source: {line!r}")
    return parts[1].rstrip("/"), parts[2], parts[3:]


@lru_cache(maxsize=64)
def _source_state(line: str, arch: str) -> str | None:
    url, suite, components = _source_parts(line)
    try:
        with urllib.request.urlopen(f"{url}/dists/{suite}/InRelease", timeout=INRELEASE_TIMEOUT_S) as resp:
            text = resp.read().decode("utf-8", "replace")
        return index_digest(text, components, arch)
    except (OSError, ValueError, urllib.error.URLError) as exc:
        log.warning("cannot read %s/dists/%s/InRelease: %s", url, suite, exc)
        return None


def archive_state(sources: list[str]) -> dict[str, str] | None:
    """sources.list line -> digest of its package indices, asked once per process; None when any
    source cannot be read (offline: the caller falls back to its last resolution)."""
    arch = host_arch()
    with ThreadPoolExecutor(max_workers=max(1, len(sources))) as pool:
        states = list(pool.map(lambda s: _source_state(s, arch), sources))
    if any(s is None for s in states):
        return None
    return dict(zip(sources, states))  # type: ignore[arg-type]


def forget_archive_state() -> None:
    """Ask the archive again on the next call (tests, `omnidr images lock`)."""
    _source_state.cache_clear()
