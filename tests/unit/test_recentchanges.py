"""Reading change events and the patrol's queue of edited pages: bad events, refused streams, newer revisions."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from claire.errors import ClaireError
from claire.testing.wiki_doubles import change_event
from claire.jobs.store import JobStore
from claire.livewiki.recentchanges import parse_change, stream_changes


def test_an_event_whose_meta_or_revision_is_not_an_object_is_a_bad_event():
    event = change_event("Paris", 1, 2)
    assert parse_change(json.dumps(event)).new_revision == 2
    for broken in ({**event, "meta": "x"}, {**event, "revision": [1, 2]}):
        with pytest.raises(ValueError, match="must be objects"):
            parse_change(json.dumps(broken))


@pytest.mark.parametrize("answer", [httpx.Response(404, text="no such stream"),
                                    httpx.Response(200, text="<html>a login page</html>", headers={"content-type": "text/html"})])
def test_a_stream_that_will_not_change_its_answer_is_an_error_not_a_retry_loop(answer):
    sent = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers.get("user-agent"))
        return answer

    async def read() -> list:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return [item async for item in stream_changes("https://user:secret@stream.example/rc", user_agent="CLAIRE-test",
                                                          client=client)]

    with pytest.raises(ClaireError) as error:
        asyncio.run(read())
    assert sent == ["CLAIRE-test"] and "secret" not in str(error.value)


def test_a_newer_revision_queued_while_an_older_one_is_indexed_stays_queued(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite")
    store.add_pending_page("enwiki:7", "enwiki:100", {"revision_id": 100})
    waiting = store.pending_pages()
    store.add_pending_page("enwiki:7", "enwiki:101", {"revision_id": 101})  # arrives while 100 is being stored
    store.drop_pending_pages([(item["page_key"], item["job_id"]) for item in waiting])
    assert [item["job_id"] for item in store.pending_pages()] == ["enwiki:101"]
    store.close()
