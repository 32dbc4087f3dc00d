"""The web app's API over real HTTP: uvicorn on 127.0.0.1, a local OpenAI-compatible server and the
real on-disk demo index. Checks, scans, live events, reviews and their WikiCollide export,
restart-and-resume, the token, size limits, CORS and clear 404s."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from claire.agent.runtime import open_retrieval
from claire.config import load_config
from claire.tasks.wikicollide.dataset import load_wikicollide
from claire.testing.doubles import http_responder, kind_of
from claire.testing.mock_openai import MockOpenAIServer
from claire.web.app import create_app
from claire.web.settings import ServeSettings
from claire.web.serve import ServerThread

SECRET = "sk-web-secret-abcdef0123456789"
PASSAGE = "The Eiffel Tower was completed in 1890. It stands in Paris and is made of wrought iron."


@pytest.fixture(scope="module")
def index_root(tmp_path_factory, copy_demo_index):
    return copy_demo_index(tmp_path_factory.mktemp("web-indexes"))


def make_config(index_root, base_url, **more):
    return load_config(None, {"llm.base_url": base_url, "llm.cache": False, "llm.api_key": SECRET,
                              "retrieval.rerank": False, "retrieval.path": str(index_root), "llm.max_attempts": 1, **more})


@pytest.fixture(scope="module")
def llm_server():
    with MockOpenAIServer(http_responder()) as server:
        yield server


@pytest.fixture(scope="module")
def retriever(index_root, llm_server):
    searcher = open_retrieval(make_config(index_root, llm_server.base_url))
    yield searcher
    searcher.close()


@pytest.fixture(scope="module")
def app_server(tmp_path_factory, index_root, llm_server, retriever):
    settings = ServeSettings(data_dir=tmp_path_factory.mktemp("web-data"), concurrency=4, max_body_bytes=50_000,
                             cors_origins=["http://127.0.0.1:9"])
    with ServerThread(create_app(make_config(index_root, llm_server.base_url), settings, retriever=retriever)) as server:
        yield server


def wait_done(client: httpx.Client, path: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = client.get(path).json()
        if data["status"] in ("done", "error"):
            return data
        time.sleep(0.1)
    raise AssertionError(f"{path} did not finish: {data}")


def read_events(client: httpx.Client, path: str) -> list[tuple[str, dict]]:
    events, kind = [], None
    with client.stream("GET", path, timeout=60) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("event:"):
                kind = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                events.append((kind, json.loads(line.split(":", 1)[1])))
                if kind == "end":
                    break
    return events


def test_check_returns_the_cli_assessment_and_streams_its_steps(app_server):
    client = httpx.Client(base_url=app_server.url, timeout=30)
    created = client.post("/api/check", json={"fact": "The Eiffel Tower was completed in 1890.", "title": "Paris",
                                              "section": "Landmarks"})
    assert created.status_code == 202
    job = created.json()["id"]
    events = read_events(client, f"/api/check/{job}/events")
    steps = [data["action_name"] for kind, data in events if kind == "step"]
    assert steps[:2] == ["search", "report_inconsistency"] and "verifier" in steps
    assert events[-1] == ("end", {"status": "done", "error": None})
    data = wait_done(client, f"/api/check/{job}")
    assessment = data["assessment"]
    assert assessment["verdict"] == "inconsistent" and assessment["score"] == 0.9
    assert assessment["report"]["consistent"] and assessment["report"]["inconsistent"]  # the two-sided report
    assert "Paris" not in {e["document_title"] for e in assessment["evidence"]}
    assert [s["action_name"] for s in data["steps"]] == steps
    assert SECRET not in json.dumps(data) + client.get("/api/health").text + client.get("/").text


def test_scan_gives_spans_scores_and_progress_then_reviews_export_as_wikicollide(app_server, tmp_path):
    client = httpx.Client(base_url=app_server.url, timeout=30)
    job = client.post("/api/scan", json={"title": "Paris", "text": PASSAGE}).json()["id"]
    kinds = [kind for kind, _ in read_events(client, f"/api/scan/{job}/events")]
    assert kinds[0] == "status" and "facts" in kinds and kinds.count("fact") == 2 and kinds[-1] == "end"
    data = wait_done(client, f"/api/scan/{job}")
    assert data["progress"] == {"total": 2, "done": 2, "errors": 0, "checked": 2, "flagged": 1}
    flagged = next(f for f in data["facts"] if f["verdict"] == "inconsistent")
    assert PASSAGE[flagged["start"]:flagged["end"]] == "The Eiffel Tower was completed in 1890."
    assert flagged["score"] == 0.9 and flagged["assessment"]["evidence"] and flagged["cited"] == [1]
    assert "trace" not in flagged["assessment"]
    traced = client.get(f"/api/scan/{job}", params={"view": "trace"}).json()
    assert [t["action_name"] for t in traced["facts"][flagged["index"]]["assessment"]["trace"]][0] == "search"
    summary = client.get(f"/api/scan/{job}", params={"view": "summary"}).json()
    assert summary["progress"] == data["progress"] and all(f["assessment"] is None for f in summary["facts"])
    assert summary["facts"][flagged["index"]]["score"] == 0.9
    other = next(f for f in data["facts"] if f is not flagged)
    assert other["start"] is not None and "Eiffel Tower" in PASSAGE[other["start"]:other["end"]]  # the sentence naming it

    assert client.post("/api/reviews", json={"scan_id": job, "fact": flagged["fact"], "decision": "accept",
                                             "comment": "1889 per the tower's article"}).status_code == 200
    client.post("/api/reviews", json={"job_id": job, "fact": str(other["index"]), "decision": "accept"})
    client.post("/api/reviews", json={"job_id": job, "fact": str(other["index"]), "decision": "reject"})  # replaces
    reviews = client.get("/api/reviews", params={"job_id": job}).json()["reviews"]
    assert sorted(r["decision"] for r in reviews) == ["accept", "reject"]
    again = client.get(f"/api/scan/{job}").json()
    assert next(f for f in again["facts"] if f["index"] == flagged["index"])["review"]["decision"] == "accept"

    export = client.get("/api/reviews/export")
    assert "attachment" in export.headers["content-disposition"]
    path = tmp_path / "reviews.json"
    path.write_text(export.text)
    records = {c.text: c for c in load_wikicollide(path) if c.claim_id.startswith(job)}
    assert records[flagged["fact"]].label == "inconsistent"  # accepted: the verdict stands
    assert records[other["fact"]].label == "inconsistent"  # rejected "consistent": the editor says otherwise
    assert records[flagged["fact"]].context.document_title == "Paris"


def test_recent_scans_are_listed_newest_first(app_server):
    client = httpx.Client(base_url=app_server.url, timeout=30)
    first = client.post("/api/scan", json={"title": "Eiffel Tower", "text": "The Eiffel Tower was completed in 1890."}).json()["id"]
    wait_done(client, f"/api/scan/{first}")
    second = client.post("/api/scan", json={"title": "Paris", "text": "The Eiffel Tower was completed in 1890."}).json()["id"]
    wait_done(client, f"/api/scan/{second}")
    listed = client.get("/api/scan", params={"limit": 2}).json()
    assert [scan["id"] for scan in listed] == [second, first] and listed[0]["title"] == "Paris"
    assert listed[0]["status"] == "done" and listed[0]["checked"] == listed[0]["facts"] >= 1 and "text" not in listed[0]
    assert client.get("/api/scan", params={"limit": 0}).status_code == 422


def test_search_endpoint_shape_and_article_lookup(app_server):
    client = httpx.Client(base_url=app_server.url, timeout=30)
    found = client.post("/api/search", json={"query": "Eiffel Tower completion", "k": 5, "exclude_title": "Eiffel Tower"})
    results = found.json()["results"]  # the contract the CLI's search-endpoint client reads
    assert len(results) == 5 and [r["rank"] for r in results] == [1, 2, 3, 4, 5]
    assert all({"id", "document_title", "section_title", "content"} <= set(r["block"]) and "score" in r for r in results)
    assert "Eiffel Tower" not in {r["block"]["document_title"] for r in results}
    assert "Eiffel Tower" in client.get("/api/articles", params={"q": "Eiffel Tower"}).json()["titles"]
    article = client.get("/api/article", params={"title": "Eiffel Tower"}).json()
    assert "1889" in article["text"]
    # the whole article, in reading order, with its headings: a filtered read, not a search
    text = article["text"]
    assert article["blocks"] == 10 and text.startswith("The Eiffel Tower is a wrought-iron lattice tower")
    headings = [line for line in text.splitlines() if line.startswith("==")]
    assert headings[:3] == ["== History ==", "=== Origins ===", "=== Construction ==="]
    assert text.index("=== Origins ===") < text.index("== Design ==") < text.index("== Replicas ==")
    assert client.get("/api/article", params={"title": "eiffel_Tower"}).json()["title"] == "Eiffel Tower"  # as a wiki reads it
    assert client.get("/api/article", params={"title": "eiffel tower"}).status_code == 404  # case counts after the first letter


def test_unknown_ids_bad_input_oversize_body_and_cors(app_server):
    client = httpx.Client(base_url=app_server.url, timeout=30)
    for path in ("/api/scan/nope", "/api/check/nope", "/api/scan/nope/events"):
        missing = client.get(path)
        assert missing.status_code == 404 and "no " in missing.json()["detail"] and "nope" in missing.json()["detail"]
    assert client.post("/api/reviews", json={"job_id": "nope", "fact": "x", "decision": "accept"}).status_code == 404
    assert client.post("/api/reviews", json={"job_id": "x", "fact": "x", "decision": "maybe"}).status_code == 422
    assert client.post("/api/scan", json={"title": "T", "text": "   "}).status_code == 422
    huge = client.post("/api/scan", json={"title": "Paris", "text": "word " * 20_000})
    assert huge.status_code == 413 and "limit" in huge.json()["detail"]

    def chunks():
        for _ in range(100):
            yield b"x" * 1000

    streamed = client.post("/api/scan", content=chunks(), headers={"content-type": "application/json"})
    assert streamed.status_code == 413

    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}
    wiki = client.options("/api/scan", headers={"Origin": "https://en.wikipedia.org", **preflight,
                                                "Access-Control-Request-Private-Network": "true"})
    assert wiki.headers.get("access-control-allow-origin") == "https://en.wikipedia.org"
    assert wiki.headers.get("access-control-allow-private-network") == "true"
    other = client.options("/api/scan", headers={"Origin": "https://evil.example", **preflight})
    assert "access-control-allow-origin" not in other.headers
    lookalike = client.options("/api/scan", headers={"Origin": "https://wikipedia.org.evil.example", **preflight})
    assert "access-control-allow-origin" not in lookalike.headers
    page = client.get("/")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert client.get("/docs").status_code == 200 and "/api/scan" in client.get("/openapi.json").text


def test_a_foreign_host_header_is_refused_and_malformed_bodies_get_a_clean_422(app_server):
    client = httpx.Client(base_url=app_server.url, timeout=30)
    for path in ("/api/reviews", "/api/health", "/"):
        assert client.get(path, headers={"Host": "evil.example"}).status_code == 400, path  # DNS rebinding
    port = app_server.url.rsplit(":", 1)[1]
    assert client.get("/api/health", headers={"Host": f"localhost:{port}"}).status_code == 200
    bodies = {
        "/api/scan": b'{"title": "a", "text": "\\ud800"}',
        "/api/check": b'{"fact": "\\ud800 half a pair"}',
        "/api/search": b'{"query": "\\udfff"}',
        "/api/reviews": b'{"job_id": "x", "fact": "\\ud800", "decision": "accept"}',
    }
    for path, body in bodies.items():
        answer = client.post(path, content=body, headers={"content-type": "application/json"})
        assert answer.status_code == 422, (path, answer.status_code, answer.text)
        assert answer.json()["detail"][0]["msg"], path
    huge_k = client.post("/api/search", content=b'{"query": "tower", "k": 1e309}', headers={"content-type": "application/json"})
    assert huge_k.status_code == 422 and "k" in huge_k.json()["detail"][0]["loc"]


def test_a_check_or_scan_that_checked_nothing_ends_in_error_not_done(index_root, retriever, tmp_path):
    """With the LLM endpoint down nothing is checked: the job says so (status "error", the cause,
    the facts counted as not checked, none flagged) instead of reading like a clean result."""
    settings = ServeSettings(data_dir=tmp_path)
    config = make_config(index_root, "http://127.0.0.1:9/v1")
    with ServerThread(create_app(config, settings, retriever=retriever)) as server:
        client = httpx.Client(base_url=server.url, timeout=30)
        check = client.post("/api/check", json={"fact": "The Eiffel Tower was completed in 1890.", "title": "Paris",
                                                "system": "rav"})
        assert check.status_code == 202, check.text
        data = wait_done(client, f"/api/check/{check.json()['id']}")
        assert data["status"] == "error" and "cannot connect" in data["error"]
        scan = client.post("/api/scan", json={"title": "Eiffel Tower", "text": "The tower was finished in 1889.", "system": "rav"})
        finished = wait_done(client, f"/api/scan/{scan.json()['id']}")
        assert finished["status"] == "error" and finished["error"]
        progress = finished["progress"]
        assert progress["flagged"] == 0 and progress.get("checked", 0) == 0


def test_a_scan_where_some_facts_fail_counts_them_apart(index_root, retriever, tmp_path):
    """One fact's verification fails (the model keeps answering with a server error for it): the
    scan ends done, that fact is counted as not checked, and it is neither checked nor flagged."""
    base = http_responder()
    healthy = []  # once set, the model answers for that fact too

    def responder(body):
        if kind_of(body) == "verifier" and "Paris" in body["messages"][-1]["content"].split("</fact>", 1)[0] and not healthy:
            return {"fault": "500"}
        if kind_of(body) == "extract":
            return {"content": "<fact>The Eiffel Tower was completed in 1890.</fact>\n<fact>The Eiffel Tower is in Paris.</fact>"}
        return base(body)

    with MockOpenAIServer(responder) as llm:
        settings = ServeSettings(data_dir=tmp_path)
        with ServerThread(create_app(make_config(index_root, llm.base_url), settings, retriever=retriever)) as server:
            client = httpx.Client(base_url=server.url, timeout=30)
            scan = client.post("/api/scan", json={"title": "Eiffel Tower", "text": "Two facts.", "system": "rav"})
            assert scan.status_code == 202
            job = scan.json()["id"]
            done = wait_done(client, f"/api/scan/{job}")
            assert done["status"] == "done"
            assert done["progress"] == {"total": 2, "done": 2, "errors": 1, "checked": 1, "flagged": 1}
            failed = next(f for f in done["facts"] if f["status"] == "error")
            assert "Paris" in failed["fact"] and failed["error"] and failed["verdict"] is None
            # why, in one line, for the fact and for the scan
            assert failed["reason"] and "\n" not in failed["reason"] and done["reason"] == failed["reason"]
            assert "server error (500)" in failed["reason"]
            # re-check the facts that failed: only that one is checked again, the other keeps its result
            healthy.append(True)
            calls = llm.calls
            again = client.post(f"/api/scan/{job}/recheck")
            assert again.status_code == 202 and again.json() == {"id": job, "requeued": 1}
            rechecked = wait_done(client, f"/api/scan/{job}")
            assert rechecked["progress"] == {"total": 2, "done": 2, "errors": 0, "checked": 2, "flagged": 1}
            assert rechecked["reason"] is None and all(f["reason"] is None for f in rechecked["facts"])
            assert llm.calls - calls < 10  # one fact's research, not the scan's
            nothing = client.post(f"/api/scan/{job}/recheck")
            assert nothing.status_code == 409 and "no fact that failed" in nothing.json()["detail"]
            assert client.post("/api/scan/nope/recheck").status_code == 404


def test_a_name_given_with_allowed_host_is_accepted_and_others_refused(index_root, llm_server, retriever, tmp_path):
    settings = ServeSettings(data_dir=tmp_path, allowed_hosts=["claire.lab.example"])
    with ServerThread(create_app(make_config(index_root, llm_server.base_url), settings, retriever=retriever)) as server:
        client = httpx.Client(base_url=server.url, timeout=30)
        assert client.get("/api/health", headers={"Host": "claire.lab.example"}).status_code == 200
        assert client.get("/api/health", headers={"Host": "127.0.0.1"}).status_code == 200
        assert client.get("/api/health", headers={"Host": "evil.example"}).status_code == 400


def test_token_is_required_on_every_api_call(index_root, llm_server, retriever, tmp_path):
    settings = ServeSettings(data_dir=tmp_path, token="tok-123")
    with ServerThread(create_app(make_config(index_root, llm_server.base_url), settings, retriever=retriever)) as server:
        client = httpx.Client(base_url=server.url, timeout=30)
        for method, path in (("GET", "/api/health"), ("POST", "/api/scan"), ("GET", "/api/reviews"), ("POST", "/api/search")):
            refused = client.request(method, path, json={})
            assert refused.status_code == 401 and "token" in refused.json()["detail"], path
        assert client.get("/api/health", headers={"Authorization": "Bearer wrong"}).status_code == 401
        ok = client.get("/api/health", headers={"Authorization": "Bearer tok-123"})
        assert ok.status_code == 200 and ok.json()["token_required"] is True
        assert client.get("/").status_code == 200  # the page itself holds no data


def test_non_loopback_bind_without_a_token_is_refused(index_root):
    from claire.errors import ConfigError
    from claire.web.security import check_bind

    with pytest.raises(ConfigError, match="token"):
        check_bind("0.0.0.0", None)
    check_bind("0.0.0.0", "t")
    check_bind("127.0.0.1", None)
    check_bind("::1", None)


def _many_facts(count: int):
    base = http_responder()

    def respond(body):
        if kind_of(body) == "extract":
            facts = "\n".join(f"<fact>Tower number {i} was completed in {1850 + i}.</fact>" for i in range(count))
            return {"content": facts or "This text states no checkable fact."}
        return base(body)

    return respond


def test_restart_keeps_finished_facts_and_resumes_the_scan(index_root, retriever, tmp_path):
    text = " ".join(f"Tower number {i} was completed in {1850 + i}." for i in range(6))
    with MockOpenAIServer(_many_facts(6), latency=0.15) as slow:
        config = make_config(index_root, slow.base_url)
        settings = ServeSettings(data_dir=tmp_path, concurrency=1)
        with ServerThread(create_app(config, settings, retriever=retriever)) as first:
            client = httpx.Client(base_url=first.url, timeout=30)
            job = client.post("/api/scan", json={"title": "Towers", "text": text}).json()["id"]
            deadline = time.monotonic() + 60
            while client.get(f"/api/scan/{job}").json()["progress"]["done"] < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
        verifier_calls_before = sum(kind_of(r) == "verifier" for r in slow.requests)
        with ServerThread(create_app(config, settings, retriever=retriever)) as second:
            client = httpx.Client(base_url=second.url, timeout=30)
            resumed = client.get(f"/api/scan/{job}").json()
            finished_before = {f["index"]: f["assessment"] for f in resumed["facts"] if f["status"] == "done"}
            assert 2 <= len(finished_before) < 6 and resumed["status"] in ("queued", "running")
            data = wait_done(client, f"/api/scan/{job}")
        assert data["status"] == "done" and data["progress"]["done"] == 6
        for index, assessment in finished_before.items():  # kept, not checked again
            assert next(f for f in data["facts"] if f["index"] == index)["assessment"] == assessment
        verifier_calls = sum(kind_of(r) == "verifier" for r in slow.requests)
        assert verifier_calls - verifier_calls_before <= 6 - len(finished_before) + 1  # at most the one in flight again
        assert sum(kind_of(r) == "extract" for r in slow.requests) == 1  # facts were not extracted again


def test_serve_bench_runs_end_to_end_with_tiny_parameters(index_root, retriever):
    from rich.console import Console

    from claire.bench.serve import run_serve_bench

    console = Console(record=True, width=160)
    result = run_serve_bench(facts=3, concurrency=2, latency=0.01, clients=3, polls=2, console=console,
                             index_root=index_root, retriever=retriever)
    assert result["scan_ok"] and result["facts"] == 3
    # per fact with the paper's defaults: search, report (the research ends there), verifier and the
    # two-sided report's two calls; plus one extraction call for a short article
    assert result["llm_calls"] == 3 * 5 + 1
    assert 0 < result["first_fact_s"] <= result["finished_s"]
    for view in ("summary", "full"):
        assert result[f"poll_{view}_count"] == 6 and result[f"poll_{view}_errors"] == 0 and result[f"poll_{view}_p50_ms"] > 0
    assert "first highlighted fact" in console.export_text()


def test_a_passage_without_facts_ends_the_scan_with_a_message_and_a_full_queue_says_so(index_root, retriever, tmp_path):
    with MockOpenAIServer(_many_facts(0), latency=0.3) as llm:
        app = create_app(make_config(index_root, llm.base_url), ServeSettings(data_dir=tmp_path, max_jobs=1), retriever=retriever)
        with ServerThread(app) as server:
            client = httpx.Client(base_url=server.url, timeout=30)
            job = client.post("/api/scan", json={"title": "Paris", "text": "Nothing to see."}).json()["id"]
            busy = client.post("/api/check", json={"fact": "The Eiffel Tower was completed in 1890."})
            assert busy.status_code == 429 and "limit is 1" in busy.json()["detail"]
            data = wait_done(client, f"/api/scan/{job}")
            assert data["status"] == "error" and data["error"] == "no checkable facts were found in the text"
            assert read_events(client, f"/api/scan/{job}/events")[-1][1]["status"] == "error"


def test_every_json_route_declares_its_response_shape(app_server):
    """What /openapi.json says each JSON route answers: a schema, not an untyped object (the
    event streams and the downloads are not JSON answers)."""
    spec = httpx.get(app_server.url + "/openapi.json", timeout=30).json()
    untyped = []
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            answer = operation["responses"].get("200") or operation["responses"].get("202") or {}
            schema = answer.get("content", {}).get("application/json", {}).get("schema")
            if schema is None:
                continue  # text/event-stream, text/plain, a file
            if not (schema.get("$ref") or schema.get("items", {}).get("$ref")):
                untyped.append(f"{method.upper()} {path}")
    assert untyped == ["GET /api/reviews/export"], untyped  # a download, written as it is read back
