"""`omnidr eval --web record|replay` with the search door, end to end: the agents' "live web" is a fake web
container on the test's own internal Docker network (the demo's pages under their hosts, and a Brave-style
search over them), its HTTPS certificate trusted by the proxy through --upstream-ca. Record saves what the
agent fetched and searched as a corpus; `omnidr snapshot add-web` puts it into a snapshot that has no web of
its own; replay of that snapshot serves every page and search again, offline, without the search key."""

import json
import time
import uuid
from pathlib import Path

import pytest
from testkit import DEMO, ROOT, run_cli

pytestmark = [pytest.mark.docker, pytest.mark.browser, pytest.mark.images("reference")]
TASK = "pendant-lamp-safety"
SYSTEM = "reference-full-scripted"


def _certificate(folder: Path, hosts: list[str]) -> tuple[Path, Path]:
    """A self-signed certificate for every host of the fake web (its own CA) and its key, readable by the
    containers' users."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake web")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in hosts]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    folder.mkdir()
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    for f in (cert_file, key_file):
        f.chmod(0o644)
    return cert_file, key_file


def _events(system: Path) -> list[dict]:
    return [json.loads(line) for p in sorted(system.glob(f"attempts/{TASK}/*/logs/network.jsonl"))
            for line in p.read_text().splitlines() if line.strip()]


def test_record_the_live_web_with_the_search_door_then_replay_it_from_a_snapshot(tmp_path, demo_copy, client,
                                                                                     images):
    pages = json.loads((DEMO / "web" / "corpus.json").read_text())["pages"]
    hosts = sorted({p["url"].split("/")[2] for p in pages})
    cert, _ = _certificate(tmp_path / "tls", hosts)
    key = "search-key-" + uuid.uuid4().hex
    net = client.networks.create(f"omnidr-test-web-{uuid.uuid4().hex[:8]}", driver="bridge", internal=True,
                                 labels={"org.omnidr.test": "1"})
    web = client.containers.create(
        images["base"], ["python3", "/srv/fake_web.py", "/web", "/tls/cert.pem", "/tls/key.pem"],
        labels={"org.omnidr.test": "1"},
        volumes={str(ROOT / "tests" / "pipeline" / "fake_web.py"): {"bind": "/srv/fake_web.py", "mode": "ro"},
                 str(DEMO / "web"): {"bind": "/web", "mode": "ro"}, str(cert.parent): {"bind": "/tls", "mode": "ro"}},
        network=net.name, networking_config={net.name: client.api.create_endpoint_config(aliases=[*hosts, "search"])})
    try:
        web.start()
        deadline = time.monotonic() + 60
        while b'"listening"' not in web.logs(stdout=True, stderr=False):
            assert time.monotonic() < deadline, web.logs().decode()[-2000:]
            time.sleep(0.1)
        door = ["--search-door", "brave@http://search", "--search-key-env", "OMNIDR_TEST_SEARCH_KEY"]
        recorded = tmp_path / "recorded"
        net.reload()  # the test's web is on a private network: opened to the proxy on purpose
        web_net = ["--allow-net", net.attrs["IPAM"]["Config"][0]["Subnet"]]
        r = run_cli("eval", "--snapshot", DEMO, "--task", TASK, "--web", "record", *door, *web_net, "--outside-network", net.name,
                    "--upstream-ca", cert, "--runs-root", recorded, env={"OMNIDR_TEST_SEARCH_KEY": key}, timeout=900)
        seen = [json.loads(line) for line in web.logs(stdout=True, stderr=False).decode().splitlines()[1:]]
    finally:
        web.remove(force=True)
        net.remove()
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    [root] = recorded.iterdir()
    system = root / SYSTEM
    config = json.loads((system / "eval.json").read_text())
    assert config["web"] == "record" and config["search_door"]["base_url"] == "http://search"
    board = json.loads((root / "leaderboard.json").read_text())
    assert board["web_policies"] == {"scripted-demo / reference / full / default": "live web (recorded), search door "
                                     "brave@http://search, provider-side tools denylist"}

    # the agent searched the live door (key injected by the proxy) and fetched live pages
    searches = [s for s in seen if s["host"] == "search"]
    fetched = {f"https://{s['host']}{s['path']}" for s in seen if s["host"] != "search"} & {p["url"] for p in pages}
    assert searches and {s["token"] for s in searches} == {key}
    assert len(fetched) >= 5, seen
    live = [e for e in _events(system) if e.get("url") and e.get("status") == 200]
    assert live and {e["source"] for e in live} == {"upstream"}

    # the corpus it recorded: every page it fetched and every search answer, never the key
    corpus = system / "web"
    got = {p["url"] for p in json.loads((corpus / "corpus.json").read_text())["pages"]}
    assert fetched <= got and any(u.startswith("http://search/res/v1/web/search?") for u in got)
    assert not [p for p in corpus.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    assert f"omnidr snapshot add-web SNAPSHOT {corpus}" in r.stdout.replace("\n", "")

    # a snapshot whose web lacks every page the agent saw gets them back from the recording, each cited page
    # where its facts say it is, and replays them offline: no fake web, no key
    bare = demo_copy
    (bare / "MANIFEST.json").unlink()
    index = bare / "web" / "corpus.json"
    kept = [p for p in json.loads(index.read_text())["pages"] if p["url"] not in got]
    for page in json.loads(index.read_text())["pages"]:
        if page["url"] in got:
            (bare / "web" / page["path"]).unlink()
    index.write_text(json.dumps({"pages": kept}, indent=2))
    assert run_cli("snapshot", "validate", "--no-videos", bare).returncode == 1  # its facts cite missing pages
    added = run_cli("snapshot", "add-web", bare, corpus)
    assert added.returncode == 0, added.stdout + added.stderr
    assert f"added {len(got)} page(s); 0 already in the snapshot kept" in added.stdout
    again = run_cli("snapshot", "add-web", bare, corpus)
    assert f"added 0 page(s); {len(got)} already in the snapshot kept" in again.stdout
    assert run_cli("snapshot", "validate", "--no-videos", bare).returncode == 0

    replayed = tmp_path / "replayed"
    r2 = run_cli("eval", "--snapshot", bare, "--task", TASK, "--search-door", "brave@http://search", "--runs-root", replayed,
                 env={"OMNIDR_TEST_SEARCH_KEY": None}, timeout=900)
    assert r2.returncode == 0, r2.stdout[-4000:] + r2.stderr[-3000:]
    [root2] = replayed.iterdir()
    served = [e for e in _events(root2 / SYSTEM) if e.get("url")]
    assert served and "upstream" not in {e["source"] for e in served}  # offline
    assert {(e["status"], e["source"]) for e in served if e["url"] in got} == {(200, "replay")}, served
    assert any(e["url"].startswith("http://search/res/v1/web/search?") for e in served)
    assert json.loads((root2 / SYSTEM / "eval.json").read_text())["web"] == "replay"
