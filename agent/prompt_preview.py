"""What a prompt template says when it is filled in, for a person to read (``claire prompts``).

A :class:`PreviewSample` holds everything the templates are filled from: a claim with its
paragraph, numbered passages, entity clarifications, background notes, research steps, and the
citation fields of the citations task. It comes from a real record (:func:`record_sample`: a
WikiCollide, FEVEROUS or citations file, one record picked by its id; a WikiCollide record's own
research trace gives the passages, notes and steps) or from the built-in example
(:func:`builtin_sample`, written for this project). :func:`preview_values` fills a template's
declared inputs from a sample the way the systems do (the controller's tools, step budget and
tool-calling mode from the configuration), and :func:`render_preview` renders one template, with a
chosen variant or the configuration's, into its chat messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claire.agent.actions import canonical_name
from claire.agent.controller import shown_tools
from claire.agent.runtime import prompt_library
from claire.config import Config
from claire.domain import Claim, Evidence, Passage
from claire.errors import ConfigError, DatasetError
from claire.ingestion.web_docs import source_blocks
from claire.prompts import Prompt, PromptError, library
from claire.tools.registry import tools_for
from claire.tools.search import passage_line

CITATION_TEMPLATES = ("cite_queries", "cite_support")
"""Templates whose ``context`` is the text around a cited claim, not a passage."""


@dataclass
class PreviewSample:
    """What the templates are filled from, and where it came from (``origin``, ``notes``)."""

    claim: Claim
    documents: list[Evidence] = field(default_factory=list)
    clarifications: list[dict[str, str]] = field(default_factory=list)
    explanations: list[dict[str, str]] = field(default_factory=list)
    history: list[dict[str, str]] = field(default_factory=list)  # research steps {action, argument, observation}
    query: str = ""
    source: dict[str, Any] = field(default_factory=dict)  # the cited source: {title, url}
    source_passages: list[Evidence] = field(default_factory=list)
    citation_context: str = ""
    origin: str = "the built-in example"
    notes: list[str] = field(default_factory=list)
    task: str | None = None  # the task of the record's file (None: the built-in example)


def _evidence(n: int, title: str, section: str, content: str, url: str | None = None) -> Evidence:
    return Evidence(n=n, block_id=f"preview-{n}", document_title=title, section_title=section, content=content, url=url)


def builtin_sample() -> PreviewSample:
    """An example written for this project: a fact about the Eiffel Tower's completion, passages
    that date it otherwise, a similarly named town, a note and two research steps."""
    claim = Claim(
        claim_id="example",
        text="The Eiffel Tower was completed in 1890.",
        context=Passage(document_title="Paris", section_title="Landmarks",
                        content="The Eiffel Tower on the Champ de Mars was completed in 1890 for a world's fair and "
                                "is now the most visited monument of the city."),
    )
    documents = [
        _evidence(1, "Eiffel Tower", "History",
                  "Work on the tower began in January 1887 and was finished in March 1889, weeks before the "
                  "Exposition Universelle opened in Paris."),
        _evidence(2, "Exposition Universelle (1889)", "Overview",
                  "The world's fair of 1889 in Paris marked the centenary of the storming of the Bastille. Its "
                  "entrance arch was the newly built Eiffel Tower."),
        _evidence(3, "Paris, Texas", "Landmarks",
                  "A small copy of the Eiffel Tower, topped with a red cowboy hat, stands in Paris, Texas."),
    ]
    clarifications = [{"entity": "Paris (capital of France)",
                       "text": "The fact means the tower in Paris, France [1][2]; the copy in Paris, Texas [3] is "
                               "another structure in a town of the same name."}]
    explanations = [{"topic": "Exposition Universelle",
                     "text": "The name of several world's fairs held in Paris (1855, 1867, 1878, 1889, 1900); the "
                             "one of 1889 is the fair the Eiffel Tower was built for."}]
    history = [
        {"action": "search", "argument": "Eiffel Tower completion date",
         "observation": "\n".join(passage_line(document) for document in documents[:2]),
         "thought": "The fact gives a year of completion; other articles may date the tower otherwise."},
        {"action": "clarify_entity", "argument": "Paris (capital of France)", "observation": clarifications[0]["text"],
         "thought": "Passage [2] names a Paris in Texas, so which Paris each passage means needs settling."},
    ]
    source_text = ("The Eiffel Tower was designed by the company of Gustave Eiffel. Work began in January 1887 "
                   "and the tower was completed in March 1889.\n\nIts lifts opened to visitors a few weeks later.")
    return PreviewSample(
        claim=claim, documents=documents, clarifications=clarifications, explanations=explanations, history=history,
        query="Eiffel Tower completion date", source={"title": "Eiffel Tower: a short history",
                                                      "url": "https://example.org/eiffel-tower-history"},
        source_passages=_source_passages(source_text, url="https://example.org/eiffel-tower-history",
                                         title="Eiffel Tower: a short history", limit=3),
        citation_context=claim.context.content,
    )


def _source_passages(text: str, *, url: str | None, title: str, limit: int, words: int = 100) -> list[Evidence]:
    """A cited source's first passages, numbered as the citation verifier numbers them."""
    blocks = source_blocks(text, url=url, title=title, max_words=words)[:limit]
    return [Evidence(n=n, block_id=block.id, document_title=block.document_title, section_title=block.section_title,
                     content=block.content, url=block.url) for n, block in enumerate(blocks, start=1)]


def _split_spec(spec: str) -> tuple[Path, str]:
    path, sep, record_id = spec.rpartition(":")
    if not sep or not path or not record_id:
        raise ConfigError(f"--record expects FILE:ID (a data file and a record's id), got {spec!r}")
    file = Path(path).expanduser()
    if not file.is_file():
        raise ConfigError(f"--record: {file} is not a file")
    return file, record_id


def _pick(items: list[Any], record_id: str, key: Any, file: Path) -> Any:
    found = next((item for item in items if str(key(item)) == record_id), None)
    if found is None:
        ids = [str(key(item)) for item in items]
        shown = ", ".join(ids[:8]) + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")
        raise ConfigError(f"--record: no record with id {record_id!r} in {file} (its ids: {shown})")
    return found


def record_sample(spec: str, *, passages_per_source: int = 3, passage_words: int = 100) -> PreviewSample:
    """The sample of one real record, ``FILE:ID``: the file is read as WikiCollide, else FEVEROUS,
    else citations records (each in its published format), and the record picked by its id."""
    from claire.tasks.citations.records import load_citations
    from claire.tasks.feverous.dataset import load_feverous_claims
    from claire.tasks.wikicollide.dataset import load_records

    file, record_id = _split_spec(spec)
    problems = []
    for task, loader in (("wikicollide", load_records), ("feverous", load_feverous_claims), ("citations", load_citations)):
        try:
            records = loader(file)
        except DatasetError as error:
            problems.append(f"as {task}: {str(error).splitlines()[0][:160]}")
            continue
        if task == "wikicollide":
            return _wikicollide_sample(_pick(records, record_id, lambda r: r.claim.claim_id, file), file)
        if task == "feverous":
            claim = _pick(records, record_id, lambda c: c.claim_id, file)
            return PreviewSample(claim=claim, query=claim.text, origin=f"record {record_id} of {file.name} (FEVEROUS)",
                                 notes=["a FEVEROUS record carries no passage text (only element ids): the passages "
                                        "are left empty"], task="feverous")
        citation = _pick(records, record_id, lambda c: c.claim_id, file)
        passages = _source_passages(citation.source.text, url=citation.source.url, title=citation.source.title,
                                    limit=passages_per_source, words=passage_words)
        claim = Claim(claim_id=citation.claim_id, text=citation.claim,
                      context=Passage(document_title=citation.title, section_title=citation.section,
                                      content=citation.context))
        return PreviewSample(
            claim=claim, documents=passages, query=citation.claim, source_passages=passages,
            source={"title": citation.source.title or citation.source.url or "cited source", "url": citation.source.url},
            citation_context=citation.context, origin=f"record {record_id} of {file.name} (citations)",
            notes=[f"the cited source's first {len(passages)} passages (the checker shows the ones most related to "
                   "the claim)"], task="citations")
    raise ConfigError(f"--record: {file} is not a WikiCollide, FEVEROUS or citations file ({'; '.join(problems)})")


def _wikicollide_sample(record: Any, file: Path) -> PreviewSample:
    """A WikiCollide record with its own research trace: its searches' passages (numbered in the
    order first met), its clarifications and notes, and its steps as the controller's history."""
    claim = record.to_claim()
    documents: list[Evidence] = []
    numbers: dict[tuple[str, str, str], int] = {}
    sample = PreviewSample(claim=claim, origin=f"record {claim.claim_id} of {file.name} (WikiCollide)", task="wikicollide")
    for item in record.agent_trace:
        action = canonical_name(item.action_name)
        argument = "" if item.action_argument is None else str(item.action_argument)
        if action == "search":
            lines = []
            for passage in item.action_output if isinstance(item.action_output, list) else []:
                if not isinstance(passage, dict):
                    continue
                key = (str(passage.get("document_title") or ""), str(passage.get("section_title") or ""),
                       str(passage.get("content") or ""))
                seen = key in numbers
                if not seen:
                    numbers[key] = len(documents) + 1
                    documents.append(_evidence(numbers[key], *key, url=passage.get("url")))
                lines.append(passage_line(documents[numbers[key] - 1], seen=seen))
            sample.query = sample.query or argument
            sample.history.append({"action": action, "argument": argument, "thought": getattr(item, "thought", None) or "",
                                   "observation": "\n".join(lines) or "No passages found for this query."})
        elif action in ("clarify_entity", "explain"):
            text = str(item.action_output or "")
            notes = sample.clarifications if action == "clarify_entity" else sample.explanations
            notes.append({"entity" if action == "clarify_entity" else "topic": argument, "text": text})
            sample.history.append({"action": action, "argument": argument, "observation": text,
                                   "thought": getattr(item, "thought", None) or ""})
        else:  # a report or the end of the research: no observation the controller reads afterwards
            break
    sample.documents = documents
    sample.query = sample.query or claim.text
    sample.source_passages = documents[:3]
    first = documents[0] if documents else None
    sample.source = {"title": first.document_title if first else claim.context.document_title,
                     "url": first.url if first else claim.context.url}
    sample.citation_context = claim.context.content
    if not documents:
        sample.notes.append("the record's trace holds no passages")
    return sample


def preview_values(name: str, inputs: tuple[str, ...], sample: PreviewSample, config: Config,
                   steps: int = 0) -> dict[str, Any]:
    """The values of template ``name``'s declared inputs, from ``sample`` and the configuration;
    the controller's history holds the sample's first ``steps`` research steps."""
    claim = sample.claim
    history = sample.history[:max(steps, 0)]
    citation = name.partition(".")[0] in CITATION_TEMPLATES
    first_clarified = sample.clarifications[0]["entity"] if sample.clarifications else claim.context.document_title
    first_topic = sample.explanations[0]["topic"] if sample.explanations else claim.context.section_title
    values: dict[str, Any] = {
        "claim": claim.text,
        "context": sample.citation_context if citation else claim.context,
        "documents": sample.documents,
        "passages": sample.source_passages if citation else sample.documents,
        "clarifications": sample.clarifications,
        "explanations": sample.explanations,
        "history": history,
        "steps_left": max(config.agent.max_steps - len(history), 1),
        "tools": shown_tools(tools_for(config.agent.tools, finish=config.agent.finish_action)),
        "text_actions": config.llm.tool_calling == "text",
        "finish": config.agent.finish_action,
        "thoughts": config.agent.thoughts,
        "entity": first_clarified or claim.text,
        "topic": first_topic or claim.text,
        "query": sample.query or claim.text,
        "max_chars": config.retrieval.rerank_max_chars,
        "title": claim.context.document_title,
        "section": claim.context.section_title,
        "text": claim.context.content or claim.text,
        "source": sample.source or {"title": claim.context.document_title, "url": claim.context.url},
        "max_queries": config.cite.max_queries,
        "question": "In which city does the Eiffel Tower stand?",
        "answer": "Paris",
        "analysis": "The fact gives one value; document [1] gives another for the same thing.",
        "reported": [],
        "wanted": "inconsistency_score",
        "problem": "unreadable",
        "detail": "",
        "value": None,
        "other_value": None,
        "language": "",  # the passage's language, named only for a block of another edition
        "sentence": sample.documents[0].content if sample.documents else claim.text,
        "source_language": "German",
        "target_language": "English",
        "fact": {"label": "The fact", "text": claim.text, "document_title": claim.context.document_title,
                 "section_title": claim.context.section_title, "value": claim.text, "agreeing": 0, "sources": []},
        "passage": {"label": "The passage", "text": sample.documents[0].content if sample.documents else claim.text,
                    "document_title": sample.documents[0].document_title if sample.documents else "",
                    "section_title": sample.documents[0].section_title if sample.documents else "",
                    "value": "", "agreeing": 0,
                    "sources": [{"title": (sample.source or {}).get("title") or "a cited source", "site": "",
                                 "tier": "not listed", "support": "states",
                                 "quote": sample.source_passages[0].content if sample.source_passages else None}]},
    }
    if sample.documents:
        values["document"] = sample.documents[0]
    chosen: dict[str, Any] = {}
    for key in inputs:
        if key not in values:
            if key == "document":
                raise ConfigError(f"template {name} reads one retrieved passage, and {sample.origin} has none: "
                                  "use a WikiCollide or citations record, or the built-in example")
            raise PromptError(f"template {name} declares an input '{key}' that a preview cannot fill")
        chosen[key] = values[key]
    return chosen


@dataclass
class Preview:
    """One template rendered for reading: the messages and what they were made from."""

    template: str
    variant: str | None
    path: Path
    inputs: tuple[str, ...]
    output: str
    origin: str
    notes: list[str]
    messages: Prompt


def _library_for(config: Config, name: str, variant: str | None, sample: PreviewSample) -> Any:
    """The prompt library to render with: the configuration's (with the record's task's variants
    when the record comes from another agent task), ``variant`` chosen for ``name`` when given."""
    if sample.task == "feverous" and config.agent.task != "feverous":
        config = config.with_overrides({"agent.task": "feverous"})
    prompts = prompt_library(config)
    if variant is None:
        return prompts
    variants = dict(prompts.variants)
    if variant in ("", "default", "paper"):
        variants.pop(name, None)
    else:
        known = prompts.variant_names(name)
        if variant not in known:
            raise PromptError(f"template {name} has no variant {variant!r}; its variants: "
                              f"{', '.join(known) if known else 'none'} (or default)")
        variants[name] = variant
    return library(prompts.set_name, variants, prompts.max_value_chars, prompts.structured)


def render_preview(name: str, config: Config, *, variant: str | None = None, sample: PreviewSample | None = None,
                   steps: int = 0) -> Preview:
    """Render template ``name`` (``verifier``, or ``verifier.lenient`` naming a variant) from a
    sample (the built-in example by default)."""
    template, _, named_variant = name.partition(".")
    if named_variant:
        if variant is not None and variant != named_variant:
            raise ConfigError(f"{name} names the variant {named_variant!r} and --variant asks for {variant!r}: give one")
        variant = named_variant
    sample = sample or builtin_sample()
    prompts = _library_for(config, template, variant, sample)
    known = prompts.names()
    if template not in known:
        raise PromptError(f"no prompt template {template!r}; the templates: {', '.join(known)}")
    info = prompts.info(template)
    values = preview_values(prompts.file_name(template)[: -len(".j2")], info.inputs, sample, config, steps)
    messages = prompts.render(template, **values)
    return Preview(template=template, variant=prompts.variants.get(template), path=info.path, inputs=info.inputs,
                   output=info.output, origin=sample.origin, notes=list(sample.notes), messages=messages)
