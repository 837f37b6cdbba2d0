"""What does the model gateway add to each model request?

Starts the fake OpenAI-compatible API of the tests (tests/sandbox/gateway/fake_model_api.py) in one
process and the gateway (`python -m sandbox.gateway`, logging every exchange with bodies) in
another, then, from this process, alternates identical requests sent to the fake API directly
and through the gateway:

1. non-streamed chat completions, small body: latency p50/p99 direct, through the gateway, added;
2. the same with a 1 MiB request body (an agent sending video frames): added latency;
3. streamed chat completions (about 25 events, 10 ms apart): time to first byte and to the
   end of the stream, direct and through the gateway (which asks for, counts and hides the
   usage chunk).

One keep-alive connection per path, requests one at a time. Prints milliseconds; asserts nothing.

    .venv/bin/python benchmarks/gateway_latency.py [--requests N] [--large N] [--streams N]
"""

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
KEY, TOKEN, ADMIN = "sk-bench-real-key-0123456789", "bench-agent-token", "bench-admin-token"


def serve_fake() -> None:
    """Child mode: run the fake API until stdin closes; print its base URL first."""
    sys.path.insert(0, str(ROOT / "tests" / "sandbox" / "gateway"))
    from fake_model_api import FakeModelApi

    async def main() -> None:
        api = FakeModelApi("openai", KEY, pieces=[f"token{i} " for i in range(20)], event_pause_s=0.01)
        print(await api.start(), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await api.stop()

    asyncio.run(main())


def start_fake() -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve-fake"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    return process, process.stdout.readline().strip()


def start_gateway(upstream: str, folder: Path) -> tuple[subprocess.Popen, str]:
    config = {
        "host": "127.0.0.1",
        "port": 0,
        "agent_token": TOKEN,
        "admin_token": ADMIN,
        "upstreams": {"openai": {"base_url": upstream, "api_key": KEY}},
        "budget": {"max_iterations": 10_000_000},
        "log_path": str(folder / "gateway.jsonl"),
    }
    (folder / "gateway.json").write_text(json.dumps(config), "utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "sandbox.gateway", "--config", str(folder / "gateway.json")],
        stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    banner = process.stderr.readline()
    port = int(banner.split("listening on 127.0.0.1:")[1].split()[0])
    return process, f"http://127.0.0.1:{port}/v1"


def chat_body(stream: bool, padding_bytes: int = 0, include_usage: bool = False) -> bytes:
    messages: list[dict] = [{"role": "user", "content": "Summarise the video."}]
    if padding_bytes:
        image = {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64," + "A" * padding_bytes}}
        messages.append({"role": "user", "content": [image]})
    body: dict = {"model": "bench-model", "messages": messages, "stream": stream}
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    return json.dumps(body).encode()


async def one_request(session: aiohttp.ClientSession, url: str, auth: str, body: bytes) -> float:
    headers = {"Authorization": f"Bearer {auth}", "Content-Type": "application/json"}
    start = time.perf_counter()
    async with session.post(url + "/chat/completions", data=body, headers=headers) as response:
        await response.read()
        assert response.status == 200, response.status
    return time.perf_counter() - start


async def one_stream(session: aiohttp.ClientSession, url: str, auth: str, body: bytes) -> tuple[float, float]:
    headers = {"Authorization": f"Bearer {auth}", "Content-Type": "application/json"}
    start = time.perf_counter()
    async with session.post(url + "/chat/completions", data=body, headers=headers) as response:
        assert response.status == 200, response.status
        await response.content.readany()
        first = time.perf_counter() - start
        while await response.content.readany():
            pass
    return first, time.perf_counter() - start


async def measure(direct: str, gateway: str, requests: int, large: int, streams: int) -> dict[str, dict[str, np.ndarray]]:
    results: dict[str, dict[str, list[float]]] = {}
    async with aiohttp.ClientSession() as to_fake, aiohttp.ClientSession() as to_gateway:
        paths = {"direct": (to_fake, direct, KEY), "gateway": (to_gateway, gateway, TOKEN)}
        for session, url, auth in paths.values():  # warm up connections and code paths
            for _ in range(20):
                await one_request(session, url, auth, chat_body(False))

        async def run(name: str, count: int, body: bytes) -> None:
            table = results.setdefault(name, {"direct": [], "gateway": []})
            for _ in range(count):
                for path, (session, url, auth) in paths.items():
                    table[path].append(await one_request(session, url, auth, body))

        await run("small", requests, chat_body(False))
        await run("1 MiB body", large, chat_body(False, padding_bytes=1 << 20))
        first = results.setdefault("stream first byte", {"direct": [], "gateway": []})
        whole = results.setdefault("stream end", {"direct": [], "gateway": []})
        # The gateway asks the upstream for the usage chunk (and hides it from the agent); the direct
        # request asks for it itself, so that the upstream sends the same events on both paths.
        bodies = {"direct": chat_body(True, include_usage=True), "gateway": chat_body(True)}
        for _ in range(streams):
            for path, (session, url, auth) in paths.items():
                ttfb, total = await one_stream(session, url, auth, bodies[path])
                first[path].append(ttfb)
                whole[path].append(total)
    return {name: {path: np.array(values) * 1000 for path, values in table.items()} for name, table in results.items()}


def report(results: dict[str, dict[str, np.ndarray]]) -> None:
    print(f"{'':20} {'direct p50':>11} {'p99':>8} {'gateway p50':>12} {'p99':>8} {'added p50':>10} {'p99':>8}   (ms, n)")
    for name, table in results.items():
        d50, d99 = np.percentile(table["direct"], [50, 99])
        g50, g99 = np.percentile(table["gateway"], [50, 99])
        print(
            f"{name:20} {d50:11.3f} {d99:8.3f} {g50:12.3f} {g99:8.3f} {g50 - d50:10.3f} {g99 - d99:8.3f}"
            f"   n={len(table['direct'])}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="small non-streamed requests per path")
    parser.add_argument("--large", type=int, default=100, help="1 MiB requests per path")
    parser.add_argument("--streams", type=int, default=200, help="streamed requests per path")
    parser.add_argument("--serve-fake", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_fake:
        serve_fake()
        return
    print(f"python {platform.python_version()}, aiohttp {aiohttp.__version__}, {platform.machine()}, {os.cpu_count()} CPUs")
    fake, direct = start_fake()
    with tempfile.TemporaryDirectory() as folder:
        gateway, through = start_gateway(direct, Path(folder))
        try:
            results = asyncio.run(measure(direct, through, args.requests, args.large, args.streams))
        finally:
            gateway.terminate()
            gateway.wait(timeout=30)
            fake.stdin.close()
            fake.wait(timeout=30)
        log_mb = (Path(folder) / "gateway.jsonl").stat().st_size / 1e6
    report(results)
    print(f"gateway.jsonl written during the run: {log_mb:.1f} MB")


if __name__ == "__main__":
    main()
