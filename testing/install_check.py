"""What a clean install must be able to do, checked once before the tests (``.ci/run``):
every module of the package imports, and each optional path the default install promises works
on a small input — trafilatura extracts a page's text (it needs ``lxml_html_clean`` on lxml 6),
mwparserfromhell reads wikitext, the web app is built.

    python -m claire.testing.install_check      # prints what failed; exit 1 if anything did
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from typing import Callable

import claire

_PAGE = ("<html><head><title>A page</title></head><body><article><h1>A page</h1>"
         "<p>The tower was completed in 1889 for the world's fair held in Paris that spring.</p>"
         "<p>It was the tallest structure in the world until 1930, when another building passed it.</p>"
         "</article></body></html>")


def _modules() -> list[str]:
    failed = []
    for info in pkgutil.walk_packages(claire.__path__, "claire."):
        if info.name.startswith("claire.tests") or info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except Exception as error:  # report every broken module, not only the first
            failed.append(f"import {info.name}: {type(error).__name__}: {error}")
    return failed


def _trafilatura() -> None:
    from claire.sources.reading import page_from_body

    page = page_from_body("https://example.org/a", _PAGE.encode(), "text/html", "utf-8")
    assert "1889" in page.text, f"the main text was not extracted: {page.text!r}"


def _wikitext() -> None:
    import mwparserfromhell

    code = mwparserfromhell.parse("The tower<ref>{{cite web|url=https://example.org/a|title=A}}</ref> stands.")
    assert code.filter_templates(), "no template read from wikitext"


def _web_app() -> None:
    from claire.config import Config
    from claire.web.app import create_app

    create_app(Config())


CHECKS: dict[str, Callable[[], None]] = {"trafilatura extracts a page": _trafilatura,
                                         "mwparserfromhell reads wikitext": _wikitext,
                                         "the web app is built": _web_app}


def main() -> int:
    failed = _modules()
    for name, check in CHECKS.items():
        try:
            check()
        except Exception as error:
            failed.append(f"{name}: {type(error).__name__}: {error}")
    for line in failed:
        print(line, file=sys.stderr)
    print("install check: " + ("ok" if not failed else f"{len(failed)} problem(s)"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
