"""A stand-in for the live web (standard library only), run in a container on a test's own Docker network.

It serves the pages of a corpus folder (`corpus.json` + files, the snapshot `web/` format) under their hosts,
which the test gives the container as network aliases, and a Brave-Search-API-compatible search on the host
`search` over the same pages (query words found in a page's title or URL, most first). Every request is
printed as one JSON line (host, path, the X-Subscription-Token the egress proxy injected).

    python3 fake_web.py CORPUS_FOLDER [CERT KEY]

HTTP on port 80; with a certificate (for every host) and its key, HTTPS on port 443 as well.
"""

import json
import re
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

FOLDER = Path(sys.argv[1])
PAGES = json.loads((FOLDER / "corpus.json").read_text("utf-8"))["pages"]
BY_PLACE = {}
for _page in PAGES:
    _url = urlsplit(_page["url"])
    BY_PLACE[(_url.hostname, (_url.path or "/") + (f"?{_url.query}" if _url.query else ""))] = _page


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def search(query: str, count: int) -> list[dict]:
    want = _words(query)
    scored = [(len(want & _words(p["title"] + " " + p["url"])), p["url"], p) for p in PAGES]
    return [{"url": p["url"], "title": p["title"]} for n, _, p in sorted(scored, key=lambda s: (-s[0], s[1])) if n][:count]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        host = (self.headers.get("Host") or "").split(":")[0].lower()
        print(json.dumps({"host": host, "path": self.path, "token": self.headers.get("X-Subscription-Token")}),
              flush=True)
        url = urlsplit(self.path)
        if host == "search":
            if not url.path.startswith("/res/v1/"):
                return self._send(404, "application/json", b'{"error": "no such route"}')
            query = parse_qs(url.query)
            results = search(query.get("q", [""])[0], int(query.get("count", ["8"])[0]))
            body = {"type": "search", "web": {"results": results}} if url.path.endswith("/web/search") else {
                "type": "search", "results": results}
            return self._send(200, "application/json", json.dumps(body).encode())
        page = BY_PLACE.get((host, self.path))
        if page is None:
            return self._send(404, "text/html; charset=utf-8", b"<title>Not found</title>not found")
        self._send(200, page["content_type"], (FOLDER / page["path"]).read_bytes())


if __name__ == "__main__":
    servers = [ThreadingHTTPServer(("0.0.0.0", 80), Handler)]
    if len(sys.argv) > 3:
        secure = ThreadingHTTPServer(("0.0.0.0", 443), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[2], sys.argv[3])
        secure.socket = context.wrap_socket(secure.socket, server_side=True)
        servers.append(secure)
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    print(json.dumps({"listening": True}), flush=True)
    threading.Event().wait()
