"""Is a model endpoint there? One cheap request, from wherever this runs.

Any HTTP answer to `GET <base>/models` counts as "there", whatever its status: keys and model
names are checked elsewhere, and some servers do not list models. Only no answer at all (refused,
unresolvable, timed out) is not. Standard library only, so that it runs in every image that
carries `sandbox/`: the host checks the endpoints it calls itself (the judge, eval's models), and
`python -m sandbox.reach URL...` in a container on the gateway's outside network checks them the
way the gateway will reach them (names that only that Docker network resolves, a loopback relay).
It prints one JSON object: URL -> why it did not answer, for the URLs that did not.
"""

import json
import sys
import urllib.error
import urllib.request

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


def main(urls: list[str]) -> None:
    print(json.dumps({url: why for url in urls if (why := unanswered(url)) is not None}))


if __name__ == "__main__":
    main(sys.argv[1:])
