"""How reliable a source is: the Perennial sources table parsed with mwparserfromhell (the real
table from ../shared when present), the shipped snapshot, and lookups by domain and by name."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from claire.errors import ConfigError, DatasetError
from claire.sources.reliability import ATTRIBUTION, Perennial, changes, parse_perennial, snapshot_from

REAL_TABLE = Path(__file__).resolve().parents[3] / "shared" / "data" / "rsp" / "perennial-sources.wikitext"

SMALL = """{| class="wikitable"
|- class="s-gr" id="Reuters"
| [[Reuters]] {{WP:RSPSHORTCUT|WP:REUTERS}}
| {{WP:RSPSTATUS|gr}}
| [[WP:RSN#1|1]]
| {{WP:RSPLAST|2018}}
| A news agency.
| {{WP:RSPUSES|reuters.com}}
|- class="s-d" id="Daily Mail"
| [[Daily Mail|Daily Mail (MailOnline)]]
| {{WP:RSPSTATUS|d}}
| 1
| {{WP:RSPLAST|2024|stale=n}}
| Deprecated.
| {{WP:RSPUSES|dailymail.co.uk|www.mailonsunday.co.uk}}
|- class="s-gu" id="Spam"
| Spam Site
| {{WP:RSPSTATUS|gu|b=y}}
| 1
| {{WP:RSPLAST|2020}}
| Blacklisted.
| {{WP:RSPUSES|spam.example}}
|}"""


def test_rows_give_name_domains_tier_and_year():
    rows = parse_perennial(SMALL)
    assert [(r.name, r.domains, r.tier, r.last_discussed) for r in rows] == [
        ("Reuters", ("reuters.com",), "generally reliable", 2018),
        ("Daily Mail (MailOnline)", ("dailymail.co.uk", "mailonsunday.co.uk"), "deprecated", 2024),
        ("Spam Site", ("spam.example",), "blacklisted", 2020),
    ]


def test_lookup_by_domain_subdomain_and_name():
    perennial = Perennial(parse_perennial(SMALL))
    assert perennial.rate(url="https://www.reuters.com/world/x").tier == "generally reliable"
    assert perennial.rate(url="https://uk.reuters.com/a").tier == "generally reliable"  # a subdomain
    assert perennial.rate(url="https://notreuters.com/a").tier == "not listed"
    assert perennial.rate(site="Daily Mail").tier == "deprecated"  # a book or a paper without a URL: by name
    assert perennial.rate(url=None, site="").tier == "not listed"
    assert perennial.rate(url="https://spam.example/p").label().startswith("Spam Site")
    assert perennial.rate(url="https://spam.example/p").tier == "blacklisted"


def test_a_snapshot_round_trips_with_its_attribution(tmp_path):
    snapshot = snapshot_from(SMALL, retrieved="2026-04-19")
    path = tmp_path / "snap.json"
    path.write_text(snapshot.to_json())
    assert json.loads(path.read_text())["attribution"] == ATTRIBUTION
    assert "Deprecated." not in path.read_text()  # no summaries
    again = Perennial.load(path)
    assert again.sources == snapshot.sources and again.retrieved == "2026-04-19"
    with pytest.raises(DatasetError, match="no Perennial sources rows"):
        snapshot_from("== Not the list ==")
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(DatasetError, match="is not a Perennial sources snapshot"):
        Perennial.load(tmp_path / "bad.json")
    with pytest.raises(ConfigError, match="no Perennial sources snapshot"):
        Perennial.load(tmp_path / "missing.json")


def test_the_shipped_snapshot_rates_well_known_sources():
    perennial = Perennial.load()
    assert len(perennial.sources) == 505
    assert perennial.rate(url="https://www.bbc.co.uk/news/x").tier == "generally reliable"
    assert perennial.rate(url="https://www.dailymail.co.uk/x").tier == "deprecated"
    assert perennial.rate(url="https://someone.blogspot.com/x").tier == "generally unreliable"


def test_the_real_table_parses_to_its_published_counts():
    if not REAL_TABLE.is_file():
        pytest.skip("the Perennial sources table (../shared/data/rsp/) is not beside this checkout")
    rows = parse_perennial(REAL_TABLE.read_text(encoding="utf-8"))
    assert len(rows) == 505
    assert sum(1 for r in rows if r.domains) == 497
    tiers = Counter(r.tier for r in rows)
    # README: 157 gr, 114 nc, 170 gu, 63 d, 1 m; 25 of the gu and d rows are also blacklisted
    assert tiers["generally reliable"] == 157 and tiers["no consensus"] == 115  # the one marginal row counts as no consensus
    assert tiers["generally unreliable"] + tiers["deprecated"] + tiers["blacklisted"] == 170 + 63
    assert tiers["blacklisted"] == 25


def test_a_row_for_a_bare_public_suffix_rates_nothing():
    table = ('{| class="wikitable"\n|-\n| [[Everything]]\n| {{WP:RSPSTATUS|gr}}\n| 1\n| {{WP:RSPLAST|2025}}\n'
             '| Vandalised.\n| {{WP:RSPUSES|com}} {{WP:RSPUSES|times.example}}\n|}')
    perennial = snapshot_from(table)
    assert perennial.sources[0].domains == ("times.example",)
    assert perennial.rate(url="https://anything.com/x").tier == "not listed"
    assert changes(Perennial.load(), perennial)["added"] == ["Everything"]


def test_a_site_with_several_rows_is_rated_by_the_row_its_path_or_topic_names():
    perennial = Perennial.load()
    assert perennial.rate(url="https://www.forbes.com/sites/someone/2021/01/01/x").tier == "generally unreliable"
    assert perennial.rate(url="https://www.forbes.com/advisor/banking/x").tier == "generally unreliable"
    assert perennial.rate(url="https://www.forbes.com/2021/01/01/x").tier == "no consensus"
    rows = {url: perennial.rate(url=url) for url in ("https://www.foxnews.com/politics/a", "https://www.foxnews.com/us/a",
                                                     "https://www.foxnews.com/shows/hannity")}
    assert [r.source.name for r in rows.values()] == ["Fox News (politics and science)",
                                                      "Fox News (news excluding politics and science)",
                                                      "Fox News (talk shows)"]
    assert all(len(r.others) == 2 for r in rows.values())  # and the card says the other rows exist
    assert "other rows for this site" in rows["https://www.foxnews.com/us/a"].label()
    assert "5 August 2010 – present" in perennial.rate(url="https://www.forbes.com/2021/x").label()  # the dash kept

