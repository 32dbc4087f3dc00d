"""Which side is right: the values that set two statements apart, the documented rule (a winner
always has a verified source; recency only for facts that change; copies are one vote), the
resolver driven by a scripted model through the real citation verifier, and the talk-page draft
parsed back with mwparserfromhell."""

from __future__ import annotations

from datetime import date

import mwparserfromhell
import pytest

from claire.resolving.cases import case_from_check, closest_sentence
from claire.resolving.resolver import Resolver
from claire.resolving.rule import decide
from claire.resolving.values import distinguishing_values, gives_value, source_key
from claire.resolving.talk_page import as_wikitext, talk_page_draft
from claire.config import Config
from claire.domain import Assessment, Claim, Evidence, Passage, Reference
from claire.errors import DatasetError
from claire.tasks.sides.records import Resolution, SideReport, SidesCase, SourceJudgement, load_cases
from claire.testing.oracle import explain_answer, support_answer


def oracle_resolver() -> Resolver:
    """The resolver with the real citation verifier, the oracle answering through a scripted client."""
    from claire.agent.citation_checker import CitationChecker
    from claire.llm.answers import text_of
    from claire.prompts import PromptLibrary
    from claire.testing.oracle import oracle_responder
    from claire.testing.scripted import scripted_client

    config = Config()
    respond = oracle_responder()
    llm = scripted_client(lambda request: respond({
        "claire_prompt": request.prompt,
        "messages": [{"role": m.type, "content": text_of(m)} for m in request.messages]})["content"])
    prompts = PromptLibrary()
    checker = CitationChecker(llm=llm, retriever=None, prompts=prompts, settings=config.cite)
    return Resolver(llm=llm, retriever=None, prompts=prompts, checker=checker, settings=config.resolve)


def judged(tier: str, support: str = "states", date_: str | None = None, url: str = "https://a.example/x") -> SourceJudgement:
    return SourceJudgement(reference=Reference(url=url, title="t"), tier=tier, support=support,
                           quote="q" if support in ("states", "contradicts") else None, date=date_)


def report(name: str, *sources: SourceJudgement, agreeing: int = 0) -> SideReport:
    return SideReport(side=name, text=f"{name} text", sources=list(sources), agreeing=[f"s{i}" for i in range(agreeing)])


def test_values_are_what_sets_the_statements_apart():
    assert distinguishing_values("The tower was completed in 1890.", "It was inaugurated on 31 March 1889.") == ("1890", "1889")
    assert distinguishing_values("Founded by Clara Mott.", "Founded by Edwin Mott.") == ("Clara", "Edwin")
    assert distinguishing_values("It has 48,200 residents.", "It has 51,900 residents.") == ("48200", "51900")
    assert gives_value("Its population is 48,200 today.", "48200")
    assert not gives_value("Edwin Mott founded it.", "Clara Mott") and gives_value("Clara Mott founded it.", "Clara Mott")


def test_a_winner_needs_a_verified_source_and_the_rule_weighs_tiers():
    decision, confidence, reasons, missing = decide(report("fact", judged("generally reliable")), report("passage"),
                                                    time_varying=False)
    assert decision == "fact" and confidence >= 0.8 and "the passage cites no source" in missing
    # a deprecated or generally unreliable source verifies nothing
    assert decide(report("fact", judged("deprecated")), report("passage"), time_varying=False)[0] == "unknown"
    assert decide(report("fact", judged("generally unreliable")), report("passage"), time_varying=False)[0] == "unknown"
    # reliable against deprecated
    assert decide(report("fact", judged("deprecated")), report("passage", judged("generally reliable")),
                  time_varying=False)[0] == "passage"
    # a source the side cites that states the other value counts for the other side
    assert decide(report("fact", judged("generally reliable", "contradicts")), report("passage"),
                  time_varying=False)[0] == "passage"
    # silent sources and unreadable ones are no evidence; a quote is needed
    unquoted = SourceJudgement(reference=Reference(url="https://a.example"), tier="generally reliable", support="states")
    assert decide(report("fact", judged("generally reliable", "silent"), unquoted),
                  report("passage", judged("not listed", "could not read")), time_varying=False)[0] == "unknown"


def test_recency_counts_only_for_facts_that_change():
    old, new = judged("generally reliable", date_="2012-01-01"), judged("generally reliable", date_="2023-01-01", url="https://b.example/y")
    assert decide(report("fact", old), report("passage", new), time_varying=True)[0] == "passage"
    decision, _, reasons, _ = decide(report("fact", old), report("passage", new), time_varying=False)
    assert decision == "unknown" and any("does not change over time" in r for r in reasons)
    # a fixed fact: an older standing source with agreement beats a newer unlisted one
    older = judged("no consensus", date_="1999-01-01")
    newer = judged("not listed", date_="2024-01-01", url="https://b.example/y")
    assert decide(report("fact", older, agreeing=1), report("passage", newer), time_varying=False)[0] == "fact"
    assert decide(report("fact", older, agreeing=1), report("passage", newer), time_varying=True)[0] != "fact"


def test_both_can_stand_is_the_models_reading_and_copies_are_one_vote():
    assert decide(report("fact"), report("passage"), time_varying=False, both_can_stand=True,
                  both_reason="different scopes")[:3] == ("both", 0.7, ["different scopes"])
    from claire.tasks.sides.records import OtherPassage

    blog = Reference(url="https://travelnotes.blogspot.com/a")
    copies = [OtherPassage(document_title=f"Guide {i}", content="It is 120 metres high.", citations=[blog]) for i in range(5)]
    own = [OtherPassage(document_title="Atlas", content="It is 120 metres high."),
           OtherPassage(document_title="Atlas", content="It is 120 metres high, again.")]
    assert Resolver.agreeing("120", "87", copies + own) == ["travelnotes.blogspot.com (cited in Guide 0)",
                                                           "the article Atlas (no source cited)"]
    assert source_key(Reference(url="https://www.bbc.co.uk/x"), "T") == "bbc.co.uk"


CASE = '{"id": "a", "fact": {"text": "x"}, "passage": {"text": "y"}'


@pytest.mark.parametrize("text, said", [
    (CASE + ', "label": "fact"}\n{"id": "b", "fact": {"text": ""}, "passage": {"text": "y"}}\n', r"cases.jsonl:2: fact.text"),
    (CASE + ', "label": "maybe"}\n', r"cases.jsonl:1: label"),
    (CASE + '}\nnot json\n', r"cases.jsonl:2"),
])
def test_a_bad_case_line_is_named(tmp_path, text, said):
    path = tmp_path / "cases.jsonl"
    path.write_text(text)
    with pytest.raises(DatasetError, match=said):
        load_cases(path)


def test_cases_read_with_clear_errors(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a", "fact": {"text": "x"}, "passage": {"text": "y"}}\n')
    assert load_cases(path)[0].others == []  # a case file's case carries its evidence: no search


def test_the_passage_a_flagged_check_conflicts_with():
    infobox = Evidence(n=1, id="i", document_title="Eiffel Tower", section_title="Infobox", block_type="infobox",
                       content="Type: Lattice tower\nConstruction started: 28 January 1887\nInaugurated: 31 March 1889")
    prose = Evidence(n=2, id="p", document_title="Eiffel Tower", section_title="History",
                     content="Work began in 1887. The tower was inaugurated on 31 March 1889, when Eiffel climbed it.",
                     citations=[Reference(url="https://www.example.org/engineering/eiffel-tower-construction")])
    claim = Claim(text="The Eiffel Tower was completed in 1890.", context=Passage(document_title="Paris"))
    flagged = Assessment(claim_id="c", system="claire", claim_text=claim.text, score=0.9, threshold=0.5,
                         evidence=[infobox, prose], reported=["[1] states otherwise"])
    case = case_from_check(claim, flagged, retriever=None)
    assert case is not None and case.passage.text.startswith("The tower was inaugurated on 31 March 1889")
    assert case.passage.citations == prose.citations and case.others is None
    assert closest_sentence("A. The tower opened in 1889. C.", "The tower opened in 1890.")[0] == "The tower opened in 1889."


def test_the_oracle_answers_from_the_text_it_is_shown():
    user = ('Claim: <claim>It opened in 1931.</claim>\n\nThe detail that matters: <value>1931</value> '
            '(elsewhere Wikipedia says <other_value>1934</other_value> instead).\n\n<source>\n<passage n="1">\n'
            'Work took three years. The bridge opened in 1931 to great applause.\n</passage>\n</source>')
    assert "<stance>states</stance>" in support_answer(user)
    assert "The bridge opened in 1931 to great applause." in support_answer(user)
    assert "<stance>contradicts</stance>" in support_answer(user.replace("in 1931 to", "in 1934 to"))
    assert "<stance>silent</stance>" in support_answer(user.replace("in 1931 to", "long ago to"))
    both = explain_answer("<statement>Lisk has 310,000 in the city proper.</statement>"
                          "<statement>Lisk has 1.2 million in the metropolitan area.</statement>")
    assert "<both_can_stand>yes</both_can_stand>" in both and "<changes_over_time>no</changes_over_time>" in both
    same = explain_answer("<statement>Its population is 4,000.</statement><statement>Its population is 5,000.</statement>")
    assert "<both_can_stand>no</both_can_stand>" in same and "<changes_over_time>yes</changes_over_time>" in same


async def test_the_resolver_judges_each_source_with_the_citation_verifier():
    resolver = oracle_resolver()
    case = SidesCase.model_validate({
        "id": "t", "others": [],
        "fact": {"text": "The Halvorsen Bridge opened in 1931.", "document_title": "Halvorsen Bridge",
                 "citations": [{"url": "https://www.bbc.co.uk/claire-example/h", "title": "Profile", "site": "BBC"},
                               {"url": "https://gone.example/404", "title": "Gone"},
                               {"title": "Bridges of the North", "site": "Oxford University Press", "kind": "book"}]},
        "passage": {"text": "The Halvorsen Bridge opened to traffic in 1934.", "document_title": "Brenmoor County"},
        "sources": [{"url": "https://www.bbc.co.uk/claire-example/h", "title": "Profile", "date": "2019-05-02",
                     "text": "The Halvorsen Bridge was opened in 1931 after three years of construction."}],
    })
    resolution = await resolver.assess(case)
    assert resolution.decision == "fact" and resolution.confidence >= 0.8
    fact = resolution.side("fact")
    assert [s.support for s in fact.sources] == ["states", "could not read", "unknown"]
    assert fact.sources[0].tier == "generally reliable" and fact.sources[0].quote.startswith("The Halvorsen Bridge was opened in 1931")
    assert fact.sources[0].quote in case.sources[0].text  # every quote on the card stands in its source
    assert fact.sources[2].note == "no URL to read: rated by its publisher alone"
    assert resolution.talk_page_article == "Brenmoor County"
    assert resolution.usage["calls"] == 2  # one verifier call for the one readable source, one explanation


async def test_one_malformed_cited_url_is_one_unread_source_and_the_resolve_goes_on():
    resolver = oracle_resolver()
    case = SidesCase.model_validate({
        "id": "t", "others": [],
        "fact": {"text": "The Halvorsen Bridge opened in 1931.", "document_title": "Halvorsen Bridge",
                 "citations": [{"url": "http://[::1/", "title": "Broken"},
                               {"url": "https://www.bbc.co.uk/claire-example/h", "title": "Profile", "site": "BBC"}]},
        "passage": {"text": "The Halvorsen Bridge opened to traffic in 1934.", "document_title": "Brenmoor County"},
        "sources": [{"url": "https://www.bbc.co.uk/claire-example/h", "title": "Profile",
                     "text": "The Halvorsen Bridge was opened in 1931 after three years of construction."}],
    })
    resolution = await resolver.assess(case)
    fact = resolution.side("fact")
    assert [s.support for s in fact.sources] == ["unknown", "states"]  # the URL was refused when read: a source without one
    assert fact.sources[0].reference.url is None and resolution.decision == "fact"


def test_the_talk_page_draft_parses_back():
    fact = SideReport(side="fact", text="The bridge opened in 1931.", value="1931", document_title="Halvorsen Bridge",
                      section_title="History", sources=[judged("generally reliable")])
    passage = SideReport(side="passage", text="It opened in 1934 [[sic]] {{x}} ~~~~", value="1934",
                         document_title="Brenmoor County", section_title="Overview")
    resolution = Resolution(claim_id="c", decision="fact", confidence=0.9, sides=[fact, passage])
    case = SidesCase.model_validate({"id": "c", "fact": {"text": fact.text}, "passage": {"text": passage.text}})
    article, text = talk_page_draft(case, resolution, today=date(2026, 11, 28))
    assert article == "Brenmoor County"
    code = mwparserfromhell.parse(text)
    heading = code.filter_headings()[0]
    assert heading.level == 2 and "Halvorsen Bridge" in str(heading.title) and not heading.title.filter_wikilinks()
    links = {str(link.title) for link in code.filter_wikilinks()}
    assert {":Halvorsen Bridge#History", ":Brenmoor County#Overview", "WP:RSP"} <= links
    assert not code.filter_templates()  # the inline template is shown to copy, inside nowiki, never placed
    assert "{{Contradictory inline|article=Halvorsen Bridge|date=November 2026}}" in text
    assert text.rstrip().endswith("~~~~") and text.count("~~~~") == 2  # the signature, and the quoted one inside nowiki
    assert "<nowiki>It opened in 1934 [[sic]] {{x}} ~~~~</nowiki>" in text
    assert "automated tool" in text
    assert as_wikitext("plain words") == "plain words"
    unknown = resolution.model_copy(update={"decision": "unknown", "missing": ["the fact cites no source"]})
    assert "{{Contradict-other|Brenmoor County|date=November 2026}}" in talk_page_draft(case, unknown, today=date(2026, 11, 28))[1]


def test_hostile_citations_never_act_as_markup_in_the_draft():
    hostile_urls = ["https://www.bbc.co.uk/x/{{delete}}", "https://a ]{{delete}} [[Category:Spam]]",
                    "https://a.example/x\n== Heading ==", "https://a.example/~~~~", "javascript:alert(1)",
                    "https://a.example/''bold''|x"]
    references = [Reference(url=url, title="t") for url in hostile_urls]
    assert [r.url for r in references] == ["https://www.bbc.co.uk/x/%7B%7Bdelete%7D%7D", None, None,
                                           "https://a.example/%7E%7E%7E%7E", None, "https://a.example/%27%27bold%27%27%7Cx"]
    sources = [SourceJudgement(reference=r, tier="not listed", support="silent") for r in references]
    fact = SideReport(side="fact", text="x", document_title="Category:Spam", section_title="A", sources=sources)
    passage = SideReport(side="passage", text="y", document_title="File:Evil.png", sources=[
        SourceJudgement(reference=references[0], tier="not listed", support="states", quote=None)])
    resolution = Resolution(claim_id="c", decision="passage", confidence=0.8, sides=[fact, passage])
    case = SidesCase.model_validate({"id": "c", "fact": {"text": "x"}, "passage": {"text": "y"}})
    text = talk_page_draft(case, resolution, today=date(2026, 11, 28))[1]
    code = mwparserfromhell.parse(text)
    assert not code.filter_templates() and len(code.filter_headings()) == 1
    assert all(str(link.title).startswith(":") or str(link.title) == "WP:RSP" for link in code.filter_wikilinks())
    assert {str(link.url) for link in code.filter_external_links()} == {"https://www.bbc.co.uk/x/%7B%7Bdelete%7D%7D",
                                                                       "https://a.example/%7E%7E%7E%7E",
                                                                       "https://a.example/%27%27bold%27%27%7Cx"}
    assert text.count("~~~~") == 1 and 'states ""' not in text
    assert "could not be found in the source" in text



def test_the_rules_weights_are_settings_a_sweep_can_vary():
    from claire.settings import ResolveConfig

    fact, passage = report("fact", judged("not listed")), report("passage")
    assert decide(fact, passage, time_varying=False)[0] == "fact"
    stricter = ResolveConfig(tier_weights={**ResolveConfig().tier_weights, "not listed": 0.2})
    decision, _, _, missing = decide(report("fact", judged("not listed")), report("passage"), time_varying=False,
                                     weights=stricter)
    assert decision == "unknown" and any("only not listed sources" in m for m in missing)


def test_a_draft_for_an_article_of_another_edition_links_from_that_edition():
    fact = SideReport(side="fact", text="The tower was inaugurated on 31 March 1889.", value="1889",
                      document_title="Eiffel Tower", section_title="History > Construction", language="en",
                      sources=[judged("generally reliable")])
    passage = SideReport(side="passage", text="Der Turm wurde am 31. März 1890 eingeweiht.", value="1890",
                         document_title="Eiffelturm", section_title="Geschichte > Bau", language="de",
                         translation="The tower was inaugurated on 31 March 1890.", translated_into="en")
    resolution = Resolution(claim_id="c", decision="fact", confidence=0.7, sides=[fact, passage])
    case = SidesCase.model_validate({"id": "c", "fact": {"text": fact.text}, "passage": {"text": passage.text}})
    article, text = talk_page_draft(case, resolution, today=date(2026, 11, 28), home="en")
    assert article == "Eiffelturm"
    links = {str(link.title) for link in mwparserfromhell.parse(text).filter_wikilinks()}
    assert {":Eiffelturm#Bau", ":en:Eiffel Tower#Construction", ":en:WP:RSP"} <= links
    assert "[[:en:Eiffel Tower#Construction|Eiffel Tower (en)]]" in text
    assert "This note is written in English" in text and "translation by the model" in text
    assert "Contradictory inline" not in text  # an English Wikipedia template is not offered to another edition
    home = talk_page_draft(case, resolution.model_copy(update={"decision": "passage"}), today=date(2026, 11, 28))[1]
    assert "[[:de:Eiffelturm#Bau|Eiffelturm (de)]]" in home and "{{Contradictory inline|article=Eiffelturm" in home
    assert "This note is written in English" not in home
