"""Starting mitmproxy with the egress addon: the run's CA first, then the proxy, until SIGTERM/SIGINT."""

import asyncio
import importlib.util
import logging
import signal
import sys
import types
from pathlib import Path

import certifi


def _lean_addons_package() -> None:
    """Let `mitmproxy.addons.<name>` be imported without running the package's `__init__`, which imports all of
    mitmproxy's ~30 default add-ons (about 380 modules more than this proxy uses). Starting the proxy reads
    those modules through the image's storage driver, which is most of its start-up time; see `LEAN_ADDONS`."""
    if "mitmproxy.addons" in sys.modules:
        return
    spec = importlib.util.find_spec("mitmproxy.addons")
    if spec is None or not spec.submodule_search_locations:
        return
    package = types.ModuleType("mitmproxy.addons")
    package.__path__ = list(spec.submodule_search_locations)
    package.__package__ = "mitmproxy.addons"
    package.__spec__ = spec
    sys.modules["mitmproxy.addons"] = package


_lean_addons_package()

from mitmproxy import options  # noqa: E402 - after the lean package is in place
from mitmproxy.addons import core, disable_h2c, errorcheck, next_layer, proxyserver, tlsconfig  # noqa: E402
from mitmproxy.master import Master  # noqa: E402

# The add-ons the egress proxy runs on: the core options and commands, the proxy server, the layer decisions,
# TLS interception with the run's CA, h2c upgrades refused, startup errors turned into an exit. Not loaded:
# mitmproxy's onboarding app (mitm.it), playback, mapping, blocking, scripts, saving, web and DNS add-ons.
LEAN_ADDONS = (core.Core, proxyserver.Proxyserver, next_layer.NextLayer, tlsconfig.TlsConfig, disable_h2c.DisableH2C,
               errorcheck.ErrorCheck)

from sandbox.egress._addon import EgressAddon  # noqa: E402 - imports mitmproxy, after the lean package
from sandbox.egress._ca import ca_certificate, export_ca, make_ca  # noqa: E402
from sandbox.egress._config import EgressConfig  # noqa: E402


class StartupError(Exception):
    """The proxy cannot start; the message says why."""


def prepare_ca(config: EgressConfig) -> Path:
    """Make the run's CA in confdir (unless one is there already) and copy its certificate to `ca_out`.

    Done before mitmproxy listens, so that once the port accepts connections the certificate the agent must
    trust is on disk. Returns the exported file (or the certificate in confdir when there is no `ca_out`)."""
    make_ca(config.confdir)
    if config.ca_out is None:
        return ca_certificate(config.confdir)
    return export_ca(config.confdir, config.ca_out)


def _upstream_bundle(config: EgressConfig) -> str | None:
    """The public CAs plus the extra upstream CAs in one PEM file (mitmproxy takes a single file)."""
    if not config.upstream_ca:
        return None
    bundle = config.confdir / "upstream-ca-bundle.pem"
    parts = [Path(certifi.where()).read_text("ascii")]
    for path in config.upstream_ca:
        parts.append(path.read_text("ascii"))
    bundle.write_text("\n".join(p.strip() + "\n" for p in parts), "ascii")
    return str(bundle)


def mitmproxy_options(config: EgressConfig) -> dict:
    """The mitmproxy options for a mode."""
    opts: dict = {
        "mode": ["regular"],
        "listen_host": config.listen_host,
        "listen_port": config.listen_port,
        "confdir": str(config.confdir),
        "http3": False,
        "termlog_verbosity": "info",
        "ssl_verify_upstream_trusted_ca": _upstream_bundle(config),
    }
    if config.mode == "log":
        # Every CONNECT tunnel is relayed as raw TCP, unread; `show_ignored_hosts` keeps the TCP hooks that count bytes.
        opts.update(ignore_hosts=[".*"], show_ignored_hosts=True, connection_strategy="eager")
    elif config.offline:
        # Nothing is fetched: no early connection on CONNECT, no look-up of the real server's certificate.
        opts.update(connection_strategy="lazy", upstream_cert=False)
    else:
        opts.update(connection_strategy="eager", upstream_cert=True)
    return opts


async def _serve(config: EgressConfig, addon: EgressAddon) -> None:
    master = Master(options.Options(), with_termlog=True)
    master.addons.add(*(make() for make in LEAN_ADDONS))
    master.addons.add(addon)
    master.options.update(**mitmproxy_options(config))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, master.shutdown)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    await master.run()
    # Connections still open at shutdown are cancelled by asyncio.run; that is expected, not an error to print.
    loop.set_exception_handler(_ignore_cancelled)


def _ignore_cancelled(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    if not isinstance(context.get("exception"), asyncio.CancelledError):
        loop.default_exception_handler(context)


def run_proxy(config: EgressConfig) -> None:
    """Run the proxy until SIGTERM or SIGINT. Raises `StartupError` if it cannot start."""
    logging.getLogger().setLevel(logging.INFO)
    for noisy in ("tornado", "asyncio", "hpack", "quic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    ca = prepare_ca(config)
    addon = EgressAddon(config)
    detail = []
    if addon.corpus is not None:
        detail.append(f"{len(addon.corpus)} corpus pages from {config.replay_dir}")
    if addon.recorder is not None:
        detail.append(f"recording into {config.record_dir}")
    if addon.denylist:
        detail.append(f"{len(addon.denylist)} denylist entries")
    if config.intercepts_tls:
        detail.append(f"CA certificate {ca}")
    print(
        f"egress proxy: mode {config.mode}, listening on {config.listen_host}:{config.listen_port}, "
        f"log {config.log_path}" + "".join(f", {d}" for d in detail),
        flush=True,
    )
    try:
        asyncio.run(_serve(config, addon))
    except SystemExit as exc:  # mitmproxy's startup check exits 1 after logging the reason (e.g. port in use)
        if exc.code not in (0, None):
            raise StartupError("mitmproxy could not start (its reason is on the line above)") from None
