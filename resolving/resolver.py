"""Which side of a contradiction is right: each side's evidence gathered, one documented rule, a
card and a talk-page draft.

:class:`Resolver` answers the ``sides`` task (a :class:`~claire.tasks.sides.records.SidesCase`: a
fact, the passage that contradicts it, other passages, the cited pages) and is what ``claire
resolve`` and every surface run after a flagged check. For each side it gathers:

- **its cited sources, read** (:class:`~claire.sources.reading.SourceReader`: the case's own text,
  a sources file, the cache or a guarded fetch) and **judged** by the citation verifier that
  ``claire cite`` uses (:meth:`CitationChecker.verify`, told the side's distinguishing value and
  the other side's): states it, silent or contradicts, with the sentence quoted — kept only when it
  stands word for word in the source. A source without a URL (a book) is rated by its publisher
  alone, its support ``unknown``; a page that cannot be read says why ("could not read: …");
- **how reliable each source is**: its tier on the Perennial sources list;
- **independent agreement**: the other passages that give the side's value, counted once per
  distinct source (the domain they cite, else their article), so copies of one blog are one vote;
- **recency**, only for facts that change over time (the case says so, else the model).

Then :func:`~claire.resolving.rule.decide` applies the rule (its signals and weights, ``resolve.*``
settings, documented in ``docs/resolve.md``), the LLM writes the explanation and says whether *both can stand*
(``prompts/resolve_explain.j2``); it never picks a winner. A winner always has a verified
supporting source; with none on either side the answer is *cannot tell*, saying what is missing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import quote

from claire.agent.citation_checker import CitationChecker
from claire.agent.system import SystemParts
from claire.resolving.talk_page import talk_page_draft
from claire.settings import ResolveConfig
from claire.domain import Assessment, Claim, Evidence, Passage, Reference, ScoreKind
from claire.errors import ClaireError
from claire.languages import name_of
from claire.indexes.registry import Searcher
from claire.ingestion.web_docs import source_blocks
from claire.llm.answers import tag_text
from claire.llm.client import ChatClient
from claire.usage import track_usage
from claire.prompts import PromptLibrary
from claire.prompts.answers import Answer
from claire.sources.reading import SourcePage, SourceReader
from claire.sources.reliability import Perennial, Rating
from claire.resolving.cases import case_from_check, name_conflict
from claire.resolving.rule import decide
from claire.resolving.values import distinguishing_values, gives_value, source_key, tokens
from claire.sources.urls import page_key, without_credentials
from claire.tasks.citations.records import Citation, CitedSource, ScoredSource
from claire.tasks.sides.records import (
    FlagCase,
    OtherPassage, Resolution, Side, SideReport, SidesCase, SourceJudgement, Support,
)

log = logging.getLogger(__name__)


# -- links ----------------------------------------------------------------------------------------
def article_link(side: Side) -> str | None:
    """The side's article: a permanent link to its revision when known, else its URL or a link by title."""
    if side.revision_id:
        return f"https://en.wikipedia.org/w/index.php?oldid={side.revision_id}"
    if side.url:
        return side.url
    if side.document_title:
        return "https://en.wikipedia.org/wiki/" + quote(side.document_title.replace(" ", "_"), safe="/:(),'")
    return None


def _base_title(title: str) -> tuple[str, str]:
    name, _, qualifier = title.partition(" (")
    return name.strip().casefold(), qualifier.rstrip(")").strip().casefold()


def same_subject(passage: OtherPassage, fact: str, values: tuple[str, str], sides: SidesCase) -> bool:
    """Whether another passage speaks of what the contradiction is about, not only shares its
    words: it is not from an article named like one side's but told apart by a qualifier ("John
    Williams (guitarist)" beside "John Williams"), and it shares at least two of the fact's words
    besides the values themselves."""
    name, qualifier = _base_title(passage.document_title)
    for side in (sides.fact, sides.passage):
        other_name, other_qualifier = _base_title(side.document_title)
        if name == other_name and qualifier != other_qualifier:
            return False
    value_words = {t.casefold() for value in values for t in tokens(value)}
    words = {t.casefold() for t in tokens(fact)} - value_words
    have = {t.casefold() for t in tokens(passage.content)}
    return len(words & have) >= min(2, len(words))


@dataclass(frozen=True)
class Readings:
    """The model's reading of a contradiction: whether both statements can stand (and why), whether
    the fact changes over time (None: it did not say), and its explanation for the editor."""

    both: bool = False
    changes: bool | None = None
    reason: str | None = None
    explanation: str | None = None


# -- the resolver -----------------------------------------------------------------------------------
class Resolver:
    """Resolves contradictions (see the module docstring). A System like the others
    (``agent.system = "resolve"``) that answers the ``sides`` task."""

    name = "resolve"
    score_kind: ScoreKind = "probability"
    answers_task: ClassVar[str] = "sides"
    reads: ClassVar[tuple[str, ...]] = ("llm.", "retrieval.", "cite.", "prompts.", "resolve.")

    def __init__(self, *, llm: ChatClient, retriever: Searcher | None, prompts: PromptLibrary, checker: CitationChecker,
                 settings: ResolveConfig, reader: SourceReader | None = None, perennial: Perennial | None = None,
                 mode: str = "hybrid", language: str = "en") -> None:
        self.llm = llm
        self.language = language  # the edition of a side whose passage names none
        self.retriever = retriever
        self.prompts = prompts
        self.checker = checker
        self.settings = settings
        self.reader = reader or SourceReader(settings)
        self.perennial = perennial or Perennial.load(settings.reliability)
        self.mode = mode

    @classmethod
    def from_config(cls, parts: SystemParts) -> "Resolver":
        """The resolver over the run's LLM and index, with the citation checker's verifier."""
        return cls(llm=parts.llm, retriever=parts.retriever, prompts=parts.prompts,
                   checker=CitationChecker.from_config(parts), settings=parts.config.resolve,
                   mode=parts.config.retrieval.mode, language=parts.config.retrieval.language)

    # -- each source ---------------------------------------------------------------------------
    async def judge_source(self, side: Side, reference: Reference, given: dict[str, SourcePage], value: str,
                           other_value: str) -> SourceJudgement:
        """One cited source read, rated and judged."""
        rating: Rating = self.perennial.rate(url=reference.url, site=reference.site)
        judgement = SourceJudgement(reference=reference, tier=rating.tier, tier_detail=f"{rating.tier} ({rating.label()})" if rating.source else rating.label(),
                                    date=reference.date)
        if not reference.url:
            return judgement.model_copy(update={"note": "no URL to read: rated by its publisher alone"})
        page = given.get(page_key(reference.url) or "")
        if page is None and given:  # a case that gives its pages reads no other
            page = SourcePage(url=reference.url, error="could not read: the page is not among the case's sources")
        page = page or await self.reader.read(reference.url)
        judgement.date = judgement.date or page.date
        if not page.readable:
            return judgement.model_copy(update={"support": Support.UNREADABLE, "note": page.error or "could not read"})
        blocks = source_blocks(page.text, url=reference.url, title=page.title or reference.title)
        citation = Citation(claim_id="resolve", claim=side.text, title=side.document_title, section=side.section_title,
                            context=side.content, source=CitedSource(text=page.text, title=page.title or reference.title,
                                                                     url=reference.url))
        passages = await asyncio.to_thread(self.checker.best_passages, f"{side.text} {value}", blocks)
        scored = await self.checker.verify(citation, ScoredSource(url=reference.url, title=citation.source.title,
                                                                  original=True), passages,
                                           value=value or None, other_value=other_value or None)
        if scored.score is None:
            return judgement.model_copy(update={"note": scored.error or "the verifier gave no answer"})
        support = Support(scored.stance or Support.SILENT)
        note = None
        if support in (Support.STATES, Support.CONTRADICTS) and not scored.sentence:
            note = "the verifier quoted no sentence that stands in the source: not counted"
        return judgement.model_copy(update={"support": support, "quote": scored.sentence, "score": scored.score,
                                            "note": note})

    async def judge_safely(self, side: Side, reference: Reference, given: dict[str, SourcePage], value: str,
                           other_value: str) -> SourceJudgement:
        """:meth:`judge_source`, where any failure (a malformed URL, a broken reader) becomes "could not
        read" for this source alone: one bad citation never stops the resolve."""
        if reference.url and "@" in reference.url:  # a password in a cited URL is never kept, shown or sent
            reference = reference.model_copy(update={"url": without_credentials(reference.url)})
        try:
            return await self.judge_source(side, reference, given, value, other_value)
        except (asyncio.CancelledError, ClaireError):
            raise
        except Exception as error:
            log.warning("source %r: %s", reference.url, error)
            reason = (str(error).strip().splitlines() or [""])[0][:160] or type(error).__name__
            return SourceJudgement(reference=reference, support=Support.UNREADABLE,
                                   note=f"could not read: {type(error).__name__}: {reason}")

    async def side_report(self, name: str, side: Side, given: dict[str, SourcePage], value: str,
                          other_value: str) -> SideReport:
        """One side's sources judged (at most ``resolve.max_sources``)."""
        references = list({r.key(): r for r in side.citations}.values())[: self.settings.max_sources]
        judgements = await asyncio.gather(*[self.judge_safely(side, r, given, value, other_value) for r in references])
        return SideReport(side=name, text=side.text, value=value, document_title=side.document_title,  # type: ignore[arg-type]
                          section_title=side.section_title, link=article_link(side), block_id=side.block_id,
                          sentence=side.sentence,
                          sources=list(judgements))

    # -- agreement -----------------------------------------------------------------------------
    async def others(self, case: SidesCase, values: tuple[str, str]) -> list[OtherPassage]:
        """The case's other passages; for a case from a check, the passages its research read and
        one search per side's value (none from either side's article)."""
        if case.others is not None or self.retriever is None or not self.settings.agreement_search:
            return list(case.others if case.others is not None else case.read)
        found: dict[str, OtherPassage] = {f"read-{n}": p for n, p in enumerate(case.read)}
        own = {case.fact.document_title, case.passage.document_title}
        for side, value in ((case.fact, values[0]), (case.passage, values[1])):
            if not value:
                continue
            hits = await asyncio.to_thread(self.retriever.search, side.text, exclude_title=side.document_title,
                                           k=10, mode=self.mode)  # type: ignore[arg-type]
            for hit in hits:
                block = hit.block
                if block.document_title not in own:
                    found.setdefault(block.id, OtherPassage(document_title=block.document_title, content=block.content,
                                                            citations=list(block.citations or [])))
        return list(found.values())

    @staticmethod
    def agreeing(value: str, other_value: str, others: list[OtherPassage], *, about: str = "",
                 sides: SidesCase | None = None) -> list[str]:
        """The distinct sources among ``others`` that give ``value`` (and not the other value) about
        the same thing (:func:`same_subject`): a passage counts by the site it cites (else by its
        article), and an article votes once. Each is named as the card shows it."""
        keys: list[str] = []
        said: list[str] = []  # each as the card names it: the site, and the article that cites it
        articles: set[str] = set()
        for passage in others:
            if passage.document_title in articles:
                continue
            if sides is not None and not same_subject(passage, about, (value, other_value), sides):
                continue
            if gives_value(passage.content, value) and not gives_value(passage.content, other_value):
                articles.add(passage.document_title)
                key = source_key(passage.citations[0] if passage.citations else None, passage.document_title)
                if key not in keys:
                    keys.append(key)
                    said.append(f"the article {passage.document_title} (no source cited)"
                                if key == passage.document_title.strip().lower()
                                else f"{key} (cited in {passage.document_title})")
        return said

    # -- the explanation -------------------------------------------------------------------------
    async def explain(self, fact: SideReport, passage: SideReport) -> Readings:
        """The model's explanation and its two readings (changes over time, both can stand)."""
        def view(report: SideReport, label: str) -> dict[str, Any]:
            return {"label": label, "text": report.text, "document_title": report.document_title,
                    "section_title": report.section_title, "value": report.value or report.text,
                    "agreeing": len(report.agreeing),
                    "sources": [{"title": j.reference.title or j.reference.url or "untitled", "site": j.reference.site,
                                 "tier": j.tier, "support": j.support, "quote": j.quote} for j in report.sources]}

        prompt = self.prompts.render("resolve_explain", fact=view(fact, "The fact"), passage=view(passage, "The passage"))

        def read(answer: str | Answer) -> Readings | None:
            def field(name: str) -> str | None:
                return getattr(answer, name, None) if isinstance(answer, Answer) else tag_text(answer, name)

            both = (field("both_can_stand") or "").strip().lower()
            changes = (field("changes_over_time") or "").strip().lower()
            if not both.startswith(("yes", "no")):
                return None
            return Readings(both=both.startswith("yes"), changes=changes.startswith("yes") if changes else None,
                            reason=field("reason"), explanation=field("explanation"))

        asked = await self.llm.ask(prompt, read, follow_up=lambda problem, detail="": self.prompts.render(
            "follow_up", wanted="both_can_stand", problem=problem, detail=detail))
        if asked.value is None:  # the rule still decides; only the model's readings are missing
            log.warning("no explanation: %s", asked.failure("the explainer", "both_can_stand"))
        return asked.value or Readings()

    # -- across languages ----------------------------------------------------------------------
    async def translate(self, case: SidesCase, fact: SideReport, passage: SideReport) -> None:
        """For two sides in different editions: each report says its language, and the side the
        reader cannot be expected to read gets the model's translation (``prompts/translate.j2``),
        which the card shows beside the sentence as written, marked as a translation: the passage,
        into the fact's language; but a fact of another edition checked against a passage of the
        home edition (``retrieval.language``), into the home language."""
        fact_language = case.fact.language or self.language
        passage_language = case.passage.language or self.language
        if fact_language == passage_language:
            return
        fact.language, passage.language = fact_language, passage_language
        if passage_language == self.language:
            side, report, target = case.fact, fact, passage_language
        else:
            side, report, target = case.passage, passage, fact_language
        sentence = side.sentence or side.text
        prompt = self.prompts.render("translate", sentence=sentence, source_language=name_of(report.language),
                                     target_language=name_of(target), value=report.value or sentence)

        def read(answer: str | Answer) -> str | None:
            text = getattr(answer, "translation", None) if isinstance(answer, Answer) else tag_text(answer, "translation")
            return " ".join(text.split()) if text and text.strip() else None

        asked = await self.llm.ask(prompt, read, follow_up=lambda problem, detail="": self.prompts.render(
            "follow_up", wanted="translation", problem=problem, detail=detail))
        if asked.value is None:  # the card shows the sentence as written, without a translation
            log.warning("no translation: %s", asked.failure("the translator", "translation"))
            return
        report.translation, report.translated_into = asked.value, target

    @staticmethod
    def unrated_abroad(report: SideReport) -> list[str]:
        """What the card says of a side in another edition whose sources the Perennial list does not
        rate: that list is English Wikipedia's, so a source missing from it is simply not listed."""
        if report.language in (None, "en") or not any(j.tier == "not listed" for j in report.sources):
            return []
        return [f"the {report.side}'s sources ({name_of(report.language)} edition) are rated only as English "
                "Wikipedia's Perennial sources list rates them; a source not on it is simply not listed there"]

    # -- the whole resolve -----------------------------------------------------------------------
    async def case_of_flag(self, flagged: FlagCase) -> SidesCase | None:
        """The case a flagged check makes, as every surface builds it (:mod:`claire.resolving.cases`):
        the model names the conflict from the research's answer; the passages read are the others."""
        found = flagged.flag
        fact = found.fact
        claim = Claim(claim_id=flagged.claim_id, text=fact.text, context=Passage(
            document_title=fact.document_title, section_title=fact.section_title, content=fact.content, url=fact.url,
            id=fact.block_id, revision_id=fact.revision_id, citations=list(fact.citations)))
        evidence = [Evidence(n=p.n, id=p.block_id or f"{flagged.claim_id}-{p.n}", document_title=p.document_title,
                             section_title=p.section_title, content=p.content, citations=list(p.citations))
                    for p in found.evidence]
        assessment = Assessment(claim_id=flagged.claim_id, system="check", claim_text=fact.text, score=1.0,
                                threshold=0.5, evidence=evidence, reasoning=found.analysis, reported=list(found.reported))
        conflict = await name_conflict(claim, assessment, self.llm, self.prompts)
        case = case_from_check(claim, assessment, None, conflict)
        if case is None:
            return None
        return case.model_copy(update={"claim_id": flagged.claim_id, "others": list(case.read), "sources": flagged.sources,
                                       "time_varying": flagged.time_varying, "label": flagged.label})

    async def assess(self, case: SidesCase | FlagCase) -> Resolution:
        """Gather each side's evidence, apply the rule, explain it and draft the talk-page note (for a
        flagged check, after naming its conflict)."""
        started = time.perf_counter()
        with track_usage() as usage:
            if isinstance(case, FlagCase):
                built = await self.case_of_flag(case)
                if built is None:
                    return Resolution(claim_id=case.claim_id, error="no passage in conflict could be named",
                                      usage=usage.to_dict(), latency_s=round(time.perf_counter() - started, 3))
                case = built
            values = case.values or distinguishing_values(case.fact.text, case.passage.text)
            given = {page_key(s.url) or s.url: SourcePage(url=s.url, title=s.title, site=s.site, date=s.date,
                                                                text=s.text, origin="file") for s in case.sources}
            fact, passage = await asyncio.gather(
                self.side_report("fact", case.fact, given, values[0], values[1]),
                self.side_report("passage", case.passage, given, values[1], values[0]))
            await self.translate(case, fact, passage)
            others = await self.others(case, values)
            fact.agreeing = self.agreeing(values[0], values[1], others, about=case.fact.text, sides=case)
            passage.agreeing = self.agreeing(values[1], values[0], others, about=case.fact.text, sides=case)
            readings = await self.explain(fact, passage) if self.settings.explain else Readings()
        time_varying = case.time_varying if case.time_varying is not None else bool(readings.changes)
        decision, confidence, reasons, missing = decide(
            fact, passage, time_varying=time_varying, both_can_stand=readings.both,
            both_reason=readings.reason, weights=self.settings)
        missing += [note for report in (fact, passage) for note in self.unrated_abroad(report)]
        resolution = Resolution(
            claim_id=case.claim_id, decision=decision, confidence=confidence, reasons=reasons, missing=missing,
            explanation=readings.explanation, both_reason=readings.reason if readings.both else None,
            time_varying=time_varying, values_from=case.values_from or ("given" if case.values else "word overlap"),
            sides=[fact, passage], usage=usage.to_dict(),
            latency_s=round(time.perf_counter() - started, 3))
        resolution.talk_page_article, resolution.talk_page = talk_page_draft(case, resolution, home=self.language)
        return resolution
