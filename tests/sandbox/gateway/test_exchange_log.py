"""gateway.jsonl keeps large inline media as their hash and size: a multiple-choice request carries a video's frames
and audio (megabytes per attempt), which the log must not copy; small parts, text and secrets behave as before."""

import base64
import hashlib
import json
from datetime import UTC, datetime

from sandbox.gateway._exchange import ExchangeLog
from sandbox.models import GatewayExchange


def test_large_images_and_audio_are_logged_by_hash_and_the_rest_as_sent(tmp_path):
    frame, audio, icon = b"\x89PNG" + bytes(range(256)) * 40, b"RIFF" + b"\0" * 30_000, b"GIF89a"
    b64 = {k: base64.b64encode(v).decode() for k, v in (("frame", frame), ("audio", audio), ("icon", icon))}
    body = {"model": "m", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "[00:12.5] key sk-secret-123"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64['frame']}"}},
        {"type": "image_url", "image_url": {"url": f"data:image/gif;base64,{b64['icon']}"}},
        {"type": "input_audio", "input_audio": {"data": b64["audio"], "format": "wav"}}]}]}
    now = datetime.now(UTC)
    log = ExchangeLog(tmp_path / "gateway.jsonl", ["sk-secret-123"])
    log.write(GatewayExchange(seq=1, started_at=now, finished_at=now, latency_s=0.0, method="POST",
                              path="/v1/chat/completions", route="chat_completions", status=200, outcome="ok",
                              request_body=body))
    log.close()
    line = (tmp_path / "gateway.jsonl").read_text()
    assert len(line) < 3000 and b64["frame"] not in line and b64["audio"] not in line
    parts = json.loads(line)["request_body"]["messages"][0]["content"]
    assert parts[0]["text"] == "[00:12.5] key [REDACTED]"
    assert parts[1]["image_url"]["url"] == (f"data:image/png;omitted;sha256={hashlib.sha256(frame).hexdigest()};"
                                            f"bytes={len(frame)}")
    assert parts[2]["image_url"]["url"] == f"data:image/gif;base64,{b64['icon']}"  # small: kept as sent
    assert parts[3]["input_audio"] == {"data": f"omitted;sha256={hashlib.sha256(audio).hexdigest()};"
                                               f"bytes={len(audio)}", "format": "wav"}
    assert body["messages"][0]["content"][1]["image_url"]["url"].endswith(b64["frame"])  # the request itself intact
