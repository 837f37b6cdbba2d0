"""The egress proxy as the sandbox runs it: a container of the egress image on a private network, agents
in other containers reaching the web only through it.

The first tests need nothing (models, denylist, corpora, command line). The `docker` tests build the
egress image (cached after the first build), start an "origin" web server (HTTP and HTTPS, with a
self-signed certificate) and one proxy per mode on an internal network with no route out, and send
requests from a client container of the base image, as an agent would (urllib with a ProxyHandler).
They check what the agent gets and what network.jsonl says.
"""

import base64
import contextlib
import datetime
import hashlib
import http.server
import ipaddress
import json
import secrets
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker.errors
import docker.types
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from testkit import ROOT
from url_evasions import ENTRIES, NEAR_MISSES, PATH_EVASIONS

from sandbox.egress import (
    AGENT_CA_PATH,
    CA_FILE,
    CorpusRecorder,
    Denylist,
    DenylistError,
    ReplayCorpus,
    agent_ca_environment,
    page_path,
    url_key,
)
from sandbox.egress.__main__ import main as egress_main
from sandbox.models import NetworkLog, RequestEvent, TunnelEvent, WebCorpus, read_network_log

DEMO_WEB = ROOT / "snapshots" / "demo" / "web"
TEST_LABELS = {"org.omnidr.test": "1"}
PORT = 3128


# ---- no Docker: models, denylist, corpora, command line ------------------------------------------------


def test_network_log_lines_parse_back_and_a_cut_last_line_is_skipped(tmp_path):
    log = NetworkLog(tmp_path / "network.jsonl")
    common = dict(started_at="2025-01-01T00:00:00Z", duration_s=0.5, mode="intercept", host="a.org", port=443)
    log.write(RequestEvent(seq=log.next_seq(), method="GET", status=200, scheme="https", url="https://a.org/x",
                           source="upstream", received_bytes=10, **common))
    log.write(TunnelEvent(seq=log.next_seq(), method="CONNECT", status=403, blocked=True, block_reason="denylist",
                          **common))
    log.close()
    with (tmp_path / "network.jsonl").open("a") as f:
        f.write('{"seq": 3, "type": "requ')  # the proxy was killed mid-line
    events = read_network_log(tmp_path / "network.jsonl")
    assert [type(e) for e in events] == [RequestEvent, TunnelEvent]
    assert [e.seq for e in events] == [1, 2]
    assert events[0].url == "https://a.org/x" and events[0].received_bytes == 10
    assert events[1].blocked and events[1].block_reason == "denylist"


def test_denylist_matches_hosts_subdomains_and_path_prefixes(tmp_path):
    file = tmp_path / "deny.txt"
    file.write_text("# released benchmark data\nhuggingface.co/datasets/omnidr  # only this prefix\n")
    deny = Denylist.from_sources(["omnidr-bench.org,*.leaks.example"], [file])
    assert len(deny) == 3
    assert deny.blocks_host("omnidr-bench.org") and deny.blocks_host("WWW.Omnidr-Bench.org.")
    assert deny.blocks_host("cdn.leaks.example") and deny.blocks_host("leaks.example")
    assert not deny.blocks_host("notomnidr-bench.org")
    assert not deny.blocks_host("huggingface.co")  # a path entry never blocks a whole host
    assert deny.blocks_url("huggingface.co", "/datasets/omnidr/resolve/main/x.json?download=1")
    assert deny.blocks_url("huggingface.co", "/datasets/omnidr")
    assert not deny.blocks_url("huggingface.co", "/datasets/omnidr-other")
    assert not deny.blocks_url("huggingface.co", "/models/x")
    with pytest.raises(DenylistError):
        Denylist(["/just/a/path"])


def test_demo_corpus_is_found_by_url_under_both_schemes():
    corpus = ReplayCorpus(DEMO_WEB)
    assert len(corpus) == len(json.loads((DEMO_WEB / "corpus.json").read_text("utf-8"))["pages"])
    page, file = corpus.lookup("https://en.example-wiki.org/wiki/Pendant_light")
    assert file == (DEMO_WEB / page.path).resolve() and page.content_type.startswith("text/html")
    for variant in ("http://en.example-wiki.org/wiki/Pendant_light", "HTTPS://EN.example-wiki.org:443/wiki/Pendant_light#s",
                    "http://en.example-wiki.org:80/wiki/Pendant_light"):
        assert corpus.lookup(variant)[0] == page
    assert corpus.lookup("https://www.example-videohub.com/watch?v=Mk1lkTank9Q") is not None
    assert corpus.lookup("https://www.example-videohub.com/watch?v=other") is None
    assert corpus.lookup("https://en.example-wiki.org/wiki/pendant_light") is None  # paths are case-sensitive
    assert corpus.lookup("http://en.example-wiki.org:8080/wiki/Pendant_light") is None


def test_recorder_writes_a_corpus_that_replay_and_the_snapshot_model_read(tmp_path):
    rec = CorpusRecorder(tmp_path / "rec")
    html = b"<html><head><title> A &amp; B </title></head><body>x</body></html>"
    rec.save_bytes("https://a.org/wiki/A_B", "text/html; charset=utf-8", html)
    rec.save_bytes("https://a.org/", "text/html", b"<title>home</title>")
    rec.save_bytes("https://a.org/search?q=1", "application/json", b'{"q": 1}')
    rec.save_bytes("https://a.org/search?q=2", "application/json", b'{"q": 2}')
    rec.save_bytes("https://b.org/doc.pdf", "application/pdf", b"%PDF-1.4")
    rec.note_redirect("http://a.org/old", "https://a.org/wiki/A_B")  # target already recorded
    rec.note_redirect("https://a.org/later", "https://a.org/new")  # target recorded afterwards
    rec.save_bytes("https://a.org/new", "text/plain", b"new")
    rec.close()
    folder = tmp_path / "rec"
    index = json.loads((folder / "corpus.json").read_text("utf-8"))
    WebCorpus.model_validate(index)
    by_url = {p["url"]: p for p in index["pages"]}
    assert by_url["https://a.org/wiki/A_B"] == {"url": "https://a.org/wiki/A_B", "path": "a.org/wiki/A_B.html",
                                                "content_type": "text/html; charset=utf-8", "title": "A & B"}
    assert by_url["https://a.org/"]["path"] == "a.org/index.html"
    assert by_url["https://a.org/search?q=1"]["path"] != by_url["https://a.org/search?q=2"]["path"]
    assert by_url["https://b.org/doc.pdf"]["path"] == "b.org/doc.pdf"
    replay = ReplayCorpus(folder)
    for url, body in (("https://a.org/wiki/A_B", html), ("https://a.org/search?q=2", b'{"q": 2}'),
                      ("http://a.org/old", html), ("https://a.org/later", b"new")):
        assert replay.lookup(url)[1].read_bytes() == body, url
    assert not (folder / ".partial").exists()
    assert page_path("https://a.org:8443/x/../y", "image/png") == "a.org_8443/x/_/y.png"
    assert url_key("HTTP://A.org:80/p?q#f") == "http://a.org/p?q"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mode", "replay"], "--mode replay needs --replay-dir"),
        (["--mode", "record"], "--mode record needs --record-dir"),
        (["--mode", "log", "--replay-dir", "/x"], "--replay-dir is only used with --mode replay"),
        (["--mode", "deny", "--denylist", "/path-only"], "does not start with a host name"),
        (["--mode", "deny", "--denylist-file", "/nonexistent/deny.txt"], "does not exist"),
        (["--mode", "intercept", "--inject-header", "search.example"], "give HOST=HEADER:ENV"),
        (["--mode", "intercept", "--inject-header", "search.example=X-Token:OMNIDR_TEST_UNSET_VAR"],
         "environment variable OMNIDR_TEST_UNSET_VAR (the value of X-Token for search.example) is not set"),
        (["--mode", "log", "--inject-header", "search.example=X-Token:HOME"], "needs a mode that reads requests"),
        (["--mode", "log", "--refuse-net", "198.18.0.0/33"], "--refuse-net '198.18.0.0/33': give a network"),
        (["--mode", "log", "--refuse-net", "198.18.0.1/15"], "has host bits set"),
        (["--mode", "log", "--refuse-net", "sandbox"], "--refuse-net 'sandbox': give a network"),
        (["--mode", "log", "--allow-net", "10.0.0.1/8"], "--allow-net '10.0.0.1/8': give a network"),
        (["--mode", "log", "--allow-endpoint", "search"], "--allow-endpoint 'search': give HOST:PORT"),
        (["--mode", "log", "--allow-endpoint", "search:99999"], "--allow-endpoint 'search:99999': give HOST:PORT"),
        (["--mode", "log", "--admin-token-env", "OMNIDR_TEST_UNSET_VAR"],
         "environment variable OMNIDR_TEST_UNSET_VAR (the admin token) is not set"),
    ],
)
def test_bad_command_line_is_exit_2_and_one_line(capsys, args, message):
    assert egress_main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


# ---- Docker: the image, an origin server, one proxy per mode -----------------------------------------------

ORIGIN_SCRIPT = r"""
import datetime, http.server, os, ssl, threading
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

key = ec.generate_private_key(ec.SECP256R1())
name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "origin.test")])
now = datetime.datetime.now(datetime.timezone.utc)
cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("origin.test")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256()))
with open("/tmp/key.pem", "wb") as f:
    pem = serialization.Encoding.PEM
    f.write(key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
with open("/tmp/cert.pem", "wb") as f:
    f.write(cert.public_bytes(serialization.Encoding.PEM))

def handler(scheme):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def do_GET(self):
            if self.path.startswith("/redirect"):
                self.send_response(301)
                self.send_header("Location", "/landing")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = f"<html><head><title>Origin {self.path}</title></head>"
            body = (body + f"<body>{scheme} {self.path}</body></html>").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *args):
            pass
    return Handler

plain = http.server.ThreadingHTTPServer(("0.0.0.0", 8080), handler("http"))
secure = http.server.ThreadingHTTPServer(("0.0.0.0", 8443), handler("https"))
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain("/tmp/cert.pem", "/tmp/key.pem")
secure.socket = context.wrap_socket(secure.socket, server_side=True)
threading.Thread(target=plain.serve_forever, daemon=True).start()
threading.Thread(target=secure.serve_forever, daemon=True).start()
tmp = "/certs/.origin.pem"
with open(tmp, "wb") as f:
    f.write(cert.public_bytes(serialization.Encoding.PEM))
os.replace(tmp, "/certs/origin.pem")
print("origin ready", flush=True)
threading.Event().wait()
"""

CLIENT_SCRIPT = r"""
import base64, json, socket, ssl, sys, time, urllib.error, urllib.request
spec = json.loads(sys.argv[1])
host, port = spec["proxy"].rsplit("/", 1)[-1].split(":")
deadline = time.monotonic() + 20
while True:
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.1)
opener = urllib.request.build_opener(
    urllib.request.ProxyHandler({"http": spec["proxy"], "https": spec["proxy"]}),
    urllib.request.HTTPSHandler(context=ssl.create_default_context()),
)
out = []
for url in spec["urls"]:
    try:
        with opener.open(urllib.request.Request(url), timeout=15) as r:
            out.append({"status": r.status, "url": r.url, "content_type": r.headers.get("content-type"),
                        "body": base64.b64encode(r.read()).decode()})
    except urllib.error.HTTPError as e:
        out.append({"status": e.code, "url": url, "content_type": e.headers.get("content-type"),
                    "body": base64.b64encode(e.read()).decode()})
    except Exception as e:
        out.append({"status": None, "url": url, "error": repr(e)})
print(json.dumps(out))
"""

# Requests written byte for byte (urllib would not send some spellings): the status line's code of each, or None.
RAW_SCRIPT = r"""
import json, socket, sys
spec = json.loads(sys.argv[1])
out = []
for host, path in spec["requests"]:
    with socket.create_connection((spec["proxy"], spec["port"]), timeout=30) as s:
        s.sendall(f"GET http://{host}{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while b"\r\n" not in data and (chunk := s.recv(65536)):  # the status line is all that is read
            data += chunk
    out.append(int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else None)
print(json.dumps(out))
"""


@dataclass
class Answer:
    status: int | None
    url: str
    body: bytes
    content_type: str | None
    error: str | None


@dataclass
class Proxy:
    alias: str
    logs: Path  # host folder mounted at /logs
    ca: Path  # where the proxy exports the run's CA certificate (host side)
    container: object = None

    @property
    def url(self) -> str:
        return f"http://{self.alias}:{PORT}"

    def events(self, match: Callable[[RequestEvent | TunnelEvent], bool], count: int = 1, timeout_s: float = 10.0):
        """Events of this proxy's network.jsonl that `match`, once there are `count` of them (lines of a
        tunnel are written when it closes, which can be just after the client has finished)."""
        deadline = time.monotonic() + timeout_s
        while True:
            path = self.logs / "network.jsonl"
            found = [e for e in read_network_log(path) if match(e)] if path.exists() else []
            if len(found) >= count or time.monotonic() > deadline:
                assert len(found) == count, f"expected {count} matching events, found {found}"
                return found
            time.sleep(0.05)


class Lab:
    """The test's containers and networks, all labelled `org.omnidr.test=1` and removed at the end."""

    def __init__(self, client, egress_tag: str, base_tag: str, folder: Path) -> None:
        self.client, self.egress_tag, self.base_tag, self.folder = client, egress_tag, base_tag, folder
        self.suffix = secrets.token_hex(4)
        self.containers: list = []
        self.networks: list = []

    def network(self, name: str):
        net = self.client.networks.create(f"omnidr-test-egress-{name}-{self.suffix}", driver="bridge", internal=True,
                                          labels=TEST_LABELS)
        self.networks.append(net)
        return net

    def subnet(self, network) -> str:
        """The network's IPv4 range: the lab's web is on a private address, opened to a proxy with --allow-net."""
        network.reload()
        return network.attrs["IPAM"]["Config"][0]["Subnet"]

    def _on(self, network, alias: str) -> dict:
        """Container arguments that attach it to `network` under the DNS name `alias`."""
        endpoint = self.client.api.create_endpoint_config(aliases=[alias])
        return {"network": network.name, "networking_config": {network.name: endpoint}}

    def _folder(self, name: str) -> Path:
        path = self.folder / name
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o777)  # written by the proxy's unprivileged user
        return path

    def start_origin(self, network) -> Path:
        certs = self._folder("origin-certs")
        container = self.client.containers.run(
            self.egress_tag, ["-c", ORIGIN_SCRIPT], entrypoint=["python"], detach=True, labels=TEST_LABELS,
            name=f"omnidr-test-origin-{self.suffix}", volumes={str(certs): {"bind": "/certs", "mode": "rw"}},
            **self._on(network, "origin.test"),
        )
        self.containers.append(container)
        self._wait_log(container, "origin ready")
        return certs / "origin.pem"

    def start_proxy(self, network, mode: str, *extra: str, mounts: dict[str, Path] | None = None,
                    wait: bool = True, hosts: dict[str, str] | None = None) -> Proxy:
        alias = f"proxy-{mode}-{secrets.token_hex(2)}"
        logs, ca = self._folder(f"{alias}/logs"), self._folder(f"{alias}/ca")
        volumes = {str(logs): {"bind": "/logs", "mode": "rw"}, str(ca): {"bind": "/ca", "mode": "rw"}}
        for bind, path in (mounts or {}).items():
            volumes[str(path)] = {"bind": bind, "mode": "ro" if bind != "/record" else "rw"}
        command = ["--mode", mode, "--listen", f"0.0.0.0:{PORT}", "--log", "/logs/network.jsonl", "--ca-out", "/ca",
                   *extra]
        # Run as the sandbox runs its helpers: read-only root, /tmp in memory, no capabilities.
        container = self.client.containers.create(
            self.egress_tag, command, name=f"omnidr-test-{alias}-{self.suffix}", labels=TEST_LABELS,
            volumes=volumes, read_only=True, tmpfs={"/tmp": "size=64m"}, cap_drop=["ALL"],
            security_opt=["no-new-privileges"], detach=True, extra_hosts=hosts or {}, **self._on(network, alias),
        )
        self.containers.append(container)
        container.start()
        proxy = Proxy(alias=alias, logs=logs, ca=ca / CA_FILE, container=container)
        if wait:
            self.wait_proxy(proxy)
        return proxy

    def wait_proxy(self, proxy: Proxy) -> None:
        self._wait_log(proxy.container, "proxy listening at")
        assert proxy.ca.is_file(), "the CA certificate must be on disk once the proxy listens"

    def _wait_log(self, container, text: str, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            logs = container.logs().decode("utf-8", "replace")
            if text in logs:
                return
            container.reload()
            if container.status in ("exited", "dead"):
                raise AssertionError(f"{container.name} exited: {logs[-2000:]}")
            time.sleep(0.1)
        raise AssertionError(f"{container.name} did not log {text!r} within {timeout_s} s")

    def fetch(self, network, proxy: Proxy, *urls: str, trust: Path | None = None) -> list[Answer]:
        """GET each URL through `proxy` from a fresh agent-like container; `trust` is its only CA file."""
        volumes, environment = {}, {}
        if trust is not None:  # mounted and announced as the sandbox does it for the run's CA
            volumes[str(trust)] = {"bind": AGENT_CA_PATH, "mode": "ro"}
            environment.update(agent_ca_environment())
        output = self.client.containers.run(
            self.base_tag, ["python3", "-c", CLIENT_SCRIPT, json.dumps({"proxy": proxy.url, "urls": list(urls)})],
            network=network.name, volumes=volumes, environment=environment, labels=TEST_LABELS, remove=True,
            user="1000:1000", read_only=True,
        )
        return [Answer(a["status"], a["url"], base64.b64decode(a.get("body", "")), a.get("content_type"),
                       a.get("error")) for a in json.loads(output)]

    def raw(self, network, proxy: Proxy, requests: list[tuple[str, str]]) -> list[int | None]:
        """Send each (host, path) to `proxy` as an absolute-form GET written byte for byte; the statuses."""
        output = self.client.containers.run(
            self.base_tag, ["python3", "-c", RAW_SCRIPT, json.dumps({"proxy": proxy.alias, "port": PORT,
                                                                      "requests": requests})],
            network=network.name, labels=TEST_LABELS, remove=True, user="1000:1000", read_only=True)
        return json.loads(output)

    def close(self) -> None:
        for container in self.containers:
            with contextlib.suppress(Exception):  # already gone
                container.remove(force=True)
        for net in self.networks:
            with contextlib.suppress(Exception):
                net.remove()


@dataclass
class Setup:
    lab: Lab
    net: object
    origin_ca: Path
    replay: Proxy
    deny: Proxy
    log: Proxy
    intercept: Proxy
    record: Proxy
    record_dir: Path


DENIED_CORPUS_HOST = "www.example-standards.org"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from omnidr.images import build_images, docker_client

    client = docker_client()
    built = {b.name: b for b in build_images(["egress"])}
    lab = Lab(client, built["egress"].tag, built["base"].tag, tmp_path_factory.mktemp("egress"))
    try:
        net = lab.network("net")  # internal: nothing on it reaches the internet
        origin_ca = lab.start_origin(net)
        record_dir = lab._folder("recorded")
        web = ("--allow-net", lab.subnet(net))  # origin.test is on the lab's private network
        proxies = {
            "replay": lab.start_proxy(net, "replay", "--replay-dir", "/replay", "--denylist", DENIED_CORPUS_HOST,
                                      mounts={"/replay": DEMO_WEB}, wait=False),
            "deny": lab.start_proxy(net, "deny", wait=False),
            "log": lab.start_proxy(net, "log", "--denylist", "blocked.test", *web, wait=False),
            "intercept": lab.start_proxy(net, "intercept", *web, "--upstream-ca", "/origin/origin.pem",
                                         mounts={"/origin": origin_ca.parent}, wait=False),
            "record": lab.start_proxy(net, "record", *web, "--record-dir", "/record", "--upstream-ca", "/origin/origin.pem",
                                      mounts={"/origin": origin_ca.parent, "/record": record_dir}, wait=False),
        }
        for proxy in proxies.values():
            lab.wait_proxy(proxy)
        yield Setup(lab=lab, net=net, origin_ca=origin_ca, record_dir=record_dir, **proxies)
    finally:
        lab.close()


def _url(url: str) -> Callable[[RequestEvent | TunnelEvent], bool]:
    return lambda e: isinstance(e, RequestEvent) and e.url == url


def _tunnel(host: str, port: int = 443) -> Callable[[RequestEvent | TunnelEvent], bool]:
    return lambda e: isinstance(e, TunnelEvent) and e.host == host and e.port == port


@pytest.mark.docker
def test_replay_serves_the_demo_corpus_over_http(setup):
    url = "http://en.example-wiki.org/wiki/Pendant_light"
    [answer] = setup.lab.fetch(setup.net, setup.replay, url)
    page, file = ReplayCorpus(DEMO_WEB).lookup(url)
    assert answer.status == 200 and answer.body == file.read_bytes()
    assert answer.content_type == page.content_type
    [event] = setup.replay.events(_url(url))
    assert (event.method, event.host, event.port, event.status) == ("GET", "en.example-wiki.org", 80, 200)
    assert event.scheme == "http"
    assert event.source == "replay" and event.received_bytes == len(answer.body) and not event.blocked
    assert event.mode == "replay" and event.duration_s >= 0


@pytest.mark.docker
def test_replay_serves_https_to_an_agent_that_trusts_the_runs_ca(setup):
    url = "https://www.example-optics.com/pdf/clearline-nd1000-datasheet.pdf"
    [trusted] = setup.lab.fetch(setup.net, setup.replay, url, trust=setup.replay.ca)
    assert trusted.status == 200 and trusted.content_type == "application/pdf"
    assert trusted.body == (DEMO_WEB / "www.example-optics.com/pdf/clearline-nd1000-datasheet.pdf").read_bytes()
    [event] = setup.replay.events(_url(url))
    assert event.scheme == "https" and event.port == 443 and event.status == 200 and event.source == "replay"

    other = "https://zh.example-wiki.org/wiki/Rayleigh_scattering"
    [untrusted] = setup.lab.fetch(setup.net, setup.replay, other)  # the base image trusts no CA at all
    assert untrusted.status is None and "CERTIFICATE_VERIFY_FAILED" in untrusted.error
    [tunnel] = setup.replay.events(_tunnel("zh.example-wiki.org"))
    assert tunnel.status == 200 and "TLS handshake between the agent and the proxy failed" in tunnel.error


@pytest.mark.docker
def test_replay_answers_404_for_what_was_not_recorded(setup):
    urls = ["http://en.example-wiki.org/wiki/Not_recorded", "https://unknown.example/x?y=1"]
    answers = setup.lab.fetch(setup.net, setup.replay, *urls, trust=setup.replay.ca)
    assert [a.status for a in answers] == [404, 404]
    for url in urls:
        [event] = setup.replay.events(_url(url))
        assert event.status == 404 and event.source == "proxy" and event.error == "not in the replay corpus"
        assert not event.blocked


@pytest.mark.docker
def test_denylisted_host_is_refused_with_403_and_logged_as_blocked(setup):
    http_url = f"http://{DENIED_CORPUS_HOST}/safety/test-before-touch"  # in the corpus, but denied
    answers = setup.lab.fetch(setup.net, setup.replay, http_url, f"https://{DENIED_CORPUS_HOST}/safety/test-before-touch",
                              trust=setup.replay.ca)
    assert answers[0].status == 403
    assert answers[1].status is None and "Tunnel connection failed: 403" in answers[1].error  # CONNECT refused
    [request] = setup.replay.events(_url(http_url))
    assert request.blocked and request.block_reason == "denylist" and request.status == 403
    [tunnel] = setup.replay.events(_tunnel(DENIED_CORPUS_HOST))
    assert tunnel.blocked and tunnel.block_reason == "denylist" and tunnel.status == 403 and tunnel.method == "CONNECT"

    [answer] = setup.lab.fetch(setup.net, setup.log, "http://sub.blocked.test/anything")
    assert answer.status == 403
    [event] = setup.log.events(_url("http://sub.blocked.test/anything"))
    assert event.blocked and event.block_reason == "denylist"


@pytest.mark.docker
def test_no_spelling_of_a_denied_url_gets_past_the_proxy(setup):
    """The evasion table of tests/url_evasions.py through the real proxy in log mode: each spelling of a denied
    URL is answered 403 and logged as a denylist block; each near miss goes on (every name of the table resolves,
    in the proxy's hosts file, to the lab's origin, where port 80 is closed: 502, not blocked). Spellings with a
    raw tab or line feed are left out: in HTTP/1.1 they end the request line, so no server could read them as
    the denied path. Hosts that are not plain ASCII names (an escape, full-width letters, an ideographic full
    stop) never reach the policy: mitmproxy's request-line parser answers them 400 and forwards nothing."""
    [origin] = [c for c in setup.lab.containers if c.name.startswith("omnidr-test-origin-")]
    origin.reload()
    origin_ip = origin.attrs["NetworkSettings"]["Networks"][setup.net.name]["IPAddress"]
    names = {host.split(":")[0].rstrip(".").lower() for host, _ in PATH_EVASIONS + NEAR_MISSES}
    proxy = setup.lab.start_proxy(setup.net, "log", "--denylist", ",".join(ENTRIES), "--allow-net",
                                  setup.lab.subnet(setup.net), hosts={n: origin_ip for n in names if n.isascii()})
    tried = [(host, path) for host, path in PATH_EVASIONS if not any(c in host + path for c in "\t\n")]
    unparsed = [(host, path) for host, path in tried if not host.isascii() or "%" in host]
    statuses = setup.lab.raw(setup.net, proxy, tried + NEAR_MISSES)
    refused = dict(zip(tried, statuses[:len(tried)], strict=True))
    assert {k: v for k, v in refused.items() if k not in unparsed} == {k: 403 for k in tried if k not in unparsed}
    assert {refused[k] for k in unparsed} == {400}
    passed = dict(zip(NEAR_MISSES, statuses[len(tried):], strict=True))
    assert set(passed.values()) == {502}, passed
    logged = len(tried) - len(unparsed)
    events = proxy.events(lambda e: isinstance(e, RequestEvent), count=logged + len(NEAR_MISSES))
    assert [e.block_reason for e in events] == ["denylist"] * logged + [None] * len(NEAR_MISSES)


@pytest.mark.docker
def test_private_addresses_are_refused_unless_opened_and_an_endpoint_opens_only_itself(setup):
    """Without --allow-net the lab's web (a private Docker network) is not the web: refused, by address and by
    name. --allow-endpoint opens one name and port, as the sandbox opens its search door: not the address's
    other ports, nor the address under another spelling."""
    closed = setup.lab.start_proxy(setup.net, "log")
    door = setup.lab.start_proxy(setup.net, "log", "--allow-endpoint", "origin.test:8080")
    [origin] = [c for c in setup.lab.containers if c.name.startswith("omnidr-test-origin-")]
    origin.reload()
    ip = origin.attrs["NetworkSettings"]["Networks"][setup.net.name]["IPAddress"]
    answers = setup.lab.fetch(setup.net, closed, "http://origin.test:8080/page", f"http://{ip}:8080/page")
    assert [a.status for a in answers] == [403, 403] and b"not on the public internet" in answers[0].body
    events = closed.events(lambda e: e.blocked, count=2)
    assert [(e.block_reason, e.status) for e in events] == [("private_network", 403)] * 2
    assert f"origin.test is {ip}, not on the public internet" in events[0].error
    answers = setup.lab.fetch(setup.net, door, "http://origin.test:8080/page", "http://ORIGIN.test.:8080/page",
                              "https://origin.test:8443/page", f"http://{ip}:8080/page")
    assert [a.status for a in answers[:2]] == [200, 200]
    assert answers[2].status is None and "Tunnel connection failed: 403" in answers[2].error
    assert answers[3].status == 403
    assert [e.block_reason for e in door.events(lambda e: e.blocked, count=2)] == ["private_network"] * 2


@pytest.mark.docker
def test_deny_mode_refuses_everything(setup):
    urls = ["http://origin.test:8080/page", "https://origin.test:8443/page", "https://en.example-wiki.org/wiki/Pendant_light"]
    answers = setup.lab.fetch(setup.net, setup.deny, *urls, trust=setup.origin_ca)
    assert answers[0].status == 403 and b"allows no web access" in answers[0].body
    assert all(a.status is None and "Tunnel connection failed: 403" in a.error for a in answers[1:])
    events = setup.deny.events(lambda e: True, count=3)
    assert all(e.blocked and e.block_reason == "deny_mode" and e.status == 403 for e in events)
    assert sorted((type(e).__name__, e.host, e.port) for e in events) == [
        ("RequestEvent", "origin.test", 8080), ("TunnelEvent", "en.example-wiki.org", 443),
        ("TunnelEvent", "origin.test", 8443),
    ]


@pytest.mark.docker
def test_log_mode_relays_tls_unread_and_logs_each_tunnel_when_it_closes(setup):
    # The agent trusts only the origin's own certificate: success proves the proxy did not intercept TLS.
    answers = setup.lab.fetch(setup.net, setup.log, "https://origin.test:8443/private?token=1",
                              "http://origin.test:8080/plain", "https://origin.test:9/closed-port",
                              trust=setup.origin_ca)
    assert answers[0].status == 200 and answers[0].body.endswith(b"https /private?token=1</body></html>")
    assert answers[1].status == 200 and answers[2].status is None

    [tunnel] = setup.log.events(_tunnel("origin.test", 8443))
    assert tunnel.method == "CONNECT" and tunnel.status == 200 and not tunnel.blocked and tunnel.error is None
    assert tunnel.sent_bytes > 200 and tunnel.received_bytes > len(answers[0].body) and tunnel.duration_s > 0
    assert "token" not in tunnel.model_dump_json()  # the URL inside the tunnel is not known in log mode

    [plain] = setup.log.events(_url("http://origin.test:8080/plain"))
    assert plain.status == 200 and plain.source == "upstream" and plain.received_bytes == len(answers[1].body)

    [refused] = setup.log.events(_tunnel("origin.test", 9))
    assert refused.status == 502 and "Cannot connect to origin.test:9" in refused.error and not refused.blocked


@pytest.mark.docker
def test_intercept_mode_logs_full_https_urls_with_the_exported_ca(setup):
    url = "https://origin.test:8443/deep/path?q=video+moment"
    [answer] = setup.lab.fetch(setup.net, setup.intercept, url, trust=setup.intercept.ca)
    assert answer.status == 200 and answer.body.endswith(b"https /deep/path?q=video+moment</body></html>")
    [event] = setup.intercept.events(_url(url))
    assert (event.scheme, event.host, event.port, event.status) == ("https", "origin.test", 8443, 200)
    assert event.source == "upstream"
    assert event.received_bytes == len(answer.body) and event.content_type == "text/html; charset=utf-8"
    assert not setup.intercept.events(lambda e: isinstance(e, TunnelEvent), count=0)  # the tunnel itself is not a line

    # An agent that trusts the real server but not the run's CA cannot be intercepted silently: it fails.
    [refused] = setup.lab.fetch(setup.net, setup.intercept, "https://origin.test:8443/other", trust=setup.origin_ca)
    assert refused.status is None and "CERTIFICATE_VERIFY_FAILED" in refused.error
    [tunnel] = setup.intercept.events(_tunnel("origin.test", 8443))
    assert "TLS handshake between the agent and the proxy failed" in tunnel.error


@pytest.mark.docker
def test_record_then_replay_offline_gives_the_same_pages(setup):
    urls = ["https://origin.test:8443/article?id=7", "http://origin.test:8080/redirect"]
    recorded = setup.lab.fetch(setup.net, setup.record, *urls, trust=setup.record.ca)
    assert [a.status for a in recorded] == [200, 200]
    assert recorded[1].url == "http://origin.test:8080/landing"  # urllib followed the redirect
    events = setup.record.events(lambda e: isinstance(e, RequestEvent), count=3)
    assert {e.url: e.recorded_path is not None for e in events} == {
        urls[0]: True, urls[1]: False, "http://origin.test:8080/landing": True,
    }
    corpus = WebCorpus.model_validate_json((setup.record_dir / "corpus.json").read_text("utf-8"))
    assert {p.url for p in corpus.pages} == {urls[0], urls[1], "http://origin.test:8080/landing"}

    # Replay the recording on a network where the origin does not exist.
    offline = setup.lab.network("offline")
    replay = setup.lab.start_proxy(offline, "replay", "--replay-dir", "/replay", mounts={"/replay": setup.record_dir})
    replayed = setup.lab.fetch(offline, replay, *urls, trust=replay.ca)
    assert [a.status for a in replayed] == [200, 200]
    assert replayed[0].body == recorded[0].body and replayed[1].body == recorded[1].body
    assert all(e.source == "replay" for e in replay.events(lambda e: True, count=2))


@pytest.mark.docker
def test_a_request_the_proxy_cannot_handle_fails_closed_and_is_logged(setup, tmp_path):
    corpus = tmp_path / "corpus"
    rec = CorpusRecorder(corpus)
    rec.save_bytes("http://gone.test/page", "text/html", b"<title>gone</title>")
    rec.close()
    corpus.chmod(0o755)
    proxy = setup.lab.start_proxy(setup.net, "replay", "--replay-dir", "/replay", mounts={"/replay": corpus})
    (corpus / "gone.test" / "page.html").unlink()  # the corpus breaks while the proxy runs
    [answer] = setup.lab.fetch(setup.net, proxy, "http://gone.test/page")
    assert answer.status == 502
    [event] = proxy.events(_url("http://gone.test/page"))
    assert event.status == 502 and event.source == "proxy" and "egress proxy error" in event.error


# ---- a reused proxy: generations through control requests (one proxy container on the host's loopback) -------

ADMIN_ENV = "OMNIDR_EGRESS_ADMIN"
CONTROL = "http://omnidr-egress.control"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for localhost (and its own CA), with its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=7))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = folder / "origin.pem", folder / "origin-key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    cert_file.chmod(0o644)
    return cert_file, key_file


class _Page(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = f"page {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@dataclass
class LoopbackProxy:
    """An egress proxy on 127.0.0.1 (a container of the egress image on the host's network) and a loopback
    origin (HTTP and HTTPS, in this process); the proxy's /logs and /ca are `folder/logs` and `folder/ca`."""

    port: int
    folder: Path
    container: object
    http_origin: str
    https_origin: str
    origin_cert: Path

    def open(self, url: str, *, method: str = "GET", body: bytes | None = None, headers: dict | None = None,
             trust: Path | None = None) -> tuple[int | None, bytes]:
        """One request through the proxy: (status, body), or (None, the error) when it failed."""
        proxy = f"http://127.0.0.1:{self.port}"
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({"http": proxy, "https": proxy}),
            urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=trust) if trust else None),
        )
        request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
        try:
            with opener.open(request, timeout=15) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
        except urllib.error.URLError as e:
            return None, repr(e.reason).encode()

    def control(self, action: str, answer: dict | None = None, token: str | None = "admin-secret") -> dict:
        method = "GET" if action == "state" else "POST"
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        body = json.dumps(answer).encode() if answer is not None else (b"" if method == "POST" else None)
        status, text = self.open(f"{CONTROL}/{action}", method=method, body=body, headers=headers)
        return {"status": status, **json.loads(text)}

    def log(self, name: str) -> list:
        return read_network_log(self.folder / "logs" / name)


def _start_loopback_proxy(client, tag: str, folder: Path, *args: str, token: bool = True,
                          mounts: dict[str, Path] | None = None) -> tuple[object, int]:
    folder.mkdir(parents=True, exist_ok=True)
    for sub in ("logs", "ca"):
        (folder / sub).mkdir(exist_ok=True)
        (folder / sub).chmod(0o777)
    port = _free_port()
    # the origins are the test's own servers on the host's loopback, opened on purpose (no other loopback use)
    command = ["--listen", f"127.0.0.1:{port}", "--log", "/logs/initial.jsonl", "--ca-out", "/ca/initial",
               "--allow-net", "127.0.0.0/8", "--allow-net", "::1/128", *args]
    environment = {ADMIN_ENV: "admin-secret"} if token else {}
    if token:
        command += ["--admin-token-env", ADMIN_ENV]
    volumes = {str(folder / "logs"): {"bind": "/logs", "mode": "rw"}, str(folder / "ca"): {"bind": "/ca", "mode": "rw"}}
    volumes.update({str(path): {"bind": bind, "mode": "ro"} for bind, path in (mounts or {}).items()})
    container = client.containers.run(
        tag, command, network_mode="host", environment=environment, volumes=volumes, labels=TEST_LABELS,
        read_only=True, tmpfs={"/tmp": "size=64m"}, cap_drop=["ALL"], security_opt=["no-new-privileges"], detach=True,
        name=f"omnidr-test-loopback-{secrets.token_hex(4)}",
    )
    deadline = time.monotonic() + 60
    while b"proxy listening at" not in container.logs():
        container.reload()
        assert container.status not in ("exited", "dead"), container.logs().decode()[-2000:]
        assert time.monotonic() < deadline, "the proxy did not start"
        time.sleep(0.1)
    return container, port


@pytest.fixture(scope="module")
def loopback(tmp_path_factory):
    from omnidr.images import build_images, docker_client

    client = docker_client()
    tag = {b.name: b for b in build_images(["egress"])}["egress"].tag
    folder = tmp_path_factory.mktemp("loopback")
    (folder / "origin").mkdir()
    (folder / "origin").chmod(0o755)
    cert, key = _self_signed(folder / "origin")
    plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    secure = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    secure.socket = context.wrap_socket(secure.socket, server_side=True)
    for server in (plain, secure):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    containers = []
    try:
        container, port = _start_loopback_proxy(client, tag, folder / "intercept", "--mode", "intercept",
                                                "--upstream-ca", "/origin/origin.pem",
                                                mounts={"/origin": folder / "origin"})
        containers.append(container)
        proxy = LoopbackProxy(port=port, folder=folder / "intercept", container=container,
                              http_origin=f"http://localhost:{plain.server_address[1]}",
                              https_origin=f"https://localhost:{secure.server_address[1]}", origin_cert=cert)

        def start(folder: Path, *args: str, **kwargs) -> LoopbackProxy:
            container, port = _start_loopback_proxy(client, tag, folder, *args, **kwargs)
            containers.append(container)
            return LoopbackProxy(port, folder, container, proxy.http_origin, proxy.https_origin, cert)

        yield proxy, start
    finally:
        for container in containers:
            with contextlib.suppress(Exception):
                container.remove(force=True)
        plain.shutdown()
        secure.shutdown()


@pytest.mark.docker
def test_a_reused_proxy_gives_each_generation_its_own_log_and_ca(loopback):
    proxy, _ = loopback
    assert proxy.control("seal") == {"status": 200, "generation": "initial", "events": 0}
    opened = proxy.control("open", {"generation": "A", "log_path": "/logs/A/network.jsonl", "ca_out": "/ca/A"})
    ca_a = proxy.folder / "ca" / "A" / CA_FILE
    assert opened == {"status": 200, "generation": "A", "log_path": "/logs/A/network.jsonl",
                      "ca_sha256": hashlib.sha256(ca_a.read_bytes()).hexdigest()}
    assert proxy.open(f"{proxy.http_origin}/a-plain") == (200, b"page /a-plain")
    assert proxy.open(f"{proxy.https_origin}/a-secure", trust=ca_a) == (200, b"page /a-secure")
    # An agent's tunnel still open when the attempt ends: the proxy closes it and logs it in A.
    idle = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    idle.sendall(f"CONNECT {proxy.https_origin.removeprefix('https://')} HTTP/1.1\r\n\r\n".encode())
    assert idle.recv(100).startswith(b"HTTP/1.1 200")

    sealed = proxy.control("seal")
    assert idle.recv(100) == b""  # closed by the proxy
    a_events = proxy.log("A/network.jsonl")
    assert sealed == {"status": 200, "generation": "A", "events": 3} and len(a_events) == 3
    assert [e.seq for e in a_events] == [1, 2, 3]
    assert {e.url for e in a_events if isinstance(e, RequestEvent)} == {f"{proxy.http_origin}/a-plain",
                                                                        f"{proxy.https_origin}/a-secure"}
    [tunnel] = [e for e in a_events if isinstance(e, TunnelEvent)]
    assert tunnel.status == 200 and tunnel.host == "localhost"

    # Between attempts: 503, written nowhere.
    status, body = proxy.open(f"{proxy.http_origin}/between")
    assert status == 503 and b"between attempts" in body
    assert proxy.control("state") == {"status": 200, "generation": "A", "sealed": True, "events": 3,
                                      "ca_sha256": opened["ca_sha256"]}

    opened_b = proxy.control("open", {"generation": "B", "log_path": "/logs/B/network.jsonl", "ca_out": "/ca/B"})
    ca_b = proxy.folder / "ca" / "B" / CA_FILE
    assert opened_b["status"] == 200 and opened_b["ca_sha256"] == hashlib.sha256(ca_b.read_bytes()).hexdigest()
    assert opened_b["ca_sha256"] != opened["ca_sha256"]
    assert proxy.open(f"{proxy.https_origin}/b-secure", trust=ca_b) == (200, b"page /b-secure")
    status, error = proxy.open(f"{proxy.https_origin}/b-with-a", trust=ca_a)  # A's CA no longer signs anything
    assert status is None and b"CERTIFICATE_VERIFY_FAILED" in error
    assert proxy.open(f"{proxy.http_origin}/b-plain") == (200, b"page /b-plain")
    deadline = time.monotonic() + 10
    while len(b_events := proxy.log("B/network.jsonl")) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)  # the refused tunnel's line is written when the agent's connection has closed
    assert [e.seq for e in b_events] == [1, 2, 3]  # numbered from 1 again
    assert {getattr(e, "url", None) for e in b_events} == {f"{proxy.https_origin}/b-secure", None,
                                                          f"{proxy.http_origin}/b-plain"}
    [refused] = [e for e in b_events if isinstance(e, TunnelEvent)]
    assert "TLS handshake between the agent and the proxy failed" in refused.error
    assert proxy.log("A/network.jsonl") == a_events  # nothing of B, and nothing of the 503, went to A
    assert proxy.control("state")["events"] == 3
    assert not any("/between" in file.read_text() for file in (proxy.folder / "logs").rglob("*.jsonl"))


@pytest.mark.docker
def test_the_control_address_needs_the_admin_token(loopback, tmp_path):
    proxy, start = loopback
    state = proxy.control("state")
    for token in ("wrong", None):
        status, body = proxy.open(f"{CONTROL}/state", headers={"Authorization": f"Bearer {token}"} if token else {})
        assert status == 403 and b"control address" in body
    status, _ = proxy.open(f"{CONTROL}/seal", method="POST", body=b"", headers={"Authorization": "Bearer wrong"})
    assert status == 403
    assert proxy.control("state")["sealed"] is state["sealed"]  # nothing happened
    # An agent probing the control address is in the audit (of the generation open at the time).
    log = proxy.log("initial.jsonl" if state["generation"] == "initial" else f"{state['generation']}/network.jsonl")
    probes = [e for e in log if e.host == "omnidr-egress.control"]
    assert [(e.status, e.blocked, e.block_reason) for e in probes] == [(403, True, "control")] * 3

    # Without --admin-token-env the name is an ordinary host: here, a page the replay corpus does not have.
    other = start(tmp_path / "replay", "--mode", "replay", "--replay-dir", "/replay", token=False,
                  mounts={"/replay": DEMO_WEB})
    status, _ = other.open(f"{CONTROL}/seal", method="POST", body=b"", headers={"Authorization": "Bearer x"})
    assert status == 404
    [event] = other.log("initial.jsonl")
    assert event.status == 404 and not event.blocked and event.error == "not in the replay corpus"


@pytest.mark.docker
def test_only_the_current_attempts_agent_is_served(loopback, tmp_path):
    """Another client of the proxy (a last attempt's agent still alive, another container on the network) is
    refused, in the proxy's first generation and in each one a reuse opens, and the refusal is logged."""
    _, start = loopback
    proxy = start(tmp_path / "agent", "--mode", "log", "--agent-address", "127.0.0.9")
    status, body = proxy.open(f"{proxy.http_origin}/not-the-agent")
    assert status == 403 and b"current attempt's agent" in body
    tunnel = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    tunnel.sendall(f"CONNECT {proxy.https_origin.removeprefix('https://')} HTTP/1.1\r\n\r\n".encode())
    assert tunnel.recv(100).startswith(b"HTTP/1.1 403")
    tunnel.close()
    assert proxy.control("seal")["status"] == 200
    assert [(e.status, e.blocked, e.block_reason) for e in proxy.log("initial.jsonl")] == \
        [(403, True, "not_the_agent")] * 2
    # the next attempt's agent is this client: served; then one after it whose agent is another: refused again
    for generation, agent, expected in (("B", "127.0.0.1", 200), ("C", "127.0.0.9", 403)):
        assert proxy.control("open", {"generation": generation, "log_path": f"/logs/{generation}/network.jsonl",
                                      "agent_address": agent})["status"] == 200
        status, _ = proxy.open(f"{proxy.http_origin}/{generation}")
        assert status == expected
        assert proxy.control("seal")["status"] == 200  # its lines are all written once it is sealed
        [event] = proxy.log(f"{generation}/network.jsonl")
        assert (event.status, event.block_reason) == (expected, None if expected == 200 else "not_the_agent")


# ---- --refuse-net: the sandbox's own networks are not the web -----------------------------------------------


@pytest.mark.docker
def test_addresses_in_a_refused_network_are_refused_with_403_and_logged(tmp_path):
    """An origin on two networks: `origin.test` on an ordinary one, `inside.test` on one made as the sandbox makes
    an attempt's internal network (a /28 of SANDBOX_POOL, inhibit_ipv4). The proxies, on both, refuse the pool."""
    from omnidr.attempts._docker import SANDBOX_POOL, SANDBOX_SUBNETS
    from omnidr.images import build_images, docker_client

    client = docker_client()
    built = {b.name: b for b in build_images(["egress"])}
    lab = Lab(client, built["egress"].tag, built["base"].tag, tmp_path)
    try:
        net = lab.network("open")
        for subnet in secrets.SystemRandom().sample(SANDBOX_SUBNETS, 5):
            ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=str(subnet))])
            with contextlib.suppress(docker.errors.APIError):  # overlaps a network that holds it already
                inside = client.networks.create(f"omnidr-test-egress-inside-{lab.suffix}", driver="bridge",
                                                internal=True, labels=TEST_LABELS, ipam=ipam,
                                                options={"com.docker.network.bridge.inhibit_ipv4": "true"})
                break
        lab.networks.append(inside)
        origin_ca = lab.start_origin(net)
        inside.connect(lab.containers[-1], aliases=["inside.test"])
        lab.containers[-1].reload()
        inside_ip = lab.containers[-1].attrs["NetworkSettings"]["Networks"][inside.name]["IPAddress"]
        assert ipaddress.ip_address(inside_ip) in SANDBOX_POOL
        # origin.test's network is opened on purpose; the pool stays refused (it is not the web, whatever is allowed)
        web = ("--allow-net", lab.subnet(net), "--allow-net", str(SANDBOX_POOL))
        log = lab.start_proxy(net, "log", "--refuse-net", str(SANDBOX_POOL), *web, wait=False)
        intercept = lab.start_proxy(net, "intercept", "--refuse-net", str(SANDBOX_POOL), *web, "--upstream-ca",
                                    "/origin/origin.pem", mounts={"/origin": origin_ca.parent}, wait=False)
        for proxy in (log, intercept):
            inside.connect(proxy.container, aliases=[f"{proxy.alias}-inside"])  # a route there, which it must not use
            lab.wait_proxy(proxy)

        refused = ["http://inside.test:8080/by-name", f"http://{inside_ip}:8080/by-address",
                   "https://inside.test:8443/by-name", f"https://{inside_ip}:8443/by-address"]
        answers = lab.fetch(net, log, *refused, "http://origin.test:8080/allowed", "https://origin.test:8443/allowed",
                            trust=origin_ca)
        assert [a.status for a in answers[:2]] == [403, 403] and b"sandbox's own networks" in answers[0].body
        assert all(a.status is None and "Tunnel connection failed: 403" in a.error for a in answers[2:4])
        assert [a.status for a in answers[4:]] == [200, 200]
        events = log.events(lambda e: e.blocked, count=4)
        assert all(e.block_reason == "sandbox_network" and e.status == 403 for e in events)
        assert sorted((e.method, e.host, e.port) for e in events) == [
            ("CONNECT", inside_ip, 8443), ("CONNECT", "inside.test", 8443), ("GET", inside_ip, 8080),
            ("GET", "inside.test", 8080)]
        assert all(inside_ip in e.error and str(SANDBOX_POOL) in e.error for e in events)
        log.events(lambda e: e.host == "origin.test" and e.status == 200 and not e.blocked, count=2)

        answers = lab.fetch(net, intercept, "https://inside.test:8443/by-name", "http://inside.test:8080/by-name",
                            "https://origin.test:8443/allowed", trust=intercept.ca)
        assert answers[0].status is None and "Tunnel connection failed: 403" in answers[0].error
        assert [a.status for a in answers[1:]] == [403, 200]
        assert [(e.method, e.block_reason) for e in intercept.events(lambda e: e.blocked, count=2)] == [
            ("CONNECT", "sandbox_network"), ("GET", "sandbox_network")]
    finally:
        lab.close()
