"""Playwright (Python) drives Debian's Chromium: the pair this evaluator is pinned to works.

Playwright cannot download its own browsers here, so the evaluator launches the system Chromium
through `executable_path`. This test proves the pair: launch headless, run script, render,
decode H.264 video and play it, take a screenshot.
"""

import asyncio
import re
import subprocess

import pytest
from eval_helpers import GOOD

pytestmark = pytest.mark.browser


def test_playwright_drives_the_system_chromium(tmp_path):
    from playwright.async_api import async_playwright

    from omnidr.evaluation import chromium_path

    path = chromium_path()
    reported = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    major = re.search(r"(\d+)\.\d+\.\d+\.\d+", reported).group(1)

    async def go():
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=path, headless=True,
                                              args=["--autoplay-policy=no-user-gesture-required"])
            page = await browser.new_page()
            await page.goto(GOOD.joinpath("index.html").as_uri())
            title = await page.title()
            video = await page.evaluate("""async () => {
                const v = document.getElementById('source-video');
                v.muted = true;
                await v.play();
                const t0 = v.currentTime;
                await new Promise((r) => setTimeout(r, 600));
                return {t0, t1: v.currentTime, h264: v.canPlayType('video/mp4; codecs="avc1.42E01E"'), error: v.error};
            }""")
            shot = await page.screenshot()
            version = browser.version
            await browser.close()
            return title, video, shot, version

    title, video, shot, version = asyncio.run(go())
    assert version.split(".")[0] == major, f"Playwright drove Chromium {version}, the binary says {reported}"
    assert title.startswith("Hanging a 6.8 kg glass pendant")
    assert video["h264"] == "probably" and video["error"] is None
    assert video["t1"] > video["t0"], "the source video did not play"
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 10_000
