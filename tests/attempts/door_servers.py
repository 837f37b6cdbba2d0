"""Servers for the door tests, run in a container of the base image (standard library only).

  canary PORT...        accept TCP connections on each PORT; print one JSON line per connection accepted
  redirect PORT TARGET  answer every GET with 302 to TARGET (an allowed page that sends the agent elsewhere)
Each prints {"listening": true} once its sockets are open.
"""

import http.server
import json
import socket
import sys
import threading


def canary(ports: list[int]) -> None:
    def serve(srv: socket.socket) -> None:
        while True:
            conn, peer = srv.accept()
            print(json.dumps({"accepted": srv.getsockname()[1], "from": peer[0]}), flush=True)
            conn.close()

    for port in ports:
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("0.0.0.0", port))
        srv.listen(16)
        threading.Thread(target=serve, args=(srv,), daemon=True).start()
    print(json.dumps({"listening": True}), flush=True)
    threading.Event().wait()


def redirect(port: int, target: str) -> None:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the standard library's name
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = http.server.ThreadingHTTPServer(("0.0.0.0", port), Handler)
    print(json.dumps({"listening": True}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    if sys.argv[1] == "canary":
        canary([int(p) for p in sys.argv[2:]])
    else:
        redirect(int(sys.argv[2]), sys.argv[3])
