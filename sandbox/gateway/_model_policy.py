"""One system, one model: what the gateway does with the `model` an agent's request names.

A system is scored as one model. An agent (or a harness's subagent, or its background calls for titles and
summaries) may name another one: a stronger model than the one on the leaderboard row, or a provider's search
model (OpenAI's `gpt-4o-search-preview`, `gpt-5-search-api`), which searches the live web on every request and so
slips past the provider-tools policy. The gateway's `model_policy`:

- `rewrite` (the sandbox's default): a request naming another model is sent upstream with the run's model, and
  the exchange says so (`model` asked, `model_sent`, a `request_edits` note). Harnesses whose background calls
  name a small model keep working, on the system's model.
- `refuse`: a request naming another model is answered 400 `model_refused` and not sent.
- `allow`: the request goes as named (a standalone gateway's default; the run's model is then only a label).

Whatever the policy, a provider's search model is refused while the run's provider-side web search is `deny`
(the replay default, and every run below `text_web`): such a model is a web door the proxy never sees.
"""

import re
from dataclasses import dataclass

from sandbox.models import ModelPolicy

# a name with `search` as one of its words: gpt-4o-search-preview, gpt-4o-mini-search-preview, gpt-5-search-api
_SEARCH_MODEL = re.compile(r"(?:^|[-_./:])search(?:$|[-_./:])", re.IGNORECASE)


def is_search_model(name: str | None) -> bool:
    """Whether `name` is a provider's search model (it runs web searches at the provider on every request)."""
    return bool(name) and _SEARCH_MODEL.search(str(name)) is not None


@dataclass(frozen=True)
class ModelDecision:
    asked: str | None  # what the agent's request named
    sent: str | None  # what goes upstream (None: the request is refused)
    refusal: str | None = None  # why it is refused, one sentence for the agent and the log

    @property
    def rewritten(self) -> bool:
        return self.refusal is None and self.sent != self.asked


def decide(policy: ModelPolicy, run_model: str | None, asked: str | None, search_denied: bool) -> ModelDecision:
    """What to do with a model request naming `asked`, for a system scored as `run_model` (None: no model set,
    every name passes) under `policy`; `search_denied`: the run's provider-side web search is `deny`."""
    # a search model is refused whether asked for or (the system's own) sent: under deny it is never reached, and
    # an agent that asks for one is told so rather than quietly answered by another model
    for name in (asked, run_model if policy != "allow" else None):
        if search_denied and is_search_model(name):
            return ModelDecision(asked, None, f"{name!r} is a search model that searches the live web at the "
                                 "provider; this run's provider-side web search is deny")
    sent = asked
    if run_model is not None and asked != run_model and policy != "allow":
        if policy == "refuse":
            return ModelDecision(asked, None, f"this system is scored as model {run_model!r}; a request for "
                                 f"{asked!r} is not sent (model policy refuse)")
        sent = run_model
    return ModelDecision(asked, sent)
