"""URL identity, in its one home: the page a URL names (archives unwrapped, ``www.``, a trailing dot,
a slash and credentials aside) and the site it belongs to (the registered domain, private suffixes
included), as the reliability list, the resolver's votes and the reader use them."""

from __future__ import annotations

import ipaddress

from claire.domain import Reference
from claire.resolving.values import source_key
from claire.sources.reading import is_public
from claire.sources.reliability import Perennial
from claire.sources.urls import archived, is_public_suffix, page_key, site_of, without_credentials


def test_a_site_is_its_registered_domain_and_blogs_stay_apart():
    assert site_of("https://uk.reuters.com/a") == site_of("https://www.reuters.com/b") == "reuters.com"
    assert site_of("https://a.blogspot.com/x") != site_of("https://b.blogspot.com/x")
    assert source_key(Reference(url="https://uk.reuters.com/a"), "t") == source_key(Reference(url="https://reuters.com/b"), "t")
    assert site_of("http://[::1/") == "" and site_of(None) == "" and site_of("http://127.0.0.1:8/x") == "127.0.0.1"


def test_a_page_is_the_same_whatever_its_spelling():
    same = ["https://www.Example.org/a/b/#x", "http://example.org/a/b", "https://example.org./a/b/",
            "https://user:pw@example.org/a/b", "https://web.archive.org/web/2020/https://www.example.org/a/b"]
    assert {page_key(url) for url in same} == {"example.org/a/b"}


def test_archives_are_unwrapped_to_the_page_they_keep():
    assert archived("https://web.archive.org/web/20200101000000id_/http://example.org/a?b=1") == "http://example.org/a?b=1"
    assert archived("https://archive.ph/2020.01.01-000000/https://www.dailymail.co.uk/x") == "https://www.dailymail.co.uk/x"
    assert archived("https://webcache.googleusercontent.com/search?q=cache:https://www.dailymail.co.uk/x") \
        == "https://www.dailymail.co.uk/x"
    assert archived("https://example.org/web/2020/https://x.org") == "https://example.org/web/2020/https://x.org"


def test_a_deprecated_source_keeps_its_tier_behind_a_dot_or_an_archive():
    perennial = Perennial.load()
    for url in ("https://www.dailymail.co.uk./x", "https://web.archive.org/web/2020/https://www.dailymail.co.uk/x",
                "https://archive.ph/2020.01.01-000000/https://www.dailymail.co.uk/x"):
        assert perennial.rate(url=url).tier == "deprecated", url


def test_credentials_are_dropped_and_suffixes_known():
    assert without_credentials("http://alice:S3CRET@host.example/a") == "http://host.example/a"
    assert without_credentials("http://[::1/") == "http://[::1/"
    assert is_public_suffix("com") and is_public_suffix("co.uk") and is_public_suffix("")
    assert not is_public_suffix("bbc.co.uk") and not is_public_suffix("blogspot.com")  # one company's service


def test_ipv6_forms_that_carry_a_private_ipv4_address_are_not_public():
    for address in ("64:ff9b::7f00:1", "64:ff9b::a00:1", "2002:7f00:1::", "2002:c0a8:101::", "::ffff:10.0.0.1",
                    "64:ff9b:1::1"):
        assert not is_public(ipaddress.ip_address(address)), address
    assert is_public(ipaddress.ip_address("2606:4700::1111")) and is_public(ipaddress.ip_address("64:ff9b::808:808"))
