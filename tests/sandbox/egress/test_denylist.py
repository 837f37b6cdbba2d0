"""The denylist cannot be spelled around: one normalisation of hosts and paths (`sandbox.egress._denylist`), used
by the egress proxy (`blocks_url` on the request's host and path) and by the gateway's filter of provider-side
tool results (`blocks` on a whole URL). The table (tests/url_evasions.py) is what an agent would try; the near
misses must stay allowed. The same table runs through the real proxy and the real gateway."""

import pytest
from url_evasions import ENTRIES, NEAR_MISSES, PATH_EVASIONS, URL_EVASIONS, URL_NEAR_MISSES

from sandbox.egress import Denylist
from sandbox.egress._denylist import normal_host, normal_path, split_url


@pytest.fixture(scope="module")
def deny() -> Denylist:
    return Denylist(ENTRIES)


@pytest.mark.parametrize(("host", "path"), PATH_EVASIONS)
def test_every_spelling_of_a_denied_url_is_blocked(deny, host, path):
    assert deny.blocks_url(host, path) is not None


@pytest.mark.parametrize("url", URL_EVASIONS)
def test_every_spelling_of_a_denied_whole_url_is_blocked(deny, url):
    assert deny.blocks(url) is not None


@pytest.mark.parametrize(("host", "path"), NEAR_MISSES)
def test_near_misses_stay_allowed(deny, host, path):
    assert deny.blocks_url(host, path) is None


@pytest.mark.parametrize("url", URL_NEAR_MISSES)
def test_near_miss_urls_stay_allowed(deny, url):
    assert deny.blocks(url) is None


def test_entries_are_normalised_as_requests_are():
    """An entry written with escapes, dots, case or a trailing slash is the same rule as its plain form."""
    for spelling in ("HuggingFace.co./datasets/./OmniDR/", "https://huggingface.co/datasets/%6fmnidr",
                     "*.huggingface.co/datasets//omnidr"):
        rule = Denylist([spelling]).rules[0]
        assert (rule.host, rule.path_prefix) == ("huggingface.co", "/datasets/omnidr")


def test_the_normal_forms():
    assert normal_host("[::1]:443") == "::1"
    assert normal_host("xn--bcher-kva.example") == normal_host("Bücher.example") == "xn--bcher-kva.example"
    assert normal_path("") == "/" and normal_path("/a/b/../../..") == "/"
    assert split_url("https://a.example:1/b?c") == ("a.example", "/b")
    assert split_url("no-scheme.example/x") == ("no-scheme.example", "/x")


def test_the_address_policy_refuses_every_address_off_the_public_internet():
    """The addresses an agent would try through the web door (judged after resolution; the spellings a resolver
    reads, decimal, octal, hex and short, are tried through the real proxy in tests/attempts/test_doors.py)."""
    import ipaddress

    from sandbox.egress._networks import AddressPolicy

    policy = AddressPolicy(refused=[ipaddress.ip_network("198.18.0.0/15")],
                           allowed=[ipaddress.ip_network("10.20.0.0/16"), ipaddress.ip_network("198.18.0.0/15")],
                           endpoints=[("search", 8080)])

    def reason(address: str, host: str | None = None, port: int = 80) -> str | None:
        refusal = policy.judge(host or address, port, ipaddress.ip_address(address))
        return refusal.reason if refusal else None

    for address in ("127.0.0.1", "127.9.9.9", "10.0.0.1", "172.16.0.1", "172.17.0.1", "192.168.1.1", "100.64.0.1",
                    "169.254.169.254", "0.0.0.0", "224.0.0.1", "255.255.255.255", "192.0.2.1", "::1", "::",
                    "fe80::1", "fd00:ec2::254", "fc00::1", "ff02::1", "::ffff:127.0.0.1", "64:ff9b::a9fe:a9fe",
                    "2002:7f00:1::1"):
        assert reason(address) == "private_network", address
    assert reason("198.19.255.1") == "sandbox_network"  # the sandbox's own pool: refused though also allowed
    assert reason("10.20.3.4") is None  # opened on purpose (--allow-net)
    assert reason("172.18.0.5", host="search", port=8080) is None  # the search door, by name and port
    assert reason("172.18.0.5", host="search", port=8081) == "private_network"  # not its other ports
    assert reason("172.18.0.5", host="other", port=8080) == "private_network"  # nor its other names
    for address in ("93.184.215.14", "2606:4700::6810:84e5", "1.1.1.1"):
        assert reason(address) is None, address
    assert policy.literal("0x7f.1", 80) is None  # not standard notation: resolved (as the connection would) first
    assert policy.literal("[::ffff:7f00:1]", 80).reason == "private_network"
