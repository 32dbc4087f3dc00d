"""The oracle: a stand-in model that knows the answers of the shipped sample data, for trying
CLAIRE without a key and for plumbing runs. It is the mock OpenAI server answering from WikiCollide
files' gold labels, so every path runs end to end (check, scan, the web app, a patrol replay, eval,
sweeps) with judgements that are always right for the facts it knows.

    python -m claire.testing.oracle                  # the tour's facts (evals/data/tour.jsonl)
    python -m claire.testing.oracle DATASET.json ...  # and those of WikiCollide files

It extracts facts as the sentences of a passage (a sentence that states a known fact gives that
fact), the controller searches for the fact, reports a contradiction for a gold-inconsistent fact
(else explains a term, then finishes), the verifier scores 0.9 for gold-inconsistent facts and 0.1
for the others (facts it does not know included), and every other prompt gets a short note. It
prints its base URL and serves until interrupted. It is not a model: the figures of a run with it
measure the pipeline, never a judgement.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from claire.tasks.wikicollide.dataset import load_wikicollide
from claire.testing.doubles import kind_of
from claire.testing.http_server import serve_until_interrupted
from claire.testing.mock_openai import MockOpenAIServer
from claire.jobs.spans import sentences


TOUR = Path(__file__).resolve().parents[1] / "evals" / "data" / "tour.jsonl"
"""The facts of the keyless tour: those of docs/examples/Paris.txt and README's example check."""

_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {word for word in _WORD.findall(text.casefold()) if len(word) > 2}


def extracted_facts(passage: str, known: list[str]) -> list[tuple[str, str]]:
    """(fact, source sentence) for a passage: each sentence gives the known facts it states (most of
    their words are in it), else itself."""
    found = []
    for start, end in sentences(passage):
        sentence = " ".join(passage[start:end].split())
        words = _words(sentence)
        stated = [fact for fact in known if _words(fact) and len(_words(fact) & words) >= 0.75 * len(_words(fact))]
        found += [(fact, sentence) for fact in stated] or [(sentence, sentence)]
    return found


def oracle_responder(*datasets: Path):
    """A responder that knows every fact's gold label (matched by the fact's text) in ``datasets``
    (the tour's facts without any)."""
    gold = {claim.text.strip(): claim.label for dataset in (datasets or (TOUR,)) for claim in load_wikicollide(dataset)}

    def fact_of(body: dict[str, Any]) -> str:
        text = next((m.get("content") or "" for m in body["messages"] if "<fact>" in (m.get("content") or "")), "")
        return text.split("<fact>", 1)[-1].split("</fact>", 1)[0].strip()

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        kind, fact = kind_of(body), fact_of(body)
        if kind == "extract":
            prompt = body["messages"][-1]["content"]
            passage = prompt.split("<passage>", 1)[-1].split("</passage>", 1)[0]
            return {"content": "\n".join(f"<fact>{fact}</fact>\n<source>{source}</source>"
                                          for fact, source in extracted_facts(passage, list(gold)))}
        inconsistent = gold.get(fact) == "inconsistent"
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
            if not body.get("tools"):
                arguments = next(iter(call["arguments"].values()), "")
                return {"content": f'{call["name"]}("{arguments}")' if arguments else f'{call["name"]}()'}
            return {"tool_calls": [call]}
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
