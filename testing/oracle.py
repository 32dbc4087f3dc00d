"""The oracle: a stand-in model that knows the answers of the shipped sample data, for trying
CLAIRE without a key and for plumbing runs. It is the mock OpenAI server answering from WikiCollide
files' gold labels, so every path runs end to end (check, scan, the web app, a patrol replay, eval,
sweeps) with judgements that are always right for the facts it knows.

    python -m claire.testing.oracle                  # the tour's facts and the shipped sample's
    python -m claire.testing.oracle DATASET.json ...  # and those of WikiCollide files

It extracts facts as the sentences of a passage (a sentence that states a known fact gives that
fact), the controller searches for the fact, reports a contradiction for a gold-inconsistent fact
(else explains a term, then finishes), the verifier scores 0.9 for gold-inconsistent facts and 0.1
for the others (facts it does not know included), and every other prompt gets a short note.

Resolving a contradiction it answers from the text it is shown, never from a case's label, so it
stands in on cases it has never seen: the citation verifier finds the source sentence that gives
the side's distinguishing value (states), else the other side's (contradicts), else neither
(silent); asked whether a fact changes over time it looks for words of figures that change
(population, office holders, records…), and it lets both statements stand only when each names
a different explicit scope (city proper against metropolitan area, with against without, as of
different years). It
prints its base URL and serves until interrupted. It is not a model: the figures of a run with it
measure the pipeline, never a judgement.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from claire.languages import NAMES
from claire.resolving.values import gives_value
from claire.tasks.wikicollide.dataset import load_wikicollide
from claire.testing.doubles import kind_of
from claire.testing.http_server import serve_until_interrupted
from claire.testing.mock_openai import MockOpenAIServer
from claire.jobs.spans import sentences


TOUR = Path(__file__).resolve().parents[1] / "evals" / "data" / "tour.jsonl"
"""The facts of the keyless tour: those of docs/examples/Paris.txt and README's example check."""
SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "wikicollide_mini.json"
"""The WikiCollide-format sample a checkout ships (the docs' quick evaluation): known too when present."""

_WORD = re.compile(r"\w+")
_FIELD = re.compile(r"^\s*[^\s:.!?][^:.!?]{0,40}:\s+\S[^.!?]*$")
"""A line of an infobox: ``Key: value``, with no sentence in it."""


def _words(text: str) -> set[str]:
    return {word for word in _WORD.findall(text.casefold()) if len(word) > 2}


def extracted_facts(passage: str, known: list[str], language: str | None = None) -> list[tuple[str, str]]:
    """(fact, source sentence) for a passage (in ``language``'s sentences): each sentence gives the
    known facts it states (most of their words are in it), else itself."""
    found = []
    pieces: list[str] = []
    text: list[str] = []

    def running_text() -> None:
        joined = "\n".join(text)
        pieces.extend(" ".join(joined[start:end].split()) for start, end in sentences(joined, language))
        text.clear()

    for line in passage.splitlines():  # an infobox's "Key: value" lines are a fact each, not one long "sentence"
        if _FIELD.match(line):
            running_text()
            pieces.append(" ".join(line.split()))
        else:
            text.append(line)
    running_text()
    for sentence in pieces:
        words = _words(sentence)
        stated = [fact for fact in known if _words(fact) and len(_words(fact) & words) >= 0.75 * len(_words(fact))]
        found += [(fact, sentence) for fact in stated] or [(sentence, sentence)]
    return found


def _between(text: str, tag: str) -> str | None:
    found = re.search(f"<{tag}>(.*?)</{tag}>", text, re.DOTALL)
    return found.group(1).strip() if found else None


def support_answer(user: str) -> str:
    """The citation verifier's answer from the source text shown (see the module docstring): with a
    distinguishing value, states / contradicts / silent by the sentence that gives it; without one
    (``claire cite``), states when a sentence holds most of the claim's words."""
    claim = _between(user, "claim") or ""
    value, other = _between(user, "value"), _between(user, "other_value")
    passages = re.findall(r'<passage n="(\d+)">\n(.*?)\n</passage>', user, re.DOTALL)
    found: tuple[str, str, str] | None = None
    for number, text in passages:
        for start, end in sentences(text):
            sentence = text[start:end].strip()
            if value:
                if gives_value(sentence, value) and not (other and gives_value(sentence, other)):
                    found = found if found and found[0] == "states" else ("states", number, sentence)
                elif other and gives_value(sentence, other) and found is None:
                    found = ("contradicts", number, sentence)
            elif _words(claim) and len(_words(claim) & _words(sentence)) >= 0.75 * len(_words(claim)):
                found = found or ("states", number, sentence)
    stance, number, sentence = found or ("silent", passages[0][0] if passages else "1", "none")
    score = {"states": 0.9, "contradicts": 0.05, "silent": 0.1}[stance]
    return (f"<analysis>The source was read for the claim's detail.</analysis>\n<best_passage>{number}</best_passage>\n"
            f"<supporting_sentence>{sentence}</supporting_sentence>\n<stance>{stance}</stance>\n"
            f"<support_score>{score}</support_score>")


_CHANGING = re.compile(r"\b(population|inhabitants|residents|mayor|president|prime minister|chief executive|"
                       r"head coach|record|members|employees|visitors a year|as of|currently|incumbent|leader)\b", re.I)
_SCOPES = (r"city proper", r"metropolitan area", r"urban area", r"with its antenna", r"without its antenna",
           r"including [a-z]+", r"excluding [a-z]+", r"as of \d{4}", r"at launch", r"at its peak", r"originally")


def explain_answer(user: str) -> str:
    """The resolver's explanation request answered from the two statements shown."""
    statements = re.findall(r"<statement>(.*?)</statement>", user, re.DOTALL)
    changes = any(_CHANGING.search(s) for s in statements)
    scopes = [{m.group(0).lower() for pattern in _SCOPES for m in re.finditer(pattern, s, re.I)} for s in statements]
    both = len(scopes) == 2 and all(scopes) and scopes[0] != scopes[1]
    reason = ("each statement names a different scope: " + " / ".join(", ".join(sorted(s)) for s in scopes)
              if both else "they give different values for the same thing")
    return (f"<changes_over_time>{'yes' if changes else 'no'}</changes_over_time>\n"
            f"<both_can_stand>{'yes' if both else 'no'}</both_can_stand>\n<reason>{reason}</reason>\n"
            "<explanation>The sources of each side were read; the card lists which of them state which value "
            "and how reliable they are rated.</explanation>")


KEY = Path(__file__).resolve().parents[1] / "indexes" / "data" / "demo_key.jsonl"
"""The demo corpus's planted contradictions: the oracle names the conflict of a flagged fact from them."""


@lru_cache(maxsize=1)
def _planted() -> list[tuple[str, str, str, list[str], list[str]]]:
    """(the wrong block's article, its value, the right value, the contradicting blocks' contents in
    the key's order, the wrong block's sentences that state the wrong value) for each planted pair."""
    from claire.indexes.corpus import demo_corpus_path, read_corpus
    from claire.resolving.worklist import load_key

    blocks = {block.id: block for block in read_corpus(demo_corpus_path()).blocks}
    planted = []
    for pair in load_key(KEY):
        if pair.values is None or pair.wrong_block not in blocks:
            continue
        wrong = blocks[pair.wrong_block]
        stating = [" ".join(wrong.content[start:end].split()) for start, end in sentences(wrong.content)]
        giving = [sentence for sentence in stating if gives_value(sentence, pair.values.wrong)]
        if not giving and stating:  # the value is not in its words ("He also wrote…"): the sentence about it
            giving = [max(stating, key=lambda sentence: len(_words(sentence) & _words(pair.what)))]
        planted.append((wrong.document_title, pair.values.wrong, pair.values.right,
                        [blocks[b].content for b in pair.contradicting_blocks if b in blocks], giving))
    return planted


def planted_facts() -> dict[str, str]:
    """The sentences of the demo corpus that state a planted error, as facts the oracle knows to be
    inconsistent (so a corpus run with it flags every planted pair, whatever the sample's wording)."""
    return {sentence: "inconsistent" for *_, stating in _planted() for sentence in stating}


def conflict_answer(user: str) -> str:
    """The conflict of a flagged fact, named from the planted pairs (its article and the wrong value
    it states), as the document that is a contradicting block of that pair; none for a fact it
    does not know."""
    fact = _between(user, "fact") or ""
    title = (re.search(r'^From "(.*?)"', user, re.MULTILINE) or [None, ""])[1]
    documents = {" ".join(text.split()): number for number, text in
                 re.findall(r'<document n="(\d+)"[^>]*>\n(.*?)\n</document>', user, re.DOTALL)}
    sides = edition_sides(fact)
    if sides is not None:  # a pair across editions: the other side's first block the research read
        own, other = sides
        for content in other.contents:
            number = next((n for text, n in documents.items() if _shows(text, content) and _shows(content, text)), None)
            if number is not None:
                return (f"<conflicting_document>{number}</conflicting_document>\n<fact_value>{own.value}</fact_value>\n"
                        f"<document_value>{other.value}</document_value>")
    for article, wrong, right, contents, stating in _planted():
        if article != title or not (gives_value(fact, wrong) or " ".join(fact.split()) in stating):
            continue
        for content in contents:
            number = documents.get(" ".join(content.split()))
            if number is not None:
                return (f"<conflicting_document>{number}</conflicting_document>\n<fact_value>{wrong}</fact_value>\n"
                        f"<document_value>{right}</document_value>")
    return "<conflicting_document>none</conflicting_document>\n<fact_value></fact_value>\n<document_value></document_value>"


EDITIONS_KEY = Path(__file__).resolve().parents[1] / "indexes" / "data" / "demo_key_editions.jsonl"
"""The multilingual demo's planted contradictions across editions, with the sentences of each side
and their translations: the oracle flags a fact of either side only when the research showed it the
other side, and translates a side's sentence as the key does."""


@dataclass(frozen=True)
class _EditionSide:
    sentence: str  # the side's sentence that states its value
    value: str
    contents: tuple[str, ...]  # the side's blocks' texts (the wrong block; the contradicting ones, in the key's order)


@lru_cache(maxsize=1)
def _editions() -> list[tuple[_EditionSide, _EditionSide]]:
    """(wrong side, right side) of each pair of the multilingual key."""
    from claire.indexes.corpus import demo_corpus_path, demo_editions_path, read_corpus
    from claire.resolving.worklist import load_key

    if not EDITIONS_KEY.is_file():
        return []
    blocks = {b.id: b for path in (demo_corpus_path(), demo_editions_path()) for b in read_corpus(path).blocks}
    pairs = []
    for pair in load_key(EDITIONS_KEY):
        if pair.values is None or pair.wrong_block not in blocks:
            continue
        wrong = blocks[pair.wrong_block]
        right = [blocks[b] for b in pair.contradicting_blocks if b in blocks]
        said = {t.text: t for t in pair.translations}
        wrong_sentence = next((text for text in said if _words(text) <= _words(wrong.content)), "")
        right_sentence = next((text for text in said for block in right if _words(text) <= _words(block.content)), "")
        pairs.append((_EditionSide(wrong_sentence, pair.values.wrong, (wrong.content,)),
                      _EditionSide(right_sentence, pair.values.right, tuple(b.content for b in right))))
    return pairs


def _about(fact: str, side: _EditionSide) -> bool:
    """Whether a fact states a side: it gives the side's value and most of its words are the side's sentence's."""
    words = _words(fact)
    return (bool(side.sentence) and bool(words) and gives_value(fact, side.value)
            and len(words & _words(side.sentence)) >= 0.75 * len(words))


def _shows(prompt: str, content: str) -> bool:
    """Whether a prompt shows a passage (most of its words), whatever the prompt did to its quotes."""
    words = _words(content)
    return bool(words) and len(words & _words(prompt)) >= 0.9 * len(words)


def edition_sides(fact: str) -> tuple[_EditionSide, _EditionSide] | None:
    """(this side, the other side) of the multilingual pair a fact states one side of, if any."""
    for wrong, right in _editions():
        if _about(fact, wrong):
            return wrong, right
        if _about(fact, right):
            return right, wrong
    return None


def flagged_across_editions(fact: str, prompt: str) -> bool | None:
    """For a fact of a multilingual pair: whether the prompt shows the other side (None: no such fact)."""
    sides = edition_sides(fact)
    if sides is None:
        return None
    return any(_shows(prompt, content) for content in sides[1].contents)


def translate_answer(user: str) -> str:
    """The key's translation of the sentence shown, into the language asked for (none when unknown)."""
    from claire.languages import NAMES
    from claire.resolving.worklist import load_key

    sentence = " ".join((_between(user, "sentence") or "").split())
    target = (re.search(r"Translate it into (.+?)\.\s*$", user.strip()) or [None, ""])[1]
    codes = {name: code for code, name in NAMES.items()}
    for pair in load_key(EDITIONS_KEY) if EDITIONS_KEY.is_file() else []:
        for known in pair.translations:
            if " ".join(known.text.split()) == sentence and codes.get(target) == known.into:
                return f"<translation>{known.translation}</translation>"
    return "<translation></translation>"


def oracle_responder(*datasets: Path):
    """A responder that knows every fact's gold label (matched by the fact's text) in ``datasets``
    (the tour's facts without any)."""
    known = datasets or tuple(path for path in (TOUR, SAMPLE) if path.is_file())
    gold = {**planted_facts(), **{claim.text.strip(): claim.label for dataset in known for claim in load_wikicollide(dataset)}}

    def fact_of(body: dict[str, Any]) -> str:
        text = next((m.get("content") or "" for m in body["messages"] if "<fact>" in (m.get("content") or "")), "")
        return text.split("<fact>", 1)[-1].split("</fact>", 1)[0].strip()

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        kind, fact = kind_of(body), fact_of(body)
        if kind == "cite_support":
            return {"content": support_answer(body["messages"][-1]["content"])}
        if kind == "conflict":
            return {"content": conflict_answer(body["messages"][-1]["content"])}
        if kind == "resolve_explain":
            return {"content": explain_answer(body["messages"][-1]["content"])}
        if kind == "translate":
            return {"content": translate_answer(body["messages"][-1]["content"])}
        if kind == "extract":
            prompt = body["messages"][-1]["content"]
            passage = prompt.split("<passage>", 1)[-1].split("</passage>", 1)[0]
            named = re.search(r"The passage is written in ([^:]+):", prompt)
            language = {name: code for code, name in NAMES.items()}.get(named.group(1)) if named else None
            return {"content": "\n".join(f"<fact>{fact}</fact>\n<source>{source}</source>"
                                          for fact, source in extracted_facts(passage, list(gold), language))}
        across = flagged_across_editions(fact, "\n".join(str(m.get("content") or "") for m in body["messages"]))
        inconsistent = across if across is not None else gold.get(fact) == "inconsistent"
        if kind == "controller":
            prompt = body["messages"][-1]["content"]
            steps = prompt.count("Step ")
            tools = {t["function"]["name"] for t in body.get("tools") or []}
            if steps == 0:
                call = {"name": "search", "arguments": {"query": fact[:200]}}
            elif steps == 1 and inconsistent and "report_inconsistency(" not in prompt:
                call = {"name": "report_inconsistency", "arguments": {"evidence": "[1] states otherwise"}}
            elif steps == 1 and "explain" in tools:
                call = {"name": "explain", "arguments": {"topic": fact.split()[0] if fact else "topic"}}
            elif "finish" in tools:
                call = {"name": "finish", "arguments": {}}
            else:
                call = {"name": "search", "arguments": {"query": f"{fact[:150]} ({steps})"}}
            # asked for a thought before each action (the paper's ReAct thought), it writes one
            thought = (f"After {steps} step{'s' if steps != 1 else ''}, {call['name']} is what the fact needs next."
                       if "first think about" in (body["messages"][0].get("content") or "") else "")
            if not body.get("tools"):
                arguments = next(iter(call["arguments"].values()), "")
                action = f'{call["name"]}("{arguments}")' if arguments else f'{call["name"]}()'
                return {"content": f"{thought}\n{action}".strip()}
            return {"content": thought, "tool_calls": [call]} if thought else {"tool_calls": [call]}
        if kind == "verifier":
            score = 0.9 if inconsistent else 0.1
            return {"content": f"<analysis>[1] compared.</analysis><inconsistency_score>{score}</inconsistency_score>"}
        if kind == "nli":
            label = "REFUTES" if inconsistent else "NOT ENOUGH INFO"
            return {"content": f"<label>{label}</label><reason>oracle</reason>"}
        if kind == "rankgpt":
            return {"content": "[1] > [2]"}
        return {"content": "A short note."}

    return respond


_DEFAULT: Any = None


def oracle_answer(body: dict[str, Any]) -> dict[str, Any]:
    """The oracle's answer to one request, knowing the tour's facts and the shipped sample (a
    module-level responder, for a server in a process of its own)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = oracle_responder()
    return _DEFAULT(body)


def main() -> None:
    """Serve the oracle until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", type=Path, nargs="*", help="WikiCollide files whose facts it knows (default: the tour's)")
    parser.add_argument("--port", type=int, default=0, help="the port to listen on (default: a free one)")
    options = parser.parse_args()
    serve_until_interrupted(MockOpenAIServer(oracle_responder(*options.datasets), model="oracle", port=options.port),
                            "http://127.0.0.1:{port}/v1",
                            "the oracle: a stand-in that knows the sample's answers, not a model (Ctrl-C stops it)")


if __name__ == "__main__":
    main()
