"""OpenDS-World's context compaction (paper 002, App. C.2.2 and C.2.1), applied to the chat messages before each
model request of a short-answer task.

- The `keep_observations` (4) most recent tool observations (the `tool` messages) are kept whole.
- In every older one, text content is cut to `truncate_chars` (2,000) characters, and a search tool's result list
  (`results`) keeps only its first `search_results_kept` (2) entries; other fields (numbers, flags, keys, a short
  URL) are unaffected. A JSON observation stays JSON: the cut applies to each of its strings.
- Images beyond `image_limit` (counted over the whole conversation) are replaced by omission markers, oldest first.

A pure, deterministic function: the agent keeps the full conversation and compacts a copy for each request, so
the same conversation always gives the same request. Messages it does not change are passed through as they are.
"""

import json
from typing import Any

from sandbox.models import Compaction

CONTEXT_HANDLING = "paper-compaction"
"""How the reference agent manages its context in a short-answer task (recorded in config.json)."""

SEARCH_RESULT_FIELDS = ("results",)
"""Fields of a search tool's observation that hold its result list."""

IMAGE_PARTS = ("image_url", "input_image", "image")


def cut_text(text: str, limit: int) -> str:
    """`text` cut to its first `limit` characters, with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [... {len(text) - limit} more characters cut by context compaction]"


def omission_marker(limit: int) -> dict[str, str]:
    return {"type": "text", "text": f"[image omitted: the context keeps the {limit} most recent images]"}


def _is_search(tool: str | None) -> bool:
    return bool(tool) and "search" in str(tool)


def _compact_value(value: Any, settings: Compaction, search: bool) -> Any:
    if isinstance(value, str):
        return cut_text(value, settings.truncate_chars)
    if isinstance(value, list):
        return [_compact_value(v, settings, search) for v in value]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if search and key in SEARCH_RESULT_FIELDS and isinstance(item, list):
                item = item[:settings.search_results_kept]
            out[key] = _compact_value(item, settings, search)
        return out
    return value


def _compact_text(text: str, settings: Compaction, search: bool) -> str:
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return cut_text(text, settings.truncate_chars)
    if not isinstance(value, (dict, list)):
        return cut_text(text, settings.truncate_chars)
    compacted = _compact_value(value, settings, search)
    return text if compacted == value else json.dumps(compacted, ensure_ascii=False)


def _compact_observation(message: dict, settings: Compaction, tool: str | None) -> dict:
    content = message.get("content")
    search = _is_search(tool)
    if isinstance(content, str):
        new: Any = _compact_text(content, settings, search)
    elif isinstance(content, list):
        new = [{**part, "text": _compact_text(part["text"], settings, search)}
               if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
               else part for part in content]
    else:
        return message
    return message if new == content else {**message, "content": new}


def _omit_images(messages: list[dict], limit: int) -> list[dict]:
    places = [(m, p) for m, message in enumerate(messages) if isinstance(message.get("content"), list)
              for p, part in enumerate(message["content"]) if isinstance(part, dict) and part.get("type") in IMAGE_PARTS]
    excess = len(places) - limit
    if excess <= 0:
        return messages
    out = list(messages)
    for m, p in places[:excess]:  # the oldest images go first
        parts = list(out[m]["content"])
        parts[p] = omission_marker(limit)
        out[m] = {**out[m], "content": parts}
    return out


def compact_messages(messages: list[dict], settings: Compaction) -> list[dict]:
    """The conversation to send: older tool observations compacted, images over the limit omitted (see the
    module docstring). `messages` is not changed."""
    names = {call.get("id"): (call.get("function") or {}).get("name")
             for message in messages if message.get("role") == "assistant"
             for call in message.get("tool_calls") or [] if isinstance(call, dict)}
    observations = [i for i, message in enumerate(messages) if message.get("role") == "tool"]
    older = set(observations[:max(0, len(observations) - settings.keep_observations)])
    out = [_compact_observation(message, settings, names.get(message.get("tool_call_id"))) if i in older else message
           for i, message in enumerate(messages)]
    return _omit_images(out, settings.image_limit)
