"""A fake OpenAI-compatible model API (standard library only), run in a container in tests.

Environment: FAIL_FIRST=N answers the first N chat requests with 503. Every request's
Authorization header and body are printed to stdout as one JSON line, so a test can see
what reached the upstream (for example the real key the gateway injected).
"""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FAIL_FIRST = int(os.environ.get("FAIL_FIRST", "0"))
USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
seen = {"chat": 0}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, status, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        print(json.dumps({"path": self.path, "authorization": self.headers.get("Authorization"), "body": body}), flush=True)
        if self.path != "/v1/chat/completions":
            return self._send(404, {"error": {"message": "not found"}})
        seen["chat"] += 1
        if seen["chat"] <= FAIL_FIRST:
            return self._send(503, {"error": {"message": "temporarily overloaded", "type": "server_error"}})
        message = {"role": "assistant", "content": "fake answer"}
        if body.get("tools"):
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "noop", "arguments": "{}"}}]}
        self._send(200, {"id": "chatcmpl-1", "object": "chat.completion", "model": body.get("model", "fake"),
                         "choices": [{"index": 0, "message": message, "finish_reason": "stop"}], "usage": USAGE})


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 9000
    server = ThreadingHTTPServer(("0.0.0.0", port), Handler)
    print(json.dumps({"listening": port}), flush=True)  # the fixture waits for this line
    server.serve_forever()
