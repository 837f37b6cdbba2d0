"""Is a model or judge endpoint there? One cheap request before any work starts.

A URL typo or a server that is down would otherwise surface only after the first attempts failed
upstream (minutes each, with the gateway's retries). Any HTTP answer to `GET <base>/models`
counts as "there", whatever its status: keys and model names are checked elsewhere, and some
servers do not list models. Only no answer at all (refused, unresolvable, timed out) is refused.
Written without third-party imports: the evaluator image carries this module too.
"""

import urllib.error
import urllib.request

from omnidr.errors import UserError

TIMEOUT_S = 10.0

# The probe goes straight to the endpoint: a proxy set for the user's browsing must not answer for it.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def unanswered(base_url: str, timeout_s: float = TIMEOUT_S) -> str | None:
    """None when the endpoint answers HTTP at all, else why not."""
    try:
        with _DIRECT.open(urllib.request.Request(base_url.rstrip("/") + "/models", method="GET"), timeout=timeout_s):
            return None
    except urllib.error.HTTPError:
        return None  # it answered
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return str(reason) or type(reason).__name__


def require_answer(base_url: str, role: str, option: str) -> None:
    """A user error naming the endpoint when it does not answer (`role`: model, judge; `option`: how it was given)."""
    why = unanswered(base_url)
    if why is not None:
        raise UserError(f"the {role} endpoint {base_url} does not answer ({why}); start it or fix {option} "
                        "before any attempt runs")
