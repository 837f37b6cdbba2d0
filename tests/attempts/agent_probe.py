"""A plain-program agent for sandbox tests (standard library only), run with `python3 -c`.

Each argument is an action; results go to /output/probe.json (kept even without a report):
  tcp:HOST:PORT   try a direct TCP connection
  get:URL         HTTP GET through the sandbox's proxy (HTTP_PROXY from the environment)
  chat:N          N chat-completion requests to the gateway (OPENAI_BASE_URL, OPENAI_API_KEY)
  chat-as:TOKEN   one chat-completion request with TOKEN instead of the attempt's own
  env:NAME        the value of environment variable NAME
  ca              the SHA-256 of the CA certificate the agent trusts (SSL_CERT_FILE), or None
  ca-pem          the CA certificate the agent trusts, as text
  tls-with:B64:URL  HTTPS GET through the proxy trusting only the PEM given base64-encoded (not the agent's CA)
  get-ip-of:NAME:PORT/PATH  HTTP GET through the proxy to the address NAME resolves to (its hosts file)
  scan:SECRET     look for SECRET in the environment and in every readable file
  sleep:S         sleep S seconds
  dns:NAME        resolve NAME with getaddrinfo (addresses or error, and how long it took)
  report          write a report: /output/report/index.html and a data.js with one timeline note
  skeleton        write the bare interface: index.html and a data.js with no note, finding or source
  exit:CODE       exit with CODE (after writing probe.json)
"""

import base64
import hashlib
import json
import os
import socket
import ssl
import sys
import time
import urllib.error
import urllib.request

results = []
code = 0


def record(action, **fields):
    results.append({"action": action, **fields})
    os.makedirs("/output", exist_ok=True)
    with open("/output/probe.json", "w") as f:
        json.dump(results, f)


for arg in sys.argv[1:]:
    kind, _, rest = arg.partition(":")
    if kind == "tcp":
        host, port = rest.rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), timeout=3).close()
            record(arg, connected=True)
        except OSError as exc:
            record(arg, connected=False, error=str(exc))
    elif kind == "get":
        try:
            with urllib.request.urlopen(rest, timeout=10) as r:
                record(arg, status=r.status, body=r.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError as exc:
            record(arg, status=exc.code, body=exc.read().decode("utf-8", "replace"))
        except OSError as exc:
            record(arg, status=None, error=str(exc))
    elif kind in ("chat", "chat-as"):
        statuses = []
        token = rest if kind == "chat-as" else os.environ["OPENAI_API_KEY"]
        for _ in range(int(rest) if kind == "chat" else 1):
            req = urllib.request.Request(
                os.environ["OPENAI_BASE_URL"] + "/chat/completions",
                data=json.dumps({"model": os.environ.get("OMNIDR_MODEL", "m"),
                                 "messages": [{"role": "user", "content": "hi"}]}).encode(),
                headers={"Content-Type": "application/json", "Authorization": "Bearer " + token},
            )
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    statuses.append({"status": r.status, "body": json.loads(r.read())})
            except urllib.error.HTTPError as exc:
                statuses.append({"status": exc.code, "body": exc.read().decode("utf-8", "replace")})
        record(arg, responses=statuses)
        if kind == "chat" and any(s["status"] != 200 for s in statuses):
            code = 3
    elif kind == "ca-pem":
        record(arg, pem=open(os.environ["SSL_CERT_FILE"]).read())
    elif kind == "tls-with":
        pem, _, url = rest.partition(":")
        context = ssl.create_default_context(cadata=base64.b64decode(pem).decode())
        opener = urllib.request.build_opener(urllib.request.ProxyHandler(), urllib.request.HTTPSHandler(context=context))
        try:
            with opener.open(url, timeout=10) as r:
                record("tls-with", url=url, status=r.status)
        except urllib.error.HTTPError as exc:
            record("tls-with", url=url, status=exc.code)
        except OSError as exc:
            record("tls-with", url=url, status=None, error=str(exc))
    elif kind == "get-ip-of":
        name, _, where = rest.partition(":")
        url = f"http://{socket.gethostbyname(name)}:{where}"
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                record(arg, url=url, status=r.status, body=r.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError as exc:
            record(arg, url=url, status=exc.code, body=exc.read().decode("utf-8", "replace"))
        except OSError as exc:
            record(arg, url=url, status=None, error=str(exc))
    elif kind == "env":
        record(arg, value=os.environ.get(rest))
    elif kind == "ca":
        path = os.environ.get("SSL_CERT_FILE")
        record(arg, sha256=hashlib.sha256(open(path, "rb").read()).hexdigest() if path else None)
    elif kind == "scan":
        needle = rest.encode()
        hits = [f"env:{k}" for k, v in os.environ.items() if rest in v]
        for root, dirs, files in os.walk("/"):
            if root.startswith(("/proc", "/sys", "/dev")):
                dirs[:] = []
                continue
            for name in files:
                path = os.path.join(root, name)
                try:
                    if os.path.getsize(path) < 20_000_000 and needle in open(path, "rb").read():
                        hits.append(path)
                except OSError:
                    pass
        try:
            if needle in open("/proc/1/environ", "rb").read():
                hits.append("/proc/1/environ")
        except OSError:
            pass
        record(arg, hits=hits)
    elif kind == "sleep":
        time.sleep(float(rest))
    elif kind == "dns":
        t0 = time.monotonic()
        try:
            found = sorted({a[4][0] for a in socket.getaddrinfo(rest, 80)})
            record(arg, addresses=found, seconds=time.monotonic() - t0)
        except OSError as exc:
            record(arg, error=str(exc), seconds=time.monotonic() - t0)
    elif kind in ("report", "skeleton"):
        os.makedirs("/output/report", exist_ok=True)
        with open("/output/report/index.html", "w") as f:
            f.write("<!DOCTYPE html><title>probe report</title><script src='data.js'></script><p>done</p>")
        notes = [] if kind == "skeleton" else [
            {"id": "s1", "start_s": 0, "end_s": 5, "title": "opening", "note": "what the video shows first"}]
        data = {"contract": "omnidr-report-1", "title": "probe", "language": "en", "query": "q", "overview": "o",
                "video": {"src": "video.mp4", "duration_s": 36}, "timeline": notes}
        with open("/output/report/data.js", "w") as f:
            f.write("window.DATA = " + json.dumps(data) + ";\n")
    elif kind == "exit":
        code = int(rest)
sys.exit(code)
