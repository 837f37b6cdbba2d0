"""Is a model or judge endpoint there? One cheap request before any work starts.

A URL typo or a server that is down would otherwise surface only after the first attempts failed
upstream (minutes each, with the gateway's retries). The probe itself is `sandbox.reach` (any HTTP
answer counts); this module turns no answer into a one-line user error.
"""

from omnidr.errors import UserError
from sandbox.reach import unanswered


def unanswered_error(base_url: str, role: str, option: str, why: str) -> UserError:
    """The one line for an endpoint that did not answer (`role`: model, judge; `option`: how it was given)."""
    return UserError(f"the {role} endpoint {base_url} does not answer ({why}); start it or fix {option} "
                     "before any attempt runs")


def require_answer(base_url: str, role: str, option: str) -> None:
    """Probe from this host; a user error naming the endpoint when it does not answer."""
    why = unanswered(base_url)
    if why is not None:
        raise unanswered_error(base_url, role, option, why)
