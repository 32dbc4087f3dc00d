"""The live change stream: poison and hostile events, stream ids and reconnects, the wiki's address and
no kept credentials, and an edit's diff in time linear in its length."""

from __future__ import annotations

import asyncio
import json
import time
import httpx
import numpy as np
import pytest


from claire.errors import ClaireError


from claire.testing.wiki_doubles import change_event
from claire.jobs.store import JobStore
from claire.livewiki.patrol import ChangeSource
from claire.livewiki.recentchanges import parse_change, stream_changes, usable_event_id, wiki_host
import threading


from claire.domain import Block
from claire.ingestion.dumps.pages import PageResult

from claire.livewiki.edit_diff import changed_passages


# -- poison events are bad events --------------------------------------------------------------

def _raw(**changes: object) -> str:
    event = change_event("Paris", 21, 22)
    event.update(changes)
    return json.dumps(event)


@pytest.mark.parametrize("data", [
    _raw(title="Caf\udce9"), _raw(comment="\ud800"), _raw(user="\udfff"),
    _raw().replace('"namespace": 0', '"namespace": 1e999'),
    _raw().replace('"new": 22', '"new": Infinity'),
    _raw().replace('"new": 22', '"new": NaN'),
    _raw(namespace=1.5), _raw(timestamp=10**400), _raw(timestamp=-1), _raw(timestamp="soon"),
    _raw(revision={"old": 21, "new": 10**30}), _raw(title=["a", "list"]),
    "[" * 100_000 + "]" * 100_000, '{"x": "' + "y" * 1_100_000 + '"}',
])
def test_an_event_no_wiki_would_send_is_a_value_error_not_a_crash(data):
    with pytest.raises(ValueError):
        parse_change(data)


def test_a_good_event_still_reads_with_numbers_in_any_json_spelling():
    change = parse_change(_raw(namespace=0.0, timestamp="1700000000.5", revision={"old": "21", "new": 22.0}))
    assert (change.namespace, change.old_revision, change.new_revision, change.timestamp) == (0, 21, 22, 1700000000.5)


# -- stream ids and 6. reconnects ---------------------------------------------------------------

def _sse(body: str) -> httpx.Response:
    return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})


def test_an_event_id_that_cannot_be_sent_back_is_never_the_position():
    assert usable_event_id('[{"topic":"x","offset":5}]') and not usable_event_id("pos-é") and not usable_event_id("x" * 2000)
    sent: list[str | None] = []
    event = json.dumps(change_event("Paris", 21, 22))

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers.get("last-event-id"))
        return _sse(f"retry: 100\nid: 7\ndata: {event}\n\nid: pos-é\ndata: {event}\n\nid: 9\ndata: {event}\n\n"
                    if len(sent) == 1 else f"retry: 100\nid: ünïcode\ndata: {event}\n\n")

    async def read() -> list:
        got = []
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            async for position, _ in stream_changes("http://stream.test/rc", last_event_id="saved-é", user_agent="t",
                                                    client=client):
                got.append(position)
                if len(got) == 4:
                    return got
        return got

    positions = asyncio.run(read())
    assert positions == ["7", "7", "9", "9"]  # the non-ASCII id keeps the position before it
    assert sent == [None, "9"]  # a saved position that cannot be sent is not sent either


def test_a_stream_that_closes_at_once_is_reconnected_with_a_growing_wait_not_in_a_storm():
    connections: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        connections.append(time.monotonic())
        return _sse("retry: 100\n\n")

    async def read(seconds: float) -> None:
        end = time.monotonic() + seconds
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            async for _ in stream_changes("http://stream.test/rc", user_agent="t", client=client,
                                          stop=lambda: time.monotonic() > end):
                pass

    asyncio.run(read(2.0))
    # waits of 0.2, 0.4, 0.8 s (the server's 100 ms retry, doubled per empty connection)
    assert 3 <= len(connections) <= 5, len(connections)
    gaps = np.diff(connections)
    assert all(later > earlier for earlier, later in zip(gaps, gaps[1:]))


# -- the wiki's address comes from its id; no credentials are kept --------------------------

def test_an_event_cannot_send_the_patrol_to_another_server():
    assert wiki_host("enwiki") == "en.wikipedia.org" and wiki_host("dewiktionary") == "de.wiktionary.org"
    assert wiki_host("zh_min_nanwiki") == "zh-min-nan.wikipedia.org" and wiki_host("wikidatawiki") == "www.wikidata.org"
    assert wiki_host("Robert'); DROP") is None
    honest = parse_change(_raw(server_url="https://en.wikipedia.org"))
    assert honest.api_url() == "https://en.wikipedia.org/w/api.php"
    for server in ("http://127.0.0.1:8080", "https://en.wikipedia.org.evil.test", "https://de.wikipedia.org"):
        with pytest.raises(ClaireError, match="not its address"):
            parse_change(_raw(server_url=server)).api_url()
    sneaky = parse_change(_raw(server_url="https://user:hunter2@en.wikipedia.org", server_script_path="@evil.test"))
    assert sneaky.api_url() == "https://en.wikipedia.org/w/api.php"
    assert "hunter2" not in json.dumps(sneaky.__dict__) and "evil" not in sneaky.diff_url()
    assert sneaky.diff_url() == "https://en.wikipedia.org/w/index.php?diff=22&oldid=21"
    private = parse_change(_raw(wiki="mywiki", server_url="http://admin:pw@wiki.internal:8080"))
    assert private.diff_url() == "http://wiki.internal:8080/w/index.php?diff=22&oldid=21"


def test_a_stream_url_with_credentials_is_not_a_position_key():
    source = ChangeSource(url="https://bot:s3cret@stream.example/rc")
    assert source.key == "stream:https://stream.example/rc" and source.older_key == "stream:https://bot:s3cret@stream.example/rc"


def test_a_position_saved_under_a_url_with_credentials_moves_to_the_clean_key(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite")
    store.set_position("stream:https://bot:s3cret@stream.example/rc", "41")
    store.move_position("stream:https://bot:s3cret@stream.example/rc", "stream:https://stream.example/rc")
    assert store.position("stream:https://stream.example/rc") == "41"
    assert store.position("stream:https://bot:s3cret@stream.example/rc") is None
    store.close()


# -- an edit's diff costs time linear in its length --------------------------------------------

def _page(revision: int, paragraphs: list[str]) -> PageResult:
    blocks = [Block(id=f"7-{i}", document_title="Loop", section_title="", content=text) for i, text in enumerate(paragraphs)]
    return PageResult(page_id=7, revision_id=revision, title="Loop", blocks=blocks)


def test_the_edit_diff_finds_what_changed_and_what_only_moved():
    old = _page(1, ["The tower was built in 1889 by Eiffel. It is made of wrought iron.", "The river is long and wide."])
    new = _page(2, ["The river is long and wide. It is made of wrought iron.",
                    "The tower was built in 1890 by Eiffel. Short one.", "A new paragraph says something new here."])
    passages = changed_passages(old, new)
    assert [(p.block.id, p.text) for p in passages] == [("7-1", "The tower was built in 1890 by Eiffel."),
                                                        ("7-2", "A new paragraph says something new here.")]
    assert [p.text for p in changed_passages(None, _page(3, ["One two three four five."]))] == ["One two three four five."]


def test_an_edit_repeating_one_sentence_is_diffed_in_bounded_time():
    sentence = "The same sentence stands here again and again. "
    old = _page(1, [sentence * 6_000])  # ~280 KB
    new = _page(2, [(sentence + "Another sentence now sits between them all. ") * 3_000])  # the diff of main took 37 s
    # on a third of this (1,000 pairs), and four times as long for each doubling
    done = threading.Event()
    result: list = []

    def diff() -> None:
        result.append(changed_passages(old, new))
        done.set()

    threading.Thread(target=diff, daemon=True).start()
    assert done.wait(15), "the diff of one edit did not end within 15 s"
    assert [p.text for p in result[0]] == [" ".join(["Another sentence now sits between them all."] * 3_000)]
