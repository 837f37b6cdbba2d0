"""What an agent tries against a denylist: spellings of denied URLs, and near misses that must stay allowed.
Shared by the unit table (tests/sandbox/egress/test_denylist.py), the real proxy (test_egress.py) and the real
gateway's provider-tool result filter (test_provider_tools.py)."""

ENTRIES = ["huggingface.co/datasets/omnidr", "omnidr-bench.org"]

# (host, path) spellings of a denied URL, as the proxy sees them in a request
PATH_EVASIONS = [
    ("huggingface.co", "/datasets/omnidr/x"),  # the plain spelling
    ("huggingface.co", "/datasets/%6fmnidr/x"),  # an escaped unreserved letter
    ("huggingface.co", "/datasets/%6F%6D%6E%69%64%72/x"),  # every letter escaped, upper-case hex
    ("huggingface.co", "/datasets//omnidr/x"),  # an empty segment
    ("huggingface.co", "//datasets/omnidr/x"),  # a leading empty segment
    ("huggingface.co", "/datasets/./omnidr/x"),  # a dot segment
    ("huggingface.co", "/datasets/other/../omnidr/x"),  # a dot-dot segment
    ("huggingface.co", "/datasets/x/%2e%2e/omnidr/x"),  # an escaped dot-dot segment
    ("huggingface.co", "/datasets%2fomnidr/x"),  # an escaped slash
    ("huggingface.co", "/datasets\\omnidr/x"),  # a backslash, read as a slash by browsers
    ("huggingface.co", "/datasets/omnidr;jsessionid=1/x"),  # a path parameter
    ("huggingface.co", "/Datasets/OmniDR/x"),  # letter case
    ("huggingface.co", "/datasets/omnidr"),  # the entry itself
    ("huggingface.co", "/datasets/omnidr/"),  # a trailing slash
    ("huggingface.co", "/datasets/omnidr?download=1"),  # a query
    ("huggingface.co", "/data\tsets/omni\ndr/x"),  # tab and line feed, dropped by browsers
    ("HuggingFace.CO", "/datasets/omnidr/x"),  # host case
    ("huggingface.co.", "/datasets/omnidr/x"),  # a trailing dot
    ("huggingface.co:443", "/datasets/omnidr/x"),  # a port
    ("www.huggingface.co", "/datasets/omnidr/x"),  # a subdomain
    ("%68uggingface.co", "/datasets/omnidr/x"),  # an escaped host letter
    ("ｈｕｇｇｉｎｇｆａｃｅ.co", "/datasets/omnidr/x"),  # full-width letters (IDNA maps them)
    ("huggingface。co", "/datasets/omnidr/x"),  # an ideographic full stop (IDNA separates labels on it)
]
# whole URLs, as a provider's tool result names them
URL_EVASIONS = [
    "https://huggingface.co/datasets/omnidr/x",
    "HTTPS://HUGGINGFACE.CO/datasets/omnidr",
    "https://user:pw@huggingface.co/datasets/omnidr",  # userinfo
    "https://huggingface.co:8443/datasets/omnidr",  # another port
    "https:huggingface.co/datasets/omnidr",  # no slashes after the scheme
    "https:///huggingface.co/datasets/omnidr",  # three slashes
    "https:\\\\huggingface.co\\datasets\\omnidr",  # backslashes throughout
    "//huggingface.co/datasets/omnidr",  # scheme-relative
    "  https://huggingface.co/datasets/%6fmnidr  ",  # blanks around, an escape inside
    "https://huggingface.co./datasets/omnidr#readme",  # a trailing dot and a fragment
    "https://sub.omnidr-bench.org/anything",  # a host entry's subdomain
    "http://OMNIDR-BENCH.ORG.:80/",  # a host entry: case, dot, port
]
# must stay allowed
NEAR_MISSES = [
    ("huggingface.co", "/datasets/omnidr-other/x"),
    ("huggingface.co", "/datasets/omnidrx"),
    ("huggingface.co", "/datasets"),
    ("huggingface.co", "/datasets/other/omnidr"),
    ("huggingface.co", "/datasets/omnidr/../other"),  # resolves out of the entry
    ("huggingface.co", "/models/omnidr"),
    ("huggingface.co", "/?q=/datasets/omnidr"),  # the entry in a query only
    ("huggingface.co", "/x#/datasets/omnidr"),  # the entry in a fragment only
    ("huggingface.co", "/datasets/%256fmnidr"),  # a double escape is one literal `%6f` to the server
    ("huggingface.co.evil.example", "/datasets/omnidr"),
    ("nothuggingface.co", "/datasets/omnidr"),
    ("notomnidr-bench.org", "/"),
    ("omnidr-bench.org.example", "/"),
]
URL_NEAR_MISSES = [
    "https://huggingface.co.evil.example/datasets/omnidr",
    "https://evil.example/huggingface.co/datasets/omnidr",
    "https://evil.example/?u=https://huggingface.co/datasets/omnidr",
    "https://huggingface.co@evil.example/datasets/omnidr",  # userinfo names the denied host; the host is another
    "https://huggingface.co/datasets/omnidr-other",
    "not a url",
]
