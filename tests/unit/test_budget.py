"""Prompts fitted to the model's context window, in process: counting, condensing, choosing
passages (the full 10-step check against a local server that rejects any prompt over 8,192 tokens
is in tests/integration/test_budget.py)."""

from __future__ import annotations


from langchain_core.messages import HumanMessage

from claire.agent.runtime import build_system
from claire.config import Config
from claire.settings import LLMConfig
from claire.domain import Evidence
from claire.prompts.budget import OMITTED, by_relevance, deduplicate, fit_documents, fit_history
from claire.llm.client import ChatClient
from claire.llm.tokens import DEFAULT_CONTEXT_WINDOW, TokenCounter, estimate_tokens, known_context_window
from claire.testing.doubles import CLAIM
from claire.testing.mock_openai import prompt_tokens
from claire.testing.scripted import scripted_client


def doc(n: int, content: str, block_id: str | None = None, title: str = "T") -> Evidence:
    return Evidence(n=n, block_id=block_id or f"b{n}", document_title=title, content=content)


def test_context_windows_and_counts():
    # a known model's window comes from its LangChain profile (gpt-5: 272k input tokens), read by the client
    gpt = ChatClient.from_config(LLMConfig(model="gpt-5", base_url="http://127.0.0.1:9/v1", api_key="sk-x", cache=False))
    assert gpt.model.profile["max_input_tokens"] == gpt.context_window == 272_000
    assert ChatClient.from_config(LLMConfig(model="openai:gpt-4o-2024-08-06", base_url="http://127.0.0.1:9/v1",
                                            api_key="sk-x", cache=False)).context_window == 128_000
    assert known_context_window("gpt-4o", None) == DEFAULT_CONTEXT_WINDOW  # no profile, not in the local table
    assert known_context_window("ollama:qwen2.5") == known_context_window("qwen2.5:7b") == 32_768
    assert known_context_window("my-local-model") == DEFAULT_CONTEXT_WINDOW == 8192
    assert ChatClient.from_config(LLMConfig(model="mock", base_url="http://127.0.0.1:9/v1", cache=False)).context_window == 8192
    assert ChatClient.from_config(LLMConfig(model="mock", base_url="http://127.0.0.1:9/v1", cache=False,
                                           context_window=4096)).context_window == 4096
    # the estimate never counts fewer tokens than the test server (a typical tokenizer) does
    text = "Der Eiffelturm wurde 1889 fertiggestellt — für die Weltausstellung in Paris. " * 20
    body = {"messages": [{"role": "user", "content": text}]}
    assert TokenCounter("my-local-model").messages([HumanMessage(text)]) >= prompt_tokens(body)
    assert estimate_tokens("東京タワー") >= 5


def test_fit_documents_deduplicates_orders_and_cuts():
    documents = [
        doc(1, "Paris has many bridges over the Seine. " * 20),
        doc(2, "The Eiffel Tower was completed in 1889 for the World's Fair."),
        doc(3, "The Eiffel Tower was completed in 1889 for the World's Fair.", block_id="copy"),  # same text
        doc(4, "Rivers of Europe include the Danube and the Rhine. " * 20),
        doc(5, "The tower in Paris, finished 1889, was designed by Eiffel's company."),
    ]
    unique, duplicates = deduplicate(documents)
    assert duplicates == [3] and [d.n for d in unique] == [1, 2, 4, 5]
    assert [d.n for d in by_relevance("The Eiffel Tower was completed in 1890.", unique)][:2] == [2, 5]

    counter = TokenCounter("")
    render = lambda docs: [HumanMessage("Fact: ...\n" + "\n".join(d.content for d in docs))]  # noqa: E731
    count = counter.messages
    budget = count(render([documents[1], documents[4]])) + 20  # room for the two relevant ones only
    chosen, messages, note = fit_documents(render, documents, claim="The Eiffel Tower was completed in 1890.",
                                           count=count, budget=budget)
    assert [d.n for d in chosen] == [2, 5]
    assert note.dropped == [1, 4] and note.duplicates == [3] and note.kept == [2, 5]
    assert count(messages) <= budget
    assert note.trace_item()["action_name"] == "context_budget"


def test_fit_history_condenses_oldest_first_and_keeps_the_latest_whole():
    history = [{"action": "search", "argument": f"q{i}",
                "observation": "\n".join(f"[{i}{j}] Title > Section: " + "long snippet text " * 20 for j in range(5))}
               for i in range(6)]
    render = lambda h: [HumanMessage("\n".join(step["observation"] for step in h))]  # noqa: E731
    count = TokenCounter("").messages
    full = count(render(history))
    messages, note = fit_history(render, history, count=count, budget=int(full * 0.85), keep_latest=2)
    assert count(messages) <= full * 0.85
    assert note.condensed_steps[:1] == [1] and not note.omitted_steps
    assert 5 not in note.condensed_steps + note.omitted_steps and 6 not in note.condensed_steps + note.omitted_steps
    assert history[-1]["observation"] in messages[0].content  # the latest observation, whole
    # a budget that cannot hold even condensed steps leaves the oldest out
    _, tight = fit_history(render, history, count=count, budget=count(render(history[-2:])) + 60, keep_latest=2)
    assert tight.omitted_steps[:1] == [1]
    assert OMITTED


async def test_clarify_entity_leaves_out_the_last_passages_when_they_do_not_fit():
    from claire.domain import Block
    from claire.testing.doubles import KeywordRetriever, ScriptedModel, tool_call

    blocks = [Block(id=f"p{i}", document_title=f"Paris {i}", section_title="S", content=f"Paris number {i}. " + "filler words " * 400)
              for i in range(10)]
    model = ScriptedModel([tool_call("clarify_entity", "Paris"), tool_call("finish")])
    llm = scripted_client(model, context_window=4096, max_tokens=300)
    config = Config().with_overrides({"retrieval.rerank": False, "agent.clarify_k": 10})
    agent = build_system(config, llm=llm, retriever=KeywordRetriever(blocks), name="claire")
    await agent.assess(CLAIM)
    sent = model.requests("clarify")[0].messages
    assert 0 < sent[-1].content.count("<document ") < 10
    assert llm.count_tokens(sent) <= llm.prompt_budget()


async def test_verifier_follow_up_still_fits_and_reports_what_it_left_out():
    from claire.prompts import library
    from claire.tasks.wikicollide.judge import judge_score

    answers = iter(["I think it is fine. " * 150, "<inconsistency_score>0.2</inconsistency_score>"])
    requests = []

    def verifier(request):
        requests.append(request)
        return next(answers)

    llm = scripted_client(lambda request: verifier(request), context_window=4096, max_tokens=600)
    documents = [doc(i, f"Passage {i} about the Eiffel Tower and its year. " + "more words " * 120) for i in range(1, 21)]
    verdict = await judge_score(CLAIM, documents, [], llm, library())
    assert verdict.score == 0.2 and verdict.fit is not None and verdict.fit.dropped
    assert all(llm.count_tokens(r.messages) <= llm.prompt_budget() for r in requests)
    assert requests[1].messages[-2].type == "ai"  # the follow-up carries the first answer


