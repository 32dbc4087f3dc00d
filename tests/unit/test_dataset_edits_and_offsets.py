"""An edited dataset never reuses stale predictions, and text offsets are counted in one unit (UTF-16
code units, as JavaScript indexes a string)."""

from __future__ import annotations




# -- an edited dataset never reuses stale predictions -------------------------------------------

def test_an_edited_dataset_reruns_what_changed_and_scores_only_its_records(tmp_path, mini_claims):
    import asyncio

    from claire.runs.predictions import load_predictions
    from claire.evals.runner import run_eval, score_run
    from claire.testing.fake_system import FakeSystem

    out = tmp_path / "run"
    system = FakeSystem()
    asyncio.run(run_eval(mini_claims, system, out, show_progress=False))
    flipped = mini_claims[0].model_copy(update={"label": "consistent", "text": mini_claims[0].text + " (edited)"})
    edited = [flipped, *mini_claims[1:8]]  # one record edited, two dropped, under the same file name
    system = FakeSystem()
    summary = asyncio.run(run_eval(edited, system, out, show_progress=False))
    assert system.calls == [flipped.claim_id] and summary.changed == 1 and summary.ran == 1
    assert summary.metrics["counts"]["total"] == 8 and summary.left_out == 2  # "10 of 10" before
    line = next(p for p in load_predictions(out) if p["claim_id"] == flipped.claim_id)
    assert line["label"] == "consistent" and line["claim_text"].endswith("(edited)")
    assert len(load_predictions(out)) == 10  # nothing lost: the dropped records' lines are kept
    assert "left out of these scores" in (out / "report.md").read_text()
    assert score_run(out)["counts"]["total"] == 8  # `claire metrics` agrees with the run
    assert "its dataset record changed" in (out / "predictions.rejected.jsonl").read_text()


# -- one unit for offsets: UTF-16 code units, as JavaScript indexes a string ----------------------

def _js_slice(text: str, start: int, end: int) -> str:
    """``text.slice(start, end)`` as JavaScript computes it."""
    units = text.encode("utf-16-le")
    return units[2 * start:2 * end].decode("utf-16-le")


EMOJI_TEXT = "Intro \U0001F600\U0001F600\U0001F600 about \U0001D465\U0001D466 and \U0002000B here.\r\n\r\nThe Eiffel Tower was completed in 1890."


def test_the_api_places_a_fact_in_utf16_units_as_the_page_slices():
    from claire.web.views import fact_view
    from claire.jobs.spans import locate, utf16_index

    start, end = locate("The Eiffel Tower was completed in 1890.", EMOJI_TEXT)
    assert EMOJI_TEXT[start:end] == "The Eiffel Tower was completed in 1890."
    fact = {"idx": 0, "claim_id": "a", "fact": "f", "span_start": start, "span_end": end, "status": "done", "score": 0.9,
            "verdict": "inconsistent", "error": None, "assessment": None}
    view = fact_view(fact, None, EMOJI_TEXT)
    assert _js_slice(EMOJI_TEXT, view["start"], view["end"]) == "The Eiffel Tower was completed in 1890."
    assert utf16_index("abc", 2) == 2 and utf16_index(EMOJI_TEXT, None) is None


def test_a_patrol_cards_context_marks_the_sentence_in_utf16_units():
    from claire.web.views import edit_context

    block = "Before \U0001F600 text here. The Eiffel Tower was completed in 1890 for a fair. After \U0002000B it."
    context = edit_context("The Eiffel Tower was completed in 1890 for a fair.", block)
    assert _js_slice(context["text"], context["start"], context["end"]) == "The Eiffel Tower was completed in 1890 for a fair."


def test_a_stored_check_reads_back_as_the_one_rule_decided_it():
    from claire.domain import recorded_outcome

    assert recorded_outcome({"verdict": "inconsistent", "score": 0.9, "error": None}) == "flagged"
    assert recorded_outcome({"verdict": "consistent", "score": 0.1}) == "consistent"
    assert recorded_outcome({"verdict": "inconsistent", "score": 0.9, "error": "controller: 429"}) == "failed"
    assert recorded_outcome({"status": "error", "verdict": None, "score": None}) == "failed"
    assert recorded_outcome({"label": "REFUTES", "verdict": None}) == "flagged"
    assert recorded_outcome({"verdict": None, "label": None}) == "failed"
