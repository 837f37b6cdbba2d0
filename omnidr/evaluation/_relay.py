"""A one-destination TCP relay: the evaluator container's only way out, to the judge endpoint.

Run as `python -m omnidr.evaluation._relay LISTEN_PORT TARGET_HOST TARGET_PORT` in a helper
container that sits on the evaluator's internal network and on an outside network. Bytes are
copied both ways unchanged, so TLS to the judge is end to end; nothing else can be reached.
"""

import asyncio
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(1 << 16):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        try:
            writer.close()
        except RuntimeError:
            pass


async def serve(listen_port: int, host: str, port: int) -> None:
    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            upstream_r, upstream_w = await asyncio.wait_for(asyncio.open_connection(host, port), 30)
        except (TimeoutError, OSError) as exc:
            print(f"relay: cannot reach {host}:{port}: {exc}", file=sys.stderr, flush=True)
            client_w.close()
            return
        await asyncio.gather(_pipe(client_r, upstream_w), _pipe(upstream_r, client_w))

    server = await asyncio.start_server(handle, "0.0.0.0", listen_port)
    print(f"relay: 0.0.0.0:{listen_port} -> {host}:{port}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> None:
    if len(argv) != 3:
        sys.exit("usage: python -m omnidr.evaluation._relay LISTEN_PORT TARGET_HOST TARGET_PORT")
    asyncio.run(serve(int(argv[0]), argv[1], int(argv[2])))


if __name__ == "__main__":
    main(sys.argv[1:])
