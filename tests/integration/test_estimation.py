"""Rate estimation over real indexes: uniform reproducible index sampling, and an estimate run end
to end through the CLI over a real on-disk index and a local OpenAI-compatible server, then
reviewed and re-estimated from the decisions alone."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import numpy as np
import pytest
from scipy.stats import chisquare

from claire.studies.rate_statistics import estimate_rate
from claire.indexes.corpus import demo_corpus_path, read_corpus
from claire.domain import Block
from claire.indexes.sampling import sample_index
from claire.indexes.index_meta import IndexMeta
from claire.indexes.catalog import open_index
from claire.testing.cli import run_claire
from claire.testing.doubles import http_responder, kind_of
from claire.testing.mock_openai import MockOpenAIServer


# -- sampling -----------------------------------------------------------------------------
DIM = 8


def _toy_vector(text: str) -> np.ndarray:
    vector = np.zeros(DIM, dtype=np.float32)
    for word in text.split():
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % DIM] += 1.0
    return vector / max(np.linalg.norm(vector), 1e-6)


@pytest.fixture(params=["edge", "server"])
def generated_index(request, tmp_path):
    """60 blocks in 12 articles of 1 to 8 blocks, in the embedded engine or qdrant-client local mode."""
    sizes = [1, 2, 3, 4, 5, 6, 7, 8, 8, 6, 5, 5]
    blocks = [Block(id=f"a{a}-b{b}", document_title=f"Article {a}", section_title="S", content=f"text {a} {b} words")
              for a, size in enumerate(sizes) for b in range(size)]
    assert len(blocks) == 60
    url = f"file:{tmp_path / 'qdrant'}" if request.param == "server" else None
    store = open_index("gen", root=tmp_path / "idx", url=url,
                       create_meta=IndexMeta(name="", embedder="toy", embedder_model="toy", dim=DIM))
    store.upsert(blocks, np.stack([_toy_vector(b.embed_text()) for b in blocks]))
    store.finalize()
    yield store, blocks
    store.close()


def test_sampling_is_reproducible_from_the_seed(generated_index):
    store, blocks = generated_index
    first = sample_index(store, 10, seed=42)
    again = sample_index(store, 10, seed=42)
    assert first.units == again.units and len(set(first.units)) == 10
    assert [b["id"] for b in first.blocks] == first.units
    assert first.corpus_blocks == 60 and first.corpus_articles == 12
    assert sample_index(store, 10, seed=43).units != first.units
    assert set(sample_index(store, 500, seed=1).units) == {b.id for b in blocks}  # more than the corpus: all of it
    articles = sample_index(store, 3, seed=5, unit="article")
    assert articles.units == sample_index(store, 3, seed=5, unit="article").units
    by_title = Counter(b.document_title for b in blocks)
    assert len(articles.blocks) == sum(by_title[t] for t in articles.units)
    assert {b["document_title"] for b in articles.blocks} == set(articles.units)


def test_sampling_is_uniform_over_blocks_and_over_articles(generated_index):
    store, blocks = generated_index
    counts = Counter(unit for seed in range(300) for unit in sample_index(store, 10, seed=seed).units)
    observed = [counts[b.id] for b in blocks]
    assert sum(observed) == 3000
    assert chisquare(observed).pvalue > 0.001  # expected 50 each; a biased sampler fails this
    # articles are drawn uniformly too, whatever their size
    titles = Counter(t for seed in range(300) for t in sample_index(store, 3, seed=seed, unit="article").units)
    assert len(titles) == 12 and chisquare(list(titles.values())).pvalue > 0.001
    # a check that the test can fail: weighting articles by their blocks is far from uniform
    by_block = Counter(b["document_title"] for seed in range(300) for b in sample_index(store, 10, seed=seed).blocks)
    assert chisquare([by_block[f"Article {a}"] for a in range(12)]).pvalue < 1e-6


# -- end to end ---------------------------------------------------------------------------
def extracting_responder():
    """The test model: each block yields three facts about its article, one of them dated 1890
    (which the verifier flags); everything else as ``http_responder`` plays it."""
    base = http_responder()

    def respond(body: dict) -> dict:
        if kind_of(body) == "extract":
            user = body["messages"][-1]["content"]
            head = "Title: " if "Title: " in user else "Article: "  # the paper's extraction, or the practical one
            title = user.split(head, 1)[1].split("\n", 1)[0].split(" > ")[0].strip()
            digest = hashlib.md5(user.encode()).hexdigest()[:6]
            return {"content": f"<fact>{title} is described in passage {digest}.</fact>\n"
                               f"<fact>{title} was first recorded in 1890 according to passage {digest}.</fact>\n"
                               f"<fact>{title} appears in the demo corpus as passage {digest}.</fact>"}
        return base(body)

    return respond


@pytest.fixture(scope="module")
def small_index(tmp_path_factory):
    """A real MiniLM index of 40 demo-corpus blocks, each article given a category."""
    root = tmp_path_factory.mktemp("estimate")
    blocks = read_corpus(demo_corpus_path()).blocks[:40]
    corpus = root / "corpus.jsonl"
    with corpus.open("w") as handle:
        for block in blocks:
            category = "Buildings" if len(block.document_title) % 2 else "Places"
            handle.write(json.dumps({**block.model_dump(exclude_none=True), "categories": [category, "Demo"]}) + "\n")
    cache = root / "cache"
    built = run_claire("index", "build", str(corpus), "--name", "small", cache=cache)
    assert built.returncode == 0, built.stderr
    return cache


@pytest.mark.slow  # one of the slowest end-to-end runs: left out of the quick lane
def test_estimate_end_to_end_then_review_and_reestimate_from_decisions(small_index, tmp_path):
    out = tmp_path / "est"
    with MockOpenAIServer(extracting_responder()) as server:
        args = ("estimate", "--index", "small", "--sample", "12", "--blocks", "6", "--seed", "7", "--out", str(out),
                "--base-url", server.base_url, "--no-cache", "--set", "retrieval.rerank=false", "--json")
        first = run_claire(*args, cache=small_index)
        assert first.returncode == 0, first.stderr
        summary = json.loads(first.stdout)
        plan = json.loads((out / "plan.json").read_text())
        assert plan["corpus_blocks"] == 40 and plan["blocks_drawn"] == 6
        sampled = [json.loads(line) for line in (out / "sample.jsonl").read_text().splitlines()]
        assert len(sampled) == 6 and all(b["categories"][1] == "Demo" for b in sampled)
        claims = [json.loads(line) for line in (out / "claims.jsonl").read_text().splitlines()]
        assert len(claims) == 12 and len({c["claim_id"] for c in claims}) == 12  # 12 of the 18 extracted facts
        flagged_facts = [c for c in claims if "1890" in c["fact"]]
        assert summary["checked"] == 12 and summary["flagged"] == len(flagged_facts) > 0
        assert summary["flagged_rate"]["count"] == len(flagged_facts) and summary["confirmed_rate"] is None
        assert summary["extrapolation"]["flagged"]["facts_per_unit"] == 3.0
        assert summary["extrapolation"]["flagged"]["corpus_facts"] == 120.0
        assert {c["category"] for c in summary["categories"]} >= {"Demo"}
        assert next(c for c in summary["categories"] if c["category"] == "Demo")["checked"] == 12
        report = (out / "estimate.md").read_text()
        assert "## By category" in report and "## Extrapolation to the corpus" in report and "1890" in report
        assert "categories.png" in report and (out / "categories.png").stat().st_size > 1000

        calls = server.calls
        again = run_claire(*args, cache=small_index)  # everything is in the run directory: nothing is asked again
        assert again.returncode == 0, again.stderr
        assert server.calls == calls and json.loads(again.stdout)["checked"] == 12

        other = run_claire("estimate", "--index", "small", "--sample", "12", "--blocks", "6", "--seed", "8", "--out", str(out),
                           "--base-url", server.base_url, cache=small_index)
        assert other.returncode == 2 and "seed" in other.stderr and "another --out" in other.stderr
        assert server.calls == calls

    # review in the terminal: accept the first, reject the second with a comment, quit
    reviewed = run_claire("review", str(out), "--reviewer", "tester", cache=small_index, stdin="a\n\nr\nsame year elsewhere\nq\n")
    assert reviewed.returncode == 0, reviewed.stderr
    assert "1 accepted, 1 rejected" in reviewed.stdout and "verifier analysis" in reviewed.stdout
    decisions = [json.loads(line) for line in (out / "reviews.jsonl").read_text().splitlines()]
    assert [d["decision"] for d in decisions] == ["accept", "reject"] and decisions[1]["comment"] == "same year elsewhere"
    assert all(d["reviewer"] == "tester" for d in decisions)
    updated = json.loads((out / "estimate.json").read_text())  # the review session re-reported
    assert (updated["reviewed"], updated["confirmed"]) == (2, 1)
    assert updated["confirmed_rate"]["count"] == 1 and updated["confirmed_rate"]["total"] == 12
    assert updated["confirmed_rate_is_lower_bound"] == (len(flagged_facts) > 2)

    # resumable: the next session starts with the undecided ones; decisions from elsewhere count too
    rest = [f for f in updated["flagged_facts"] if f["decision"] is None]
    web = tmp_path / "web-export.jsonl"
    web.write_text("".join(json.dumps({"fact": f["fact"], "decision": "accept", "comment": "from the web app"}) + "\n"
                           for f in rest))
    final = run_claire("estimate", "--from", str(out), "--decisions", str(web), "--json", cache=small_index)
    assert final.returncode == 0, final.stderr
    result = json.loads(final.stdout)
    assert result["reviewed"] == len(flagged_facts) and result["confirmed"] == len(flagged_facts) - 1
    assert not result["confirmed_rate_is_lower_bound"]
    assert result["confirmed_rate"]["text"] == estimate_rate(len(flagged_facts) - 1, 12).paper_form()
    assert result["extrapolation"]["confirmed"]["inconsistent"] == pytest.approx(120 * (len(flagged_facts) - 1) / 12)
    nothing = run_claire("review", str(out), cache=small_index, stdin="")
    assert nothing.returncode == 0 and f"{len(flagged_facts) - 2} to review" in nothing.stdout


def test_estimate_bad_inputs_are_clear_errors(tmp_path):
    cases = [
        (("estimate",), "choose one"),
        (("estimate", "--confirmed", "3"), "--total"),
        (("estimate", "--confirmed", "30", "--total", "7"), "between 0 and the total"),
        (("estimate", "--sample-size", "--margin", "2"), "margin"),
        (("estimate", "--from", str(tmp_path)), "not an estimate or audit run directory"),
        (("estimate", "--index", "x", "--sample", "5"), "--out"),
        (("review", str(tmp_path)), "predictions.jsonl"),
    ]
    for args, message in cases:
        result = run_claire(*args, cache=tmp_path / "cache")
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr, (args, result.stderr)


async def test_a_failed_extraction_is_kept_and_retried_by_the_next_run(small_index, tmp_path, clean_env):
    from claire.config import load_config
    from claire.errors import ClaireError
    from claire.studies.estimate import run_estimate

    out = tmp_path / "est"

    def config(url: str):
        return load_config(None, {"llm.base_url": url, "llm.cache": False, "llm.max_attempts": 1, "llm.api_key": "k",
                                  "retrieval.path": str(small_index / "indexes"), "retrieval.index": "small",
                                  "retrieval.rerank": False})

    with MockOpenAIServer(lambda body: {"fault": "500"}) as down:
        with pytest.raises(ClaireError, match="no facts could be extracted"):
            await run_estimate(config=config(down.base_url), sample=4, seed=3, out_dir=out, units=3, show_progress=False)
    failed = [json.loads(line) for line in (out / "facts.jsonl").read_text().splitlines()]
    assert len(failed) == 3 and all(r["error"] for r in failed) and not (out / "claims.jsonl").exists()
    with (out / "facts.jsonl").open("a") as handle:
        handle.write('{"block_id": "torn')  # a kill in the middle of a write
    with MockOpenAIServer(extracting_responder()) as up:
        summary = await run_estimate(config=config(up.base_url), sample=4, seed=3, out_dir=out, units=3, show_progress=False)
        extractions = [r for r in up.requests if kind_of(r) == "extract"]
    assert len(extractions) == 3 and summary["checked"] == 4  # the same three blocks, extracted this time
    assert summary["extrapolation"]["flagged"]["units_sampled"] == 3


