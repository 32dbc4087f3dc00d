"""The JSON the API answers about stored jobs: a check, a scan with its facts (in three levels of
detail, cached until the scan changes), and reviewed facts as WikiCollide records.

Everything here reads a :class:`~claire.jobs.store.JobStore` and builds plain dicts; the routes
in ``web/job_routes.py`` and ``web/review_routes.py`` decide what to answer with them.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from claire.agent.claire_agent import reviewed_verdict
from claire.domain import recorded_outcome
from claire.files import strict_json
from claire.jobs.runner import cited_numbers
from claire.jobs.store import JobStore
from claire.jobs.spans import locate, sentences, utf16_index

RENDERED_SCANS = 256  # scan views kept rendered; the oldest goes first
_STEP_FAILURE = re.compile(r";\s+(?=[a-z_]+: )")  # where one step's failure ends and the next one's begins
_NOTHING_CHECKED = "no fact could be checked: "


def failure_reason(error: str | None) -> str | None:
    """One line saying why a fact could not be checked. A failed check records each step that
    failed ("controller: ...; verifier: ..."), and the later ones mostly repeat the first cause: the
    first is told, the others only named."""
    if not error:
        return None
    clauses = _STEP_FAILURE.split(error.removeprefix(_NOTHING_CHECKED).strip())
    steps = [clause.split(": ", 1)[0] for clause in clauses if re.match(r"[a-z_]+: ", clause)]
    first = clauses[0]
    if steps and first.startswith(steps[0] + ": "):
        first = first[len(steps[0]) + 2:]
    if not steps:
        return first
    return f"{first} (in the {', then '.join(steps)} step{'s' if len(steps) > 1 else ''})"


def job_reason(job: dict[str, Any], facts: list[dict[str, Any]]) -> str | None:
    """Why a job's facts could not be checked (the commonest reason), or why the job itself stopped."""
    reasons = Counter(failure_reason(f["error"]) for f in facts if f["status"] == "error" and f["error"])
    if reasons:
        return reasons.most_common(1)[0][0]
    return failure_reason(job["error"]) if job["status"] == "error" else None


def fact_view(fact: dict[str, Any], review: dict[str, Any] | None, text: str = "") -> dict[str, Any]:
    """One stored fact of a scan as clients see it, with the editor's review if any; ``start`` and
    ``end`` place its sentence in the scan's ``text`` in UTF-16 code units, as JavaScript indexes it."""
    assessment = fact["assessment"]
    return {
        "index": fact["idx"], "id": fact["claim_id"], "fact": fact["fact"], "start": utf16_index(text, fact["span_start"]),
        "end": utf16_index(text, fact["span_end"]), "status": fact["status"], "score": fact["score"], "verdict": fact["verdict"],
        "error": fact["error"], "reason": failure_reason(fact["error"]) if fact["status"] == "error" else None,
        "cited": cited_numbers((assessment or {}).get("reasoning")),
        "assessment": assessment,
        "review": {k: review[k] for k in ("decision", "comment", "created")} if review else None,
    }


def check_view(store: JobStore, job: dict[str, Any]) -> dict[str, Any]:
    """A check's status, its steps so far and, when done, its Assessment and review."""
    job_id = job["id"]
    facts = store.facts(job_id)
    fact = facts[0] if facts else None
    steps = [e["data"] for e in store.events(job_id, kinds=("step",))]
    error = job["error"] or (fact or {}).get("error")
    return {"id": job_id, "status": job["status"], "error": error,
            "reason": failure_reason(error) if job["status"] == "error" or (fact or {}).get("status") == "error" else None,
            "request": job["request"], "steps": steps, "assessment": fact["assessment"] if fact else None,
            "cited": cited_numbers(((fact or {}).get("assessment") or {}).get("reasoning")),
            "review": next(iter(store.reviews(job_id)), None)}


def scan_view(store: JobStore, job: dict[str, Any], view: str, default_system: str) -> bytes:
    """A scan's status, progress and facts as JSON text; ``view`` says how much of each assessment
    is included ("full" without the trace, "trace" with it, "summary" none)."""
    job_id = job["id"]
    reviews = {r["claim_id"]: r for r in store.reviews(job_id)}
    stored = store.facts(job_id)
    facts = [fact_view(f, reviews.get(f["claim_id"]), job["request"].get("text") or "") for f in stored]
    for fact in facts:
        if view == "summary":
            fact["assessment"] = None
        elif view == "full" and fact["assessment"]:
            fact["assessment"].pop("trace", None)
    done = sum(f["status"] in ("done", "error") for f in facts)
    errors = sum(f["status"] == "error" for f in facts)
    answer = {"id": job_id, "status": job["status"], "error": job["error"], "reason": job_reason(job, stored),
              "title": job["request"]["title"],
              "text": job["request"]["text"], "system": job["request"].get("system") or default_system,
              "progress": {"total": len(facts), "done": done, "errors": errors, "checked": done - errors,
                           "flagged": sum(recorded_outcome(f) == "flagged" for f in facts)},
              "facts": facts}
    return strict_json(answer).encode()


class RenderedScans:
    """Scan views rendered once per change of the scan: clients polling for progress mostly ask
    again before anything changed. Used from the event loop only."""

    def __init__(self, limit: int = RENDERED_SCANS):
        self.limit = limit
        self._views: dict[tuple[str, str], tuple[tuple[Any, ...], bytes]] = {}

    def get(self, store: JobStore, job: dict[str, Any], view: str, default_system: str) -> bytes:
        """The scan view of ``job``, rendered again only if the job changed since it was last asked for."""
        key = (job["id"], view)
        version = (job["status"], *store.version(job["id"]))
        cached = self._views.get(key)
        if cached is None or cached[0] != version:
            cached = self._views[key] = (version, scan_view(store, job, view, default_system))
            if len(self._views) > self.limit:
                self._views.pop(next(iter(self._views)))
        return cached[1]


def edit_context(fact: str, block: str, *, around: int = 1) -> dict[str, Any]:
    """The sentence of ``block`` (the passage an edit wrote into) that states ``fact``, with up to
    ``around`` sentences either side: ``{"text", "start", "end"}`` (start/end within text in UTF-16
    code units, as JavaScript indexes it, or None)."""
    units = sentences(block)
    span = locate(fact, block)
    if span is None or not units:
        return {"text": block, "start": None, "end": None}
    first = next((i for i, (s, e) in enumerate(units) if e > span[0]), 0)
    last = max((i for i, (s, e) in enumerate(units) if s < span[1]), default=first)
    begin, end = units[max(first - around, 0)][0], units[min(last + around, len(units) - 1)][1]
    shown = block[begin:end]
    return {"text": shown, "start": utf16_index(shown, span[0] - begin), "end": utf16_index(shown, span[1] - begin),
            "before": begin > 0, "after": end < len(block)}


def patrol_item(row: dict[str, Any]) -> dict[str, Any]:
    """One checked fact of a patrolled edit as ``GET /api/patrol`` answers it: the edit (its own
    time, the sentence it added in context, the diff link), the verdict, what the agent reported,
    the passages the verifier cited (``evidence``) and the assessment without its trace."""
    request, assessment = row["request"], row["assessment"] or {}
    evidence = [{key: item.get(key) for key in ("n", "document_title", "section_title", "content", "url")}
                for item in assessment.get("evidence") or []]
    cited = cited_numbers(assessment.get("reasoning"))
    by_n = {e["n"]: e for e in evidence}
    block = ((row.get("claim") or {}).get("context") or {}).get("content") or ""
    return {
        "job_id": row["job_id"], "claim_id": row["claim_id"], "title": request.get("title"),
        "revision": request.get("revision"), "old_revision": request.get("old_revision"), "wiki": request.get("wiki"),
        "diff_url": request.get("diff_url"), "user": request.get("user"), "comment": request.get("comment"),
        "timestamp": (request.get("change") or {}).get("timestamp"), "received": request.get("received"),
        "context": edit_context(row["fact"], block) if block else None,
        "fact": row["fact"], "score": row["score"], "verdict": row["verdict"],
        "probability": assessment.get("probability"), "reasoning": assessment.get("reasoning"),
        "reported": assessment.get("reported") or [],
        "evidence": [by_n[n] for n in cited if n in by_n] or evidence[:3], "cited": cited,
        "status": "done", "index": row["idx"],
        "assessment": {key: value for key, value in assessment.items() if key != "trace"},
        "review": {"decision": row["decision"], "comment": row["comment"], "created": row["reviewed"]}
        if row.get("decision") else None,
    }


def review_record(store: JobStore, review: dict[str, Any]) -> dict[str, Any] | None:
    """A reviewed fact as one WikiCollide record, or None when its job or fact is gone or its
    verdict gives no label."""
    job = store.job(review["job_id"])
    fact = next((f for f in store.facts(review["job_id"]) if f["claim_id"] == review["claim_id"]), None)
    if job is None or fact is None:
        return None
    label = reviewed_verdict(fact["verdict"], review["decision"])
    if label is None:
        return None
    context = fact["claim"].get("context") or {}
    assessment = fact["assessment"] or {}
    return {
        "claim": {"claim_id": f"{review['job_id']}-{fact['claim_id']}", "claim_text": fact["fact"],
                  "claim_context_block": {"content": context.get("content") or fact["fact"],
                                          "document_title": context.get("document_title") or job["request"].get("title") or "(none)",
                                          "section_title": context.get("section_title") or "",
                                          "last_edit_date": context.get("last_edit_date"), "url": context.get("url")}},
        "label": label,
        "label_reasoning": review["comment"] or f"editor {review['decision']}ed the {fact['verdict']} verdict",
        "agent_trace": assessment.get("trace") or [],
    }
