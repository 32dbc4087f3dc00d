"""The talk-page draft of a resolved contradiction: wikitext an editor can paste (never posted).

:func:`talk_page_draft` renders ``talk_page.wiki.j2`` for the article that should change — the
passage's when the fact is right, the fact's when the passage is right, both when both can stand
or it cannot tell — with a section heading, both statements linked, the sources checked with their
tiers, a neutral suggested fix or a request for a source, the inline template to place
(``{{Contradictory inline}}`` on the statement found wrong, ``{{Contradict-other}}`` otherwise,
naming the other article and the month), a line saying that a tool helped draft it, and ``~~~~``.
Everything quoted from the articles or sources is kept from acting as markup (``<nowiki>``).
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path
from typing import Any

import jinja2

from claire.domain import safe_url
from claire.tasks.sides.records import Resolution, SidesCase

_MARKUP = re.compile(r"[\[\]{}<>|~]|''|^[=*#:;]|__")
_ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent), undefined=jinja2.StrictUndefined,
                          autoescape=False, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def as_wikitext(text: Any) -> str:
    """Plain text that cannot act as wiki markup: kept as it is, or inside ``<nowiki>`` when it holds
    link, template, tag, table or signature characters."""
    text = " ".join(str(text or "").split())
    if not _MARKUP.search(text):
        return text
    return "<nowiki>" + text.replace("</nowiki", "&lt;/nowiki").replace("<nowiki", "&lt;nowiki") + "</nowiki>"


def as_link_target(title: Any) -> str:
    """An article title usable inside ``[[…]]`` (characters a title cannot hold are dropped)."""
    return re.sub(r"[\[\]{}|<>#~]", "", " ".join(str(title or "").split()))


LEAD_SECTIONS = frozenset({"Infobox", "Introduction"})
"""The section names corpora give the lead and the infobox, which have no heading on the page."""


def article_link(side: Any, edition: str | None, with_section: bool = False) -> str:
    """A link to a side's article as seen from edition ``edition`` (the talk page's): a plain
    ``[[:Title]]`` (``[[:Title#Section|Title]]`` with its section), or for an article of another
    edition an interwiki link labelled with its language, ``[[:de:Eiffelturm#Bau|Eiffelturm (de)]]``."""
    where = as_link_target(side.document_title)
    language = getattr(side, "language", None)
    prefix = f"{language}:" if language and edition and language != edition else ""
    section = side.section_title.split(" > ")[-1] if with_section and side.section_title else ""
    if section in LEAD_SECTIONS:
        section = ""  # the lead and the infobox stand above the first heading: no anchor reaches them
    anchor = f"#{as_link_target(section)}" if section else ""
    if not anchor and not prefix:
        return f"[[:{where}]]"
    label = as_wikitext(side.document_title) + (f" ({language})" if prefix else "")
    return f"[[:{prefix}{where}{anchor}|{label}]]"


_ENV.filters["article_link"] = article_link
_ENV.filters["wiki"] = as_wikitext
_ENV.filters["link"] = lambda url: safe_url(url) or ""  # an external link's URL, percent-encoded where it could act


def in_plain_words(missing: str, fact_article: str, passage_article: str) -> str:
    """What is missing, said of the articles rather than of the tool's "fact" and "passage"."""
    for side, article in (("fact", fact_article), ("passage", passage_article)):
        name = f"the statement in {article}" if article else f"the {side}"
        missing = re.sub(rf"\bthe {side}'s\b", f"{name}'s", missing)
        missing = re.sub(rf"\bthe {side}\b", name, missing)
    return missing.replace("cites no source", "cites no source for it")


def talk_page_draft(case: SidesCase, resolution: Resolution, *, today: date | None = None,
                    home: str = "en") -> tuple[str, str]:
    """(the article whose talk page the draft is for, the draft's wikitext). Across editions
    (the sides' reports name their languages) the links are written from the target article's
    edition; for an article of another edition than ``home`` the note says it is in English."""
    today = today or date.today()
    fact, passage = resolution.side("fact"), resolution.side("passage")
    if resolution.decision == "fact":
        target, wrong, right = passage, passage, fact
    elif resolution.decision == "passage":
        target, wrong, right = fact, fact, passage
    else:
        target, wrong, right = fact, None, None
    other = passage if target is fact else fact
    article = target.document_title or "the article"
    month, named = today.strftime("%B %Y"), as_link_target(other.document_title)
    inline = ("{{Contradictory inline|article=" + named + "|date=" + month + "}}" if wrong is not None
              else "{{Contradict-other|" + named + "|date=" + month + "}}")
    edition = target.language  # set on both reports only when the sides stand in different editions
    text = _ENV.get_template("talk_page.wiki.j2").render(
        resolution=resolution, fact=fact, passage=passage, target=target, other=other, wrong=wrong, right=right,
        inline=inline, both_articles=resolution.decision in ("both", "unknown"), edition=edition,
        foreign=bool(edition and edition != home),
        missing=[in_plain_words(m, fact.document_title, passage.document_title) for m in resolution.missing],
    )
    return article, text
