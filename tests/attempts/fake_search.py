"""A fake Brave-Search-API-compatible provider (standard library only), run in a container in tests.

Every request's path and X-Subscription-Token are printed to stdout as one JSON line, so a test can see
the key the egress proxy injected. Results: one page per query word, one in the benchmark's release
repository, which the search door must leave out, and one elsewhere on the same host.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urlsplit(self.path)
        print(json.dumps({"path": self.path, "token": self.headers.get("X-Subscription-Token")}), flush=True)
        if url.path != "/res/v1/web/search":
            body, status = {"error": "no such route"}, 404
        else:
            words = parse_qs(url.query).get("q", [""])[0].split()
            results = [{"url": f"https://www.example-{w}.org/", "title": f"All about {w}"} for w in words]
            results += [{"url": "https://github.com/marinero4972/OmniDR-Bench/blob/main/data/tasks.json",
                         "title": "The benchmark's own tasks"},  # on the release denylist
                        {"url": "https://github.com/example/pendant-notes", "title": "Pendant notes"}]
            body, status = {"type": "search", "web": {"results": results}}, 200
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


if __name__ == "__main__":
    server = ThreadingHTTPServer(("0.0.0.0", int(sys.argv[1])), Handler)
    print(json.dumps({"listening": True}), flush=True)
    server.serve_forever()
