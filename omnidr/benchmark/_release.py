"""Where the benchmark's own data is published, so that an agent under evaluation cannot look it up."""

RELEASE_DENYLIST: tuple[str, ...] = (
    # the paper's release repository (OmniDR-Bench abstract: "The code and data are released at ..."),
    # on the site and on its raw-file host
    "github.com/marinero4972/OmniDR-Bench",
    "raw.githubusercontent.com/marinero4972/OmniDR-Bench",
)
"""Denylist entries (`host/path`) every run adds to its own: the egress proxy answers them 403 and the model
gateway puts them into provider-side search filters. A snapshot published elsewhere adds its hosts with
`--denylist`."""
