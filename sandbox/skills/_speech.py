"""Speech-to-text for a video window without subtitles: ffmpeg cuts the window's audio (16 kHz mono WAV)
and the OpenAI-compatible `/v1/audio/transcriptions` of the model gateway transcribes it. The gateway
injects the real key, counts the request against the attempt's budget and logs it in gateway.jsonl; the
agent holds only its dummy token. Standard library only (multipart written by hand)."""

import json
import secrets
import subprocess
import urllib.error
import urllib.request

from ._media import MediaError

DEFAULT_MODEL = "whisper-1"


def window_audio(video: str, start_s: float, end_s: float) -> bytes:
    """The audio of [start_s, end_s) as 16 kHz mono 16-bit WAV."""
    cmd = ["ffmpeg", "-v", "error", "-nostdin", "-ss", f"{start_s:.3f}", "-t", f"{max(0.0, end_s - start_s):.3f}",
           "-i", video, "-vn", "-ac", "1", "-ar", "16000", "-f", "wav", "-"]
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MediaError(f"ffmpeg failed: {exc}") from None
    if done.returncode != 0 or len(done.stdout) <= 44:  # a WAV header and no samples: no audio track
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no audio"]
        raise MediaError(f"the window's audio could not be read: {tail[0]}")
    return done.stdout


def _multipart(fields: dict[str, str], filename: str, data: bytes, content_type: str) -> tuple[bytes, str]:
    boundary = "omnidr-" + secrets.token_hex(12)
    out = bytearray()
    for name, value in fields.items():
        out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").encode()
    out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n"
            f"Content-Type: {content_type}\r\n\r\n").encode()
    out += data + f"\r\n--{boundary}--\r\n".encode()
    return bytes(out), f"multipart/form-data; boundary={boundary}"


def transcribe(video: str, start_s: float, end_s: float, base_url: str, key: str, model: str = DEFAULT_MODEL,
               timeout_s: float = 600.0) -> list[dict]:
    """Cues [{start_s, end_s, text}] of the window's speech, with absolute times. Raises RuntimeError with
    the endpoint's own message when the request fails (a spent budget, no OpenAI-compatible upstream)."""
    body, ctype = _multipart({"model": model, "response_format": "verbose_json",
                              "timestamp_granularities[]": "segment"},
                             "window.wav", window_audio(video, start_s, end_s), "audio/wav")
    req = urllib.request.Request(base_url.rstrip("/") + "/audio/transcriptions", data=body, method="POST",
                                 headers={"Content-Type": ctype, "Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            answer = json.loads(r.read())
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read()).get("error", {}).get("message") or exc.reason
        except ValueError:
            message = exc.reason
        raise RuntimeError(f"speech-to-text failed ({exc.code}): {message}") from None
    except (OSError, ValueError) as exc:
        raise RuntimeError(f"speech-to-text failed: {exc}") from None
    segments = answer.get("segments") or []
    if not segments and answer.get("text"):  # a plain `json` answer: one cue for the window
        segments = [{"start": 0.0, "end": end_s - start_s, "text": answer["text"]}]
    return [{"start_s": round(start_s + float(s.get("start", 0)), 3), "end_s": round(start_s + float(s.get("end", 0)), 3),
             "text": str(s.get("text", "")).strip()} for s in segments if str(s.get("text", "")).strip()]
