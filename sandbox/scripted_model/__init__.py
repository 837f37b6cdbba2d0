"""The scripted model: the offline stand-in for a model in demos and tests. It serves OpenAI chat
completions (the reference agent's function-calling scripts, below), and Anthropic Messages and OpenAI
Responses (shell episodes that drive the real Claude Code and Codex CLIs; see `_episodes`).

Standard library only. `python -m sandbox.scripted_model --port 9000 [--scripts DIR]`.

A script (`scripts/<task_id>.json`) is the model's side of one conversation:

    {"task": "<task id>", "match": "<text found in the first user message, e.g. the video URL>",
     "model": "scripted-demo",
     "steps": [{"content": "...", "tool_calls": [{"id": "probe", "name": "probe_video", "arguments": {}}]},
               ...,
               {"content": "final answer"}]}

The server is stateless: the answer to a request is step N, where N is the number of assistant messages
already in the request. So a re-sent request (gateway retry) gets the same answer, and parallel
conversations do not mix. Arguments may refer to what the tools returned earlier in the conversation:
`{"$ref": "<tool call id>.<path>"}` (path parts split on dots; numbers index lists) is replaced by that
value of the JSON tool result. If the value does not exist (the tool failed or was not offered), the
nearest enclosing object inside a list is dropped, or else the value becomes null. `{"$join": [...]}`
concatenates texts, leaving out a missing part. `{"$given": REF, "value": V}` is V once the tool call REF
names has returned it (what the model learned from a tool), and missing before. `{"$brief": "open_questions", "prefix": P}` is P and the
open questions of the evidence brief in the instruction (calibration's R3; see sandbox.models
OPEN_QUESTION_TAG), and missing when the instruction has no brief. Tool calls to tools
the request does not offer are left out, and steps left with nothing to do are skipped, so one script
serves every capability level. Every answer carries `usage` (about 4 characters a token).

A script (or shell episode) may also carry `finalization`, its answer to the finalization stage of a short-answer
task (the gateway's tool-free request ending with `sandbox.models.FINAL_ANSWER_PROMPT`), and `finalization_first`,
the first request's answer only (a text, `""` for an empty one, or `{"content", "tool_calls", "truncated"}`), to
exercise the stage's rejection path; they are answered in all three APIs (see `_finalization`).

Both kinds of script are generated from the demo snapshot by `build_demo_scripts`, and those of the OpenDS-World
demo (snapshots/demo-opends, short answers) by `build_opends_demo_scripts`; they demonstrate the machinery and
are not a model's work.
"""

from ._finalization import finalization_answer, is_finalization
from ._server import Script, answer, load_scripts, make_handler, serve

__all__ = ["Script", "answer", "finalization_answer", "is_finalization", "load_scripts", "make_handler", "serve"]
