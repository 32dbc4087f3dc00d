"""What the web API says about failed facts and patrolled edits, built from stored rows."""

from __future__ import annotations

from claire.web.views import edit_context, failure_reason, job_reason

DOWN = ("controller: LLM call to http://127.0.0.1:9/v1 failed after 1 attempt(s): cannot connect to http://127.0.0.1:9/v1; "
        "check that the server is running, or set OPENAI_BASE_URL / llm.base_url; verifier: the LLM endpoint "
        "http://127.0.0.1:9/v1 did not answer 0 s ago; not trying again for 60 s (check that the server is running)")


def test_a_failure_is_told_once_on_one_line_with_the_steps_that_failed_named():
    reason = failure_reason(DOWN)
    assert reason == ("LLM call to http://127.0.0.1:9/v1 failed after 1 attempt(s): cannot connect to http://127.0.0.1:9/v1; "
                      "check that the server is running, or set OPENAI_BASE_URL / llm.base_url (in the controller, then "
                      "verifier steps)")
    assert failure_reason("no fact could be checked: " + DOWN) == reason
    assert failure_reason("search: the index is gone") == "the index is gone (in the search step)"
    assert failure_reason("no score was produced") == "no score was produced" and failure_reason(None) is None


def test_a_job_gives_its_facts_commonest_reason_or_its_own():
    facts = [{"status": "error", "error": DOWN}, {"status": "error", "error": DOWN}, {"status": "done", "error": None},
             {"status": "error", "error": "verifier: server error (500)"}]
    assert job_reason({"status": "done", "error": None}, facts) == failure_reason(DOWN)
    assert job_reason({"status": "error", "error": "no checkable facts were found in the text"}, []) == \
        "no checkable facts were found in the text"
    assert job_reason({"status": "done", "error": None}, facts[2:3]) is None


def test_the_edit_is_shown_as_the_sentence_it_added_between_its_neighbours():
    block = ("Compaq was founded in 1982. Soon after in 1982, Compaq released the very successful Compaq Portable. "
             "Compaq released the Compaq Portable in 1982. It sold well.\nThe company grew fast.")
    shown = edit_context("Compaq released the Compaq Portable in 1982.", block)
    assert shown["text"][shown["start"]:shown["end"]] == "Compaq released the Compaq Portable in 1982."
    assert shown["text"].startswith("Soon after in 1982") and shown["text"].endswith("It sold well.")
    assert shown["before"] and shown["after"]
    assert edit_context("Tokyo hosted the Olympic Games.", "Paris is in France.") == {
        "text": "Paris is in France.", "start": None, "end": None}
