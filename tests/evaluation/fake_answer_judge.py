"""A fake OpenAI-compatible answer judge on loopback (the server half of `FakeJudge`, another `_chat`).

It reads the four inputs of App. C.4 from the user message (a JSON object) and calls an answer correct when the
reference answer, case and spaces folded, occurs in the candidate and the execution did not fail. `mode` picks how it answers every request:

  "ok"      the structured answer {correct, confidence, reason}
  "plain"   the same object inside prose, as an endpoint that ignores the schema would write it
  "503" ... that HTTP status (an outage)

`judged` lists the (reference, candidate) pairs it was asked about, in order.
"""

import json

from aiohttp import web
from fake_judge import FakeJudge


def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


class FakeAnswerJudge(FakeJudge):
    def __init__(self) -> None:
        super().__init__()
        self.mode = "ok"
        self.judged: list[tuple[str, str]] = []

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        with self._lock:
            self.requests.append({"body": body, "auth": request.headers.get("Authorization")})
        if self.mode.isdigit():
            return web.json_response({"error": {"message": f"fake status {self.mode}", "type": "fake"}},
                                     status=int(self.mode))
        given = json.loads(body["messages"][1]["content"])
        reference, candidate = given["reference_answer"], given["candidate_answer"]
        self.judged.append((reference, candidate))
        # App. C.4's rules as a model applies them: a failed execution is incorrect; else the reference must be stated
        failed = given["execution_status"]["execution_error"]
        correct = not failed and _fold(reference) in _fold(candidate)
        verdict = {"correct": correct, "confidence": 0.9,
                   "reason": "the reference is stated" if correct else "the candidate differs from the reference"}
        content = json.dumps(verdict)
        if self.mode == "plain":
            content = f"Here is my decision.\n```json\n{content}\n```\nI hope this helps."
        return web.json_response({
            "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "fake-answer-judge",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop",
                         "logprobs": None}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 20, "total_tokens": 140},
        })
