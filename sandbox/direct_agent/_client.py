"""The one Chat Completions POST of the direct runner, with the standard library.

The runner sends a single request and never streams, so it needs no SDK: importing `openai` costs about 1.1 s of
CPU in the reference image, three times what the rest of the runner takes, and every question of a
multiple-choice run starts a fresh runner. The request is the documented one (`POST {base}/chat/completions`,
`Authorization: Bearer KEY`, a JSON body) to the attempt's gateway; the proxy variables the sandbox sets are
honoured as urllib reads them (NO_PROXY names the gateway, so the request goes to it directly).
"""

import json
import urllib.error
import urllib.request
from typing import Any


class ModelRequestError(Exception):
    """A failed request. `status_code` is the HTTP status (None when no answer came), `body` the parsed JSON
    answer when there was one, and `code` its `error.code`: the attributes `classify_failure` reads, named as
    the OpenAI SDK's errors name them."""

    def __init__(self, message: str, status_code: int | None = None, body: Any = None):
        super().__init__(message)
        self.status_code, self.body = status_code, body
        inner = body.get("error") if isinstance(body, dict) else None
        self.code = inner.get("code") if isinstance(inner, dict) else None


def chat_completion(base_url: str, api_key: str, payload: dict, timeout_s: float) -> dict:
    """POST `payload` to `{base_url}/chat/completions` and return the parsed reply; raise `ModelRequestError`."""
    url = base_url.rstrip("/") + "/chat/completions"
    request = urllib.request.Request(url, data=json.dumps(payload).encode("utf-8"), method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json", "Authorization": f"Bearer {api_key}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            raw = answer.read()
    except urllib.error.HTTPError as exc:
        text = exc.read().decode("utf-8", "replace")
        try:
            body = json.loads(text)
        except ValueError:
            body = None
        raise ModelRequestError(f"HTTP {exc.code} from {url}: {text[:500]}", exc.code, body) from None
    except (urllib.error.URLError, OSError) as exc:  # refused, reset, timed out: no answer
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        raise ModelRequestError(f"no answer from {url}: {reason}") from None
    try:
        reply = json.loads(raw)
    except ValueError:
        raise ModelRequestError(f"the answer from {url} is not JSON: {raw[:200]!r}", 200) from None
    if not isinstance(reply, dict):
        raise ModelRequestError(f"the answer from {url} is not a JSON object", 200, reply)
    return reply
