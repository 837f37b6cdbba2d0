"""Fixtures for evaluator tests: one Chromium shared by the browser tests, the fake judge."""

import asyncio
import threading

import pytest
from fake_judge import FakeJudge


class BrowserThread:
    """A started `ChromiumBrowser` living on its own event loop thread; `run` awaits a coroutine
    factory there, so sync tests can share one browser."""

    def __init__(self) -> None:
        from omnidr.evaluation import ChromiumBrowser

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.browser = ChromiumBrowser()
        self.run(lambda b: b.start(), timeout=120)

    def run(self, factory, timeout: float = 180):
        async def call():
            return await factory(self.browser)

        return asyncio.run_coroutine_threadsafe(call(), self.loop).result(timeout)

    def close(self) -> None:
        self.run(lambda b: b.close(), timeout=60)

        async def drain() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(drain(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="session")
def chromium():
    b = BrowserThread()
    yield b
    b.close()


@pytest.fixture
def fake_judge():
    server = FakeJudge().start()
    yield server
    server.stop()
