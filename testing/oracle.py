"""An oracle model for plumbing runs: the mock OpenAI server answering from a WikiCollide file's
gold labels, so a sweep's cells can be compared on what they cost (calls, tokens, steps) with
judgements that are always right.

    python -m claire.testing.oracle DATASET.json

The controller searches for the fact, reports a contradiction for a gold-inconsistent fact (else
explains a term, then finishes), the verifier scores 0.9 for gold-inconsistent facts and 0.1 for
the others, and every other prompt gets a short note. It prints its base URL and serves until
interrupted. The figures of such a run measure the pipeline, never a model.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from claire.tasks.wikicollide.dataset import load_wikicollide
from claire.testing.doubles import kind_of
from claire.testing.mock_openai import MockOpenAIServer


def oracle_responder(dataset: Path):
    """A responder that knows every fact's gold label (matched by the fact's text)."""
    gold = {claim.text.strip(): claim.label for claim in load_wikicollide(dataset)}

    def fact_of(body: dict[str, Any]) -> str:
        text = next((m.get("content") or "" for m in body["messages"] if "<fact>" in (m.get("content") or "")), "")
        return text.split("<fact>", 1)[-1].split("</fact>", 1)[0].strip()

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        kind, fact = kind_of(body), fact_of(body)
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
    parser.add_argument("dataset", type=Path)
    options = parser.parse_args()
    with MockOpenAIServer(oracle_responder(options.dataset), model="oracle") as server:
        print(server.base_url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
