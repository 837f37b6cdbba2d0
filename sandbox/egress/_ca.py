"""The run's CA: made in a mitmproxy confdir, its certificate exported for the agent's trust store."""

import hashlib
import os
import shutil
from pathlib import Path

from mitmproxy import certs

from sandbox.egress._config import CA_FILE

CA_BASENAME = "mitmproxy"  # mitmproxy's names in confdir: mitmproxy-ca.pem (key + cert), mitmproxy-ca-cert.pem
CA_KEY_SIZE = 2048


def make_ca(confdir: Path) -> certs.CertStore:
    """The CA in `confdir`, made there (new key) unless one is there already; as mitmproxy's TLS add-on loads it."""
    confdir.mkdir(parents=True, exist_ok=True, mode=0o700)
    return certs.CertStore.from_store(confdir, CA_BASENAME, CA_KEY_SIZE)


def ca_certificate(confdir: Path) -> Path:
    """The CA certificate (no key) in a confdir made by `make_ca`."""
    return confdir / f"{CA_BASENAME}-ca-cert.pem"


def export_ca(confdir: Path, ca_out: Path) -> Path:
    """Copy the CA certificate of `confdir` to `ca_out/egress-ca.pem` (0644), atomically; returns that file."""
    ca_out.mkdir(parents=True, exist_ok=True)
    target = ca_out / CA_FILE
    tmp = ca_out / f".{CA_FILE}.tmp"
    shutil.copyfile(ca_certificate(confdir), tmp)
    os.chmod(tmp, 0o644)
    os.replace(tmp, target)
    return target


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
