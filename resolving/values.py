"""The words of a contradiction: the tokens of a statement, the details that set two statements
apart, whether a text gives a value, and what makes a cited source one vote. A leaf of
``resolving``: the cases, the resolver and the rule all read it.
"""

from __future__ import annotations

import re

from claire.domain import Reference
from claire.sources.urls import site_of

_TOKEN = re.compile(r"\d[\d,.]*\d|\d|[^\W\d_][\w'’-]*", re.UNICODE)
_STOP = frozenset("""a an the of in on at to for by with from and or but as is are was were be been being it its
this that these those there their has have had not no he she they his her them who which what when where than then
into over under about after before during also only some all any each most more many much one""".split())


YEAR = re.compile(r"1[0-9]{3}|20[0-9]{2}")
"""A year, as a value a statement may give."""


def tokens(text: str) -> list[str]:
    """The words and numbers of a text that can carry a value (numbers without their commas,
    common words left out)."""
    found = []
    for token in _TOKEN.findall(text):
        token = token.rstrip(".,").replace(",", "") if token[0].isdigit() else token
        if token.casefold() not in _STOP:
            found.append(token)
    return found


def distinguishing_values(a: str, b: str, limit: int = 4) -> tuple[str, str]:
    """The details that set two statements apart: the words and numbers each has that the other
    lacks — only the numbers when both differ in numbers, only the years when both differ in years —
    at most ``limit`` each, in order."""
    ta, tb = tokens(a), tokens(b)
    fa, fb = {t.casefold() for t in ta}, {t.casefold() for t in tb}
    da = list(dict.fromkeys(t for t in ta if t.casefold() not in fb))
    db = list(dict.fromkeys(t for t in tb if t.casefold() not in fa))
    na, nb = [t for t in da if t[0].isdigit()], [t for t in db if t[0].isdigit()]
    if na and nb:
        da, db = na, nb
        ya, yb = [t for t in na if YEAR.fullmatch(t)], [t for t in nb if YEAR.fullmatch(t)]
        if ya and yb:  # two dates that differ in their year: the year is the detail (not the day)
            da, db = ya, yb
    return " ".join(da[:limit]), " ".join(db[:limit])


def gives_value(text: str, value: str) -> bool:
    """Whether ``text`` gives ``value``: at least half of its words and numbers (all, for one or two)
    stand in it as whole words."""
    wanted = tokens(value)
    if not wanted:
        return False
    have = {t.casefold() for t in tokens(text)}
    found = sum(1 for t in wanted if t.casefold() in have)
    return found >= (len(wanted) if len(wanted) <= 2 else (len(wanted) + 1) // 2)


def source_key(reference: Reference | None, fallback: str) -> str:
    """What makes a source one vote: the site of its URL (:func:`~claire.sources.urls.site_of`: the
    registered domain, so ``uk.reuters.com`` is Reuters and two blogs stay apart), else its
    publisher, else ``fallback``."""
    if reference is not None and reference.url:
        site = site_of(reference.url)
        if site:
            return site
    if reference is not None and reference.site:
        return reference.site.strip().lower()
    return fallback.strip().lower()
