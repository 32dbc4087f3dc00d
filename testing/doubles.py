"""Test doubles for unit tests: a keyword retriever over hand-written blocks, a scripted model
that answers each CLAIRE prompt kind (controller, verifier, rankgpt, ...) by rule, and a package
installed the way pip installs one, naming systems in CLAIRE's entry-point group."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from claire.domain import Block, Claim, Passage
from claire.indexes.retriever import Hit
from claire.llm.answers import text_of
from claire.testing.mock_openai import template_of
from claire.testing.scripted import ScriptedRequest
from claire.tools.registry import argument_of

BLOCKS = [
    Block(id="eiffel-1", document_title="Eiffel Tower", section_title="History",
          content="The Eiffel Tower was completed in March 1889 for the World's Fair in Paris."),
    Block(id="eiffel-2", document_title="Eiffel Tower", section_title="Design",
          content="Gustave Eiffel's company designed and built the wrought-iron tower."),
    Block(id="paris-1", document_title="Paris", section_title="Landmarks",
          content="Paris is home to the Eiffel Tower, finished in 1890 according to this passage."),
    Block(id="fair-1", document_title="Exposition Universelle (1889)", section_title="Overview",
          content="The 1889 World's Fair in Paris opened with the newly completed Eiffel Tower as its entrance arch."),
    Block(id="texas-1", document_title="Paris, Texas", section_title="Landmarks",
          content="Paris, Texas has a small replica of the Eiffel Tower wearing a red cowboy hat."),
]


# A fact from the Paris article that the Eiffel Tower article contradicts (1890 vs 1889).
CLAIM = Claim(
    claim_id="paris-1",
    text="The Eiffel Tower was finished in 1890.",
    context=Passage(document_title="Paris", section_title="Landmarks", content=BLOCKS[2].content),
)

class KeywordRetriever:
    """Ranks blocks by shared words; honours exclude_title like the real retriever."""

    def __init__(self, blocks: list[Block] | None = None):
        self.blocks = list(blocks or BLOCKS)
        self.queries: list[tuple[str, str | None, int]] = []

    def search(self, query: str, *, exclude_title: str | None = None, k: int = 15, **_: Any) -> list[Hit]:
        """Blocks sharing words with the query, most shared first."""
        self.queries.append((query, exclude_title, k))
        words = set(re.findall(r"\w+", query.lower()))
        scored = []
        for block in self.blocks:
            if exclude_title and block.document_title == exclude_title:
                continue
            overlap = len(words & set(re.findall(r"\w+", block.embed_text().lower())))
            if overlap:
                scored.append((overlap, block))
        scored.sort(key=lambda pair: -pair[0])
        return [Hit(block=b, score=float(s), rank=i) for i, (s, b) in enumerate(scored[:k], start=1)]


# Prompt kinds by template name where the two differ; a variant keeps its template's kind except
# the FEVEROUS verifier and NLI prompts, which ask for other answers.
_KIND_OF_TEMPLATE = {"clarify_entity": "clarify", "fact_extraction": "extract",
                     "verifier.feverous": "feverous_verifier", "nli.feverous": "feverous_nli"}


def first_step(prompt: str) -> bool:
    """Whether a controller prompt shows no research yet (the paper controller's wording, or the
    FEVEROUS variant's)."""
    return "No actions have been taken yet" in prompt or "You have not taken any action yet" in prompt


def kind_of(request: ScriptedRequest | dict) -> str:
    """Which CLAIRE prompt a request (or an OpenAI request body) was rendered from: the template
    named by the client (``ScriptedRequest.prompt``, or ``body["claire_prompt"]`` that
    :class:`~claire.testing.mock_openai.MockOpenAIServer` fills in), else recognised by a phrase of
    the prompt's instructions (:func:`~claire.testing.mock_openai.template_of`)."""
    prompt = request.get("claire_prompt") if isinstance(request, dict) else request.prompt
    if not prompt:
        wire = (request.get("messages") or [] if isinstance(request, dict) else
                [{"role": message.type, "content": text_of(message)} for message in request.messages])
        prompt = template_of(wire)
    if not prompt:
        return "unknown"
    return _KIND_OF_TEMPLATE.get(prompt) or _KIND_OF_TEMPLATE.get(prompt.partition(".")[0]) or prompt.partition(".")[0]


def tool_call(name: str, argument: str | None = None, **arguments: Any) -> AIMessage:
    """An answer that calls tool ``name`` with its one argument (or with ``arguments``)."""
    if argument is not None:
        arguments = {argument_of(name) or "value": argument}
    return AIMessage(content="", tool_calls=[{"name": name, "args": arguments, "id": f"call_{name}", "type": "tool_call"}])


class ScriptedModel:
    """Answers by prompt kind: controller answers come from ``actions`` in order (then finish);
    the others from ``answers`` (a string, a callable of the request, or an exception)."""

    def __init__(self, actions: list[AIMessage | str | Exception] | None = None, **answers: Any):
        self.actions = list(actions or [])
        self.answers = {
            "verifier": "<restated_claim>r</restated_claim><analysis>[1] agrees.</analysis><inconsistency_score>0.1</inconsistency_score>",
            "rankgpt": "[1] > [2]",
            "clarify": "The fact means the Paris in France, not Paris, Texas.",
            "explain": "Wrought iron is a low-carbon iron alloy.",
            "nli": "<label>NOT ENOUGH INFO</label><reason>unrelated</reason>",
            "report_consistent": "Passage [1] supports it.",
            "report_inconsistent": "Passage [2] disagrees.",
        }
        self.answers.update(answers)
        self.seen: list[tuple[str, ScriptedRequest]] = []

    def __call__(self, request: ScriptedRequest) -> AIMessage | str | Exception:
        """The answer to one request, by its prompt kind."""
        kind = kind_of(request)
        self.seen.append((kind, request))
        if kind == "controller":
            return self.actions.pop(0) if self.actions else tool_call("finish")
        answer = self.answers.get(kind, "ok")
        return answer(request) if callable(answer) and not isinstance(answer, Exception) else answer

    def requests(self, kind: str) -> list[ScriptedRequest]:
        """The requests of one prompt kind, in order."""
        return [request for k, request in self.seen if k == kind]


def http_responder(verifier_score: float = 0.9, search_query: str = "Eiffel Tower completed 1889"):
    """A MockOpenAIServer responder playing a small, sensible model: search once, then report
    (or finish, in text mode, when no tools are offered), and judge with ``verifier_score``."""

    def respond(body: dict) -> dict:
        kind = kind_of(body)
        user = body["messages"][-1]["content"]
        if kind == "controller":
            first = first_step(user)
            # asked for a thought before each action (the paper's ReAct thought), it writes one
            thought = "The year is the detail to check." if "first think about" in body["messages"][0]["content"] else ""
            if body.get("tools"):
                if first:
                    return {"content": thought, "tool_calls": [{"name": "search", "arguments": {"query": search_query}}]}
                if "report_inconsistency(" in user:  # reported already: done
                    return {"content": thought, "tool_calls": [{"name": "finish", "arguments": {}}]}
                return {"content": thought,
                        "tool_calls": [{"name": "report_inconsistency", "arguments": {"evidence": "[1] gives a different year"}}]}
            return {"content": f'search("{search_query}")' if first else "finish()"}
        if kind == "verifier":  # the planted 1890 contradiction scores high, anything else low
            asked = next((m["content"] for m in body["messages"] if "<fact>" in (m.get("content") or "")), user)
            fact = asked.split("<fact>", 1)[-1].split("</fact>", 1)[0]  # a follow-up: the fact is further up
            score = verifier_score if "1890" in fact else 0.1
            return {"content": f"<restated_claim>r</restated_claim><analysis>[1] disagrees.</analysis><inconsistency_score>{score}</inconsistency_score>"}
        if kind == "rankgpt":
            return {"content": "[2] > [1] > [3]"}
        if kind == "nli":
            return {"content": "<label>REFUTES</label><reason>different year</reason>" if "1889" in user else "<label>NOT ENOUGH INFO</label><reason>unrelated</reason>"}
        if kind == "extract":
            return {"content": "<fact>The Eiffel Tower was completed in 1890.</fact>\n<fact>The Eiffel Tower is in Paris.</fact>"}
        return {"content": f"A short note for {kind}."}

    return respond


_STOP = {"that", "this", "with", "from", "were", "was", "have", "into", "than", "then", "they", "their", "which", "when",
         "there", "about", "after", "before", "also", "only", "over", "under", "until"}


def _claim_terms(claim: str) -> tuple[list[str], list[str]]:
    numbers = re.findall(r"\d[\d,.]*\d|\d", claim)
    words = [w for w in re.findall(r"[a-z]+", claim.lower()) if len(w) > 3 and w not in _STOP]
    return numbers, words


def judge_support(claim: str, passage: str) -> float:
    """A rule-of-thumb support score: every number of the claim must be in the passage and most of
    its longer words too (0.9); some words but a missing number (0.3); otherwise 0.05."""
    numbers, words = _claim_terms(claim)
    text = passage.lower()
    overlap = sum(1 for w in words if w in text) / len(words) if words else 0.0
    if all(n.lower() in text for n in numbers) and overlap >= 0.6:
        return 0.9
    return 0.3 if overlap >= 0.5 else 0.05


def citation_responder(expansions: list[str] | None = None):
    """A MockOpenAIServer responder for ``claire cite``: the support verifier answers by
    :func:`judge_support` over each numbered passage, quoting the best sentence; query expansion
    answers with ``expansions``. Other prompt kinds fall back to :func:`http_responder`."""
    fallback = http_responder()

    def respond(body: dict) -> dict:
        kind = kind_of(body)
        user = body["messages"][1]["content"]
        if kind == "cite_queries":
            return {"content": "\n".join(f"<query>{q}</query>" for q in expansions or ["no extra query"])}
        if kind != "cite_support":
            return fallback(body)
        claim = user.split("<claim>", 1)[-1].split("</claim>", 1)[0]
        passages = re.findall(r'<passage n="(\d+)">\n(.*?)\n</passage>', user, re.DOTALL)
        scored = sorted(((judge_support(claim, text), int(n), text) for n, text in passages), key=lambda t: (-t[0], t[1]))
        score, number, text = scored[0] if scored else (0.0, 1, "")
        sentences = re.split(r"(?<=[.!?])\s+", text)
        numbers, words = _claim_terms(claim)
        terms = [n.lower() for n in numbers] * 2 + words  # a matching number counts double
        best = max(sentences, key=lambda s: sum(1 for t in terms if t in s.lower())) if score >= 0.5 else "none"
        return {"content": f"<analysis>Passage [{number}] was compared with the claim.</analysis>\n"
                           f"<best_passage>{number}</best_passage>\n<supporting_sentence>{best}</supporting_sentence>\n"
                           f"<support_score>{score}</support_score>"}

    return respond


def installed_package(site: Path, name: str, systems: dict[str, str]) -> Path:
    """A package installed in ``site`` (its dist-info, as pip writes it) whose entry points name
    ``systems`` in the claire.systems group; ``site`` is returned, for sys.path."""
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[claire.systems]\n" + "".join(f"{k} = {v}\n" for k, v in systems.items()))
    return site
