"""`claire audit` end to end on small files in the published formats (tests/fixtures/
feverous_eiffel_dev.jsonl, ambigqa_dev_light.json, wikicollide_mini.json) and on a malformed one,
over a real on-disk index and a local OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from claire.indexes.corpus import demo_corpus_path, read_corpus
from claire.indexes.retriever import build_index
from claire.testing.cli import run_claire
from claire.testing.doubles import http_responder
from claire.testing.mock_openai import MockOpenAIServer

FIXTURES = Path(__file__).parents[1] / "fixtures"


def statement_responder():
    """``http_responder`` plus the question-to-statement prompt: question and answer in one sentence."""
    base = http_responder()

    def respond(body: dict) -> dict:
        if "quiz question" in body["messages"][0]["content"]:
            user = body["messages"][-1]["content"]
            question = user.split("<question>", 1)[1].split("</question>", 1)[0].strip().rstrip("?")
            answer = user.split("<answer>", 1)[1].split("</answer>", 1)[0].strip()
            return {"content": f"<statement>The answer to “{question}” is {answer}.</statement>"}
        return base(body)

    return respond


@pytest.fixture(scope="module")
def audit_cache(tmp_path_factory):
    """A real MiniLM index of the demo corpus's first 60 blocks, as the cache's default index folder."""
    cache = tmp_path_factory.mktemp("audit-cache")
    build_index(read_corpus(demo_corpus_path()).blocks[:60], name="audit", embedder="minilm",
                root=cache / "indexes", show_progress=False)
    return cache


def test_feverous_audit_end_to_end_resumes_for_free(audit_cache, tmp_path):
    dataset = FIXTURES / "feverous_eiffel_dev.jsonl"
    out = tmp_path / "audit"
    with MockOpenAIServer(statement_responder()) as server:
        args = ("audit", "--dataset", str(dataset), "--format", "feverous", "--index", "audit", "--out", str(out),
                "--base-url", server.base_url, "--no-cache", "--set", "retrieval.rerank=false", "--json")
        first = run_claire(*args, cache=audit_cache)
        assert first.returncode == 0, first.stderr
        summary = json.loads(first.stdout)
        assert (summary["facts"], summary["checked"], summary["flagged"]) == (2, 2, 1)  # the two SUPPORTS claims
        assert summary["flagged_rate"]["text"] == "50.0% ± 91.1% [0.0%, 100.0%]"
        assert summary["flagged_facts"][0]["fact"].startswith("The Eiffel Tower was completed in 1890")
        claims = [json.loads(line) for line in (out / "claims.jsonl").read_text().splitlines()]
        assert claims[0]["document_title"] == "Eiffel Tower" and claims[0]["claim_id"] == "feverous-24435"
        report = (out / "audit.md").read_text()
        assert "Audit of feverous_eiffel_dev.jsonl (feverous)" in report and "FEVEROUS claims labelled SUPPORTS" in report
        table = report.split("## Facts, most suspicious first", 1)[1]
        assert table.index("1890") < table.index("Gustave Eiffel's firm")  # most suspicious first
        # the evidence page is the claim's own article: search never returns it
        searched = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
        eiffel = next(p for p in searched if p["claim_id"] == "feverous-24435")
        passages = [x for t in eiffel["trace"] if t["action_name"] == "search" for x in t["action_output"]]
        assert passages and all(p["document_title"] != "Eiffel Tower" for p in passages)
        calls = server.calls
        again = run_claire(*args, cache=audit_cache)
        assert again.returncode == 0 and server.calls == calls


def test_ambigqa_audit_turns_questions_into_statements(audit_cache, tmp_path):
    dataset = FIXTURES / "ambigqa_dev_light.json"
    out = tmp_path / "audit"
    with MockOpenAIServer(statement_responder()) as server:
        result = run_claire("audit", "--dataset", str(dataset), "--format", "ambigqa", "--index", "audit", "--out", str(out),
                            "--base-url", server.base_url, "--no-cache", "--set", "retrieval.rerank=false", cache=audit_cache)
        assert result.returncode == 0, result.stderr
    assert "1 flagged" in result.stdout and "wrote" in result.stdout
    summary = json.loads((out / "audit.json").read_text())
    assert (summary["checked"], summary["flagged"]) == (3, 1)
    assert summary["flagged_facts"][0]["fact"] == "The answer to “When was the eiffel tower finished” is 1890."
    statements = [json.loads(line) for line in (out / "statements.jsonl").read_text().splitlines()]
    assert sorted(s["item_id"] for s in statements) == ["-4469503464110108318", "7701#0", "7701#1"]
    # people confirm the flag; the audit re-reports from the decision alone
    (out / "reviews.jsonl").write_text(json.dumps({"claim_id": "ambigqa--4469503464110108318", "decision": "accept"}) + "\n")
    rescored = run_claire("estimate", "--from", str(out), "--json", cache=audit_cache)
    assert rescored.returncode == 0, rescored.stderr
    assert json.loads(rescored.stdout)["confirmed_rate"]["text"] == "33.3% ± 70.1% [0.0%, 100.0%]"


def test_wikicollide_audit_and_bad_input(audit_cache, tmp_path):
    with MockOpenAIServer(statement_responder()) as server:
        result = run_claire("audit", "--dataset", str(FIXTURES / "wikicollide_mini.json"), "--format", "wikicollide",
                            "--index", "audit", "--out", str(tmp_path / "wc"), "--limit", "2", "--base-url", server.base_url,
                            "--no-cache", "--set", "retrieval.rerank=false", "--json", cache=audit_cache)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["checked"] == 2  # the first two claims labelled consistent
        bad = tmp_path / "bad.jsonl"
        bad.write_text('{"id": 1, "claim": "x", "label": "MAYBE", "evidence": []}\n')
        failed = run_claire("audit", "--dataset", str(bad), "--format", "feverous", "--index", "audit", "--out",
                            str(tmp_path / "bad"), "--base-url", server.base_url, cache=audit_cache)
        assert failed.returncode == 2 and "bad.jsonl:1: field 'label'" in failed.stderr
        assert "Traceback" not in failed.stderr and not (tmp_path / "bad" / "predictions.jsonl").exists()
        unknown = run_claire("audit", "--dataset", str(bad), "--format", "fever", "--out", str(tmp_path / "x"), cache=audit_cache)
        assert unknown.returncode == 2 and "unknown --format" in unknown.stderr
