"""Which side is right, across the real boundaries: cited pages fetched over real HTTP from a
local server (the guard, the limits, trafilatura, the cache), the Perennial list refreshed from a
local Action API, ``claire eval --task sides`` on the shipped cases and ``claire resolve`` /
``claire check --resolve`` on the demo index, with the oracle behind a real OpenAI-compatible
server."""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import mwparserfromhell
import pytest

from claire.settings import ResolveConfig
from claire.sources.reading import SourceReader
from claire.testing.cli import run_claire
from claire.testing.http_server import BackgroundServer, QuietHandler
from claire.testing.mock_openai import MockOpenAIServer
from claire.testing.oracle import oracle_responder

CASES = Path(__file__).resolve().parents[2] / "evals" / "data" / "sides_cases.jsonl"
ARTICLE = ("<html><head><title>Bridge at 90</title><meta property='og:site_name' content='Example Roads'>"
           "<meta property='article:published_time' content='2021-03-31'></head><body><article><h1>Bridge at 90</h1>"
           "<p>The Halvorsen Bridge was opened in 1931 after three years of construction by the county.</p>"
           "<p>It carries about four thousand vehicles a day across the Tarn, and it was restored in 2004.</p>"
           "</article></body></html>")


class Pages(QuietHandler):
    hits: dict[str, int] = {}
    agents: list[str] = []

    def do_GET(self):  # noqa: N802
        path = self.path
        Pages.hits[path] = Pages.hits.get(path, 0) + 1
        Pages.agents.append(self.headers.get("User-Agent", ""))
        if path == "/article":
            self.send_body(200, ARTICLE.encode(), content_type="text/html; charset=utf-8")
        elif path == "/plain":
            self.send_body(200, b"The bridge opened in 1931. " * 5, content_type="text/plain")
        elif path == "/pdf":
            self.send_body(200, b"%PDF-1.7 ...", content_type="application/pdf")
        elif path == "/huge":
            self.send_body(200, b"<html><body><p>" + b"word " * 400_000 + b"</p></body></html>", content_type="text/html")
        elif path == "/empty":
            self.send_body(200, b"<html><body></body></html>", content_type="text/html")
        elif path == "/loop":
            self.send_body(302, b"", headers={"Location": "/loop"})
        elif path == "/moved":
            self.send_body(301, b"", headers={"Location": "/article"})
        elif path == "/slow":
            time.sleep(3)
            self.send_body(200, ARTICLE.encode(), content_type="text/html")
        elif path == "/binary":
            self.send_body(200, b"\x00\x01\x02" * 100, content_type="text/html")
        else:
            self.send_body(404, b"not here", content_type="text/html")


@pytest.fixture(scope="module")
def pages():
    with BackgroundServer(Pages) as server:
        yield f"http://127.0.0.1:{server.port}"


async def test_cited_pages_are_read_over_http_within_the_guard(pages, tmp_path):
    strict = SourceReader(ResolveConfig(cache_dir=tmp_path / "cache"))
    refused = await strict.read(f"{pages}/article")
    assert not refused.readable and "private or loopback" in refused.error  # the default guard
    reader = SourceReader(ResolveConfig(cache_dir=tmp_path / "cache", allow_private=True, fetch_timeout=1.5,
                                        max_bytes=200_000, max_redirects=3))
    page = await reader.read(f"{pages}/article")
    assert page.readable and page.origin == "fetch" and page.fetched_at
    assert "opened in 1931" in page.text and page.title == "Bridge at 90" and page.date == "2021-03-31"
    again = await SourceReader(ResolveConfig(cache_dir=tmp_path / "cache")).read(f"{pages}/article")
    assert again.origin == "cache" and again.fetched_at == page.fetched_at  # kept with the date fetched
    assert Pages.hits["/article"] == 1
    assert (await reader.read(f"{pages}/moved")).readable
    expected = {"/nothing": "HTTP 404", "/pdf": "a PDF", "/huge": "larger than 200,000 bytes",
                "/empty": "empty", "/loop": "more than 3 redirects", "/slow": "timed out", "/binary": "a binary file"}
    for path, reason in expected.items():
        got = await reader.read(f"{pages}{path}")
        assert not got.readable and reason in got.error, (path, got.error)
    assert (await reader.read(f"{pages}/plain")).text.startswith("The bridge opened in 1931.")
    assert "set resolve.user_agent to add your contact" in Pages.agents[-1]  # CLAIRE's own, with no made-up contact
    signed = SourceReader(ResolveConfig(cache_dir=tmp_path / "signed", allow_private=True,
                                        user_agent="CLAIRE at Example Lab (ops@example.org)"))
    assert (await signed.read(f"{pages}/plain")).readable and Pages.agents[-1] == "CLAIRE at Example Lab (ops@example.org)"
    assert "not an http(s) URL" in (await reader.read("file:///etc/passwd")).error
    private = await strict.read("http://10.0.0.1/x")  # refused before any packet is sent
    assert "private or loopback" in private.error


def test_sources_read_and_rate_commands(pages, tmp_path):
    result = run_claire("sources", "read", f"{pages}/article", cache=tmp_path)
    assert result.returncode == 2 and "private or loopback" in result.stderr and "Traceback" not in result.stderr
    result = run_claire("sources", "read", f"{pages}/article", "--allow-private", cache=tmp_path)
    assert result.returncode == 0 and "opened in 1931" in result.stdout
    result = run_claire("sources", "rate", "https://www.dailymail.co.uk/news/x", "--json", cache=tmp_path)
    assert json.loads(result.stdout)["tier"] == "deprecated"


class ActionApi(QuietHandler):
    asked: list[dict[str, list[str]]] = []

    def do_GET(self):  # noqa: N802
        query = parse_qs(urlsplit(self.path).query)
        ActionApi.asked.append(query)
        if self.path.startswith("/html/"):
            return self.send_body(200, b"<html>maintenance</html>", content_type="text/html")
        if self.path.startswith("/null/"):
            return self.send_body(200, {"parse": None})
        page = query["page"][0]
        table = ('{| class="wikitable"\n|-\n| [[Example Times]]\n| {{WP:RSPSTATUS|gr}}\n| 1\n| {{WP:RSPLAST|2025}}\n'
                 '| Fine.\n| {{WP:RSPUSES|times.example}}\n|}')
        if page.endswith("/Perennial sources"):
            text = "{{Wikipedia:Reliable sources/Perennial sources/Part two}}\n" + table
        else:
            text = table.replace("Example Times", "Example Gazette").replace("gr}}", "d}}").replace("times.", "gazette.")
        self.send_body(200, {"parse": {"title": page, "wikitext": text}})


def test_the_snapshot_is_refreshed_through_the_action_api(tmp_path):
    with BackgroundServer(ActionApi) as api:
        out = tmp_path / "perennial.json"
        result = run_claire("sources", "refresh", "--api-url", f"http://127.0.0.1:{api.port}/w/api.php", "--out", str(out),
                            cache=tmp_path)
        assert result.returncode == 0, result.stderr
        assert all(q.get("maxlag") == ["5"] for q in ActionApi.asked) and "added (" in result.stdout
        for bad in ("html", "null"):  # an answer that is not the page: one line, the old snapshot kept
            again = run_claire("sources", "refresh", "--api-url", f"http://127.0.0.1:{api.port}/{bad}/api.php",
                               "--out", str(out), cache=tmp_path)
            assert again.returncode == 2 and "Traceback" not in again.stderr and "internal error" not in again.stderr
            assert len(again.stderr.strip().splitlines()) == 1, again.stderr
    rows = json.loads(out.read_text())["sources"]
    assert [(r["name"], r["status"]) for r in rows] == [("Example Times", "generally reliable"), ("Example Gazette", "deprecated")]
    result = run_claire("sources", "rate", "https://gazette.example/a", "--set", f"resolve.reliability={out}", cache=tmp_path)
    assert result.stdout.startswith("deprecated")


@pytest.fixture
def oracle():
    with MockOpenAIServer(oracle_responder(), model="oracle") as server:
        yield server


def test_the_shipped_cases_resolve_keylessly_with_the_oracle(oracle, tmp_path):
    out = tmp_path / "sides"
    result = run_claire("eval", "--task", "sides", "--dataset", str(CASES), "--out", str(out), "--base-url",
                        oracle.base_url, "--model", "oracle", cache=tmp_path)
    assert result.returncode == 0, result.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["records"] >= 40 and metrics["errors"] == 0
    assert metrics["accuracy_with_winner"] >= 0.9
    assert metrics["wrong_high_confidence"] <= 0.05
    assert metrics["cannot_tell_recall"] >= 0.9
    assert metrics["support_agreement"] >= 0.9
    cases = {case["id"]: case for case in map(json.loads, CASES.read_text().splitlines())}
    quotes = 0
    for line in map(json.loads, (out / "predictions.jsonl").read_text().splitlines()):
        pages = {page["url"]: page["text"] for page in cases[line["claim_id"]]["sources"]}
        for side in line["sides"]:
            for source in side["sources"]:
                if source["quote"]:  # every quote on a card stands word for word in its source
                    assert source["quote"] in pages[source["reference"]["url"]]
                    quotes += 1
    assert quotes >= 40
    assert "Which side is right" in (out / "report.md").read_text()


def test_a_malformed_case_is_one_line(oracle, tmp_path):
    bad = tmp_path / "cases.jsonl"
    bad.write_text(CASES.read_text().splitlines()[0] + "\n{\"id\": \"x\", \"fact\": 3}\n")
    result = run_claire("resolve", "--cases", str(bad), "--base-url", oracle.base_url, "--model", "oracle", cache=tmp_path)
    assert result.returncode == 2 and f"{bad}:2: fact" in result.stderr and "Traceback" not in result.stderr


def test_the_tour_resolves_the_planted_eiffel_case(oracle, tmp_path, copy_demo_index):
    copy_demo_index(tmp_path / "indexes")
    talk = tmp_path / "talk.wiki"
    result = run_claire("resolve", "The Eiffel Tower was completed in 1890.", "--title", "Paris", "--section", "Landmarks",
                        "--base-url", oracle.base_url, "--model", "oracle", "--talk-page", str(talk), cache=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "the passage is right" in result.stdout
    assert "generally unreliable" in result.stdout and "How the Eiffel Tower was built" in result.stdout
    code = mwparserfromhell.parse(talk.read_text())
    assert "Eiffel Tower" in str(code.filter_headings()[0].title)  # a note for Talk:Paris, about the other article
    links = {str(link.title) for link in code.filter_wikilinks()}
    assert ":Paris#Landmarks" in links and any(link.startswith(":Eiffel Tower#") for link in links)
    assert "Contradictory inline|article=Eiffel Tower" in talk.read_text()
    result = run_claire("check", "The Eiffel Tower was completed in 1890.", "--title", "Paris", "--section", "Landmarks",
                        "--resolve", "--json", "--base-url", oracle.base_url, "--model", "oracle", cache=tmp_path)
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    assert data["assessment"]["verdict"] == "inconsistent" and data["resolution"]["decision"] == "passage"
    fact, passage = data["resolution"]["sides"]
    assert passage["verified"] and not fact["verified"]
    stated = [s for s in passage["sources"] if s["support"] == "states"]
    assert stated and all("1889" in s["quote"] for s in stated)  # verified by a quote that gives its value


def test_the_web_api_resolves_a_flagged_check(oracle, pages, tmp_path, copy_demo_index):
    import httpx

    from claire.agent.runtime import open_retrieval
    from claire.config import load_config
    from claire.web.app import create_app
    from claire.web.serve import ServerThread
    from claire.web.settings import ServeSettings

    root = copy_demo_index(tmp_path / "indexes")
    config = load_config(None, {"llm.base_url": oracle.base_url, "llm.model": "oracle", "llm.cache": False,
                                "llm.api_key": "sk-test", "retrieval.rerank": False, "retrieval.path": str(root),
                                "resolve.allow_private": True, "resolve.cache_dir": str(tmp_path / "sources")})
    retriever = open_retrieval(config)
    try:
        with ServerThread(create_app(config, ServeSettings(data_dir=tmp_path / "web"), retriever=retriever)) as server, \
                httpx.Client(base_url=server.url, timeout=120) as client:
            job = client.post("/api/check", json={"fact": "The Eiffel Tower was completed in 1890.", "title": "Paris",
                                                  "section": "Landmarks"}).json()["id"]
            deadline = time.monotonic() + 120
            while client.get(f"/api/check/{job}").json()["status"] not in ("done", "error") and time.monotonic() < deadline:
                time.sleep(0.1)
            answer = client.post("/api/resolve", json={"job_id": job, "fact": "0"})
            assert answer.status_code == 200, answer.text
            card = answer.json()
            assert card["decision"] == "passage" and card["talk_page"].rstrip().endswith("~~~~")
            assert [s["side"] for s in card["sides"]] == ["fact", "passage"]
            case = json.loads(CASES.read_text().splitlines()[0])
            whole = client.post("/api/resolve", json={"case": case}).json()
            assert whole["decision"] == case["label"]
            again = client.post("/api/check", json={"fact": "The Eiffel Tower was completed in 1890 as the showpiece of "
                                                            "the Exposition Universelle.", "title": "Paris",
                                                    "section": "Landmarks"}).json()["id"]
            while client.get(f"/api/check/{again}").json()["status"] not in ("done", "error") and time.monotonic() < deadline:
                time.sleep(0.1)
            assert client.post("/api/resolve", json={"job_id": again, "fact": "0"}).json() == card  # one contradiction, one decision
            before = Pages.hits.get("/article", 0)
            cited = {"id": "c", "fact": {"text": "The Halvorsen Bridge opened in 1931.", "document_title": "Halvorsen Bridge",
                                         "citations": [{"url": f"{pages}/article", "title": "Bridge at 90"}]},
                     "passage": {"text": "The Halvorsen Bridge opened in 1934.", "document_title": "Brenmoor County"}}
            answer = client.post("/api/resolve", json={"case": cited}).json()
            assert Pages.hits.get("/article", 0) == before  # a case sent whole makes the server fetch nothing
            assert answer["sides"][0]["sources"][0]["support"] == "could not read"
            assert client.post("/api/resolve", json={"case": {"fact": 3}}).status_code == 422
            assert client.post("/api/resolve", json={"job_id": "nope", "fact": "0"}).status_code == 404
            assert client.post("/api/resolve", json={}).status_code == 422
    finally:
        retriever.close()


def test_a_flagged_record_of_a_run_is_resolved(oracle, tmp_path, copy_demo_index):
    copy_demo_index(tmp_path / "indexes")
    tour = Path(__file__).resolve().parents[2] / "evals" / "data" / "tour.jsonl"
    run_dir = tmp_path / "run"
    result = run_claire("eval", "--dataset", str(tour), "--out", str(run_dir), "--index", "demo", "--no-rerank",
                        "--base-url", oracle.base_url, "--model", "oracle", cache=tmp_path)
    assert result.returncode == 0, result.stderr
    result = run_claire("resolve", "--run", str(run_dir), "--id", "tour-1", "--json", "--base-url", oracle.base_url,
                        "--model", "oracle", cache=tmp_path)
    assert result.returncode == 1, result.stderr
    card = json.loads(result.stdout)
    assert card["decision"] == "passage" and card["sides"][1]["document_title"] == "Eiffel Tower"
    result = run_claire("resolve", "--run", str(run_dir), "--id", "tour-3", "--base-url", oracle.base_url,
                        "--model", "oracle", cache=tmp_path)
    assert result.returncode == 0 and "nothing to resolve" in result.stdout  # as for a fact that is not flagged


async def test_page_extraction_runs_off_the_event_loop_within_the_fetch_deadline(pages, tmp_path, monkeypatch):
    import asyncio

    import claire.sources.reading as reading

    def slow_extraction(*args, **kwargs):
        time.sleep(1.5)  # a many-element page that takes trafilatura a long time
        raise AssertionError("the deadline should have ended the fetch first")

    monkeypatch.setattr(reading, "page_from_body", slow_extraction)
    reader = SourceReader(ResolveConfig(cache_dir=tmp_path, allow_private=True, fetch_timeout=0.5))
    ticks = 0

    async def heartbeat():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.05)

    beating = asyncio.create_task(heartbeat())
    started = time.monotonic()
    page = await reader.read(f"{pages}/article")
    elapsed = time.monotonic() - started
    beating.cancel()
    assert "timed out" in page.error and elapsed < 1.2  # the deadline holds, extraction included
    assert ticks >= 5  # and the loop kept serving others meanwhile


def test_a_resolve_with_malformed_huge_and_unreadable_sources_still_gives_its_card(oracle, tmp_path):
    huge = "The Halvorsen Bridge carries traffic over the Tarn. " * 60_000  # about 3 MB
    sources = tmp_path / "sources.jsonl"
    sources.write_text("\n".join(json.dumps(page) for page in [
        {"url": "https://www.bbc.co.uk/claire-example/h", "title": "Profile",
         "text": "The Halvorsen Bridge was opened in 1931 after three years of construction by the county."},
        {"url": "https://huge.example/page", "title": "Everything", "text": huge}]) + "\n")
    case = {"id": "mixed", "fact": {"text": "The Halvorsen Bridge opened in 1931.", "document_title": "Halvorsen Bridge",
                                    "citations": [{"url": "http://[::1/", "title": "Malformed"},
                                                  {"url": "https://huge.example/page", "title": "Huge"},
                                                  {"url": "https://gone.example/404", "title": "Gone"},
                                                  {"url": "https://www.bbc.co.uk/claire-example/h", "title": "Profile"}]},
            "passage": {"text": "The Halvorsen Bridge opened to traffic in 1934.", "document_title": "Brenmoor County"}}
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(case) + "\n")
    started = time.monotonic()
    result = run_claire("resolve", "--cases", str(cases), "--sources", str(sources), "--no-fetch", "--base-url",
                        oracle.base_url, "--model", "oracle", "--json", cache=tmp_path)
    assert result.returncode == 1, result.stderr
    card = json.loads(result.stdout)
    assert card["decision"] == "fact" and time.monotonic() - started < 60
    supports = [source["support"] for source in card["sides"][0]["sources"]]
    assert supports[2] == "could not read" and "states" in supports and len(supports) == 4
