"""What an endpoint with constrained decoding would have written: a scripted answer in a template's
tags turned into the JSON object of the answer shape the request's schema names (test servers only;
an answer that is JSON already is left as it is)."""

from __future__ import annotations

import json
import re
from typing import Any

from claire.prompts.answers import ANSWERS, Answer, ExtractionAnswer, RankingAnswer


def _shape(schema: dict[str, Any]) -> type[Answer] | None:
    """The answer shape a request's schema names: by the json_schema's name, or by the schema's title."""
    title = (schema.get("schema") or {}).get("title")
    return next((shape for shape in ANSWERS.values()
                 if shape.schema_name == schema.get("name") or shape.__name__ == title), None)


def _tag(text: str, name: str) -> str | None:
    found = re.findall(rf"<{name}>(.*?)</{name}>", text, re.DOTALL)
    return found[-1].strip() if found else None


def as_schema_json(text: str, schema: dict[str, Any]) -> str:
    """``text`` (a tagged answer) as the JSON of the shape named by ``schema`` (the request's
    ``json_schema``): each field from its tag; a number field read as a number."""
    if text.lstrip().startswith("{"):
        return text
    shape = _shape(schema)
    if shape is None:
        return text
    if shape is RankingAnswer:
        return json.dumps({"order": [int(n) for n in re.findall(r"\[(\d+)\]", text)]})
    if shape is ExtractionAnswer:
        pairs = re.findall(r"<fact>(.*?)</fact>\s*(?:<source>(.*?)</source>)?", text, re.DOTALL)
        return json.dumps({"reasoning": "", "facts": [{"fact": f.strip(), "source": s.strip()} for f, s in pairs]})
    data: dict[str, Any] = {}
    for name, field in shape.model_fields.items():
        value: Any = _tag(text, name if name != "queries" else "query")
        if name == "queries":
            value = [q.strip() for q in re.findall(r"<query>(.*?)</query>", text, re.DOTALL)]
        elif value is None:
            if field.is_required():
                value = "" if field.annotation is str else None
            else:
                continue
        elif name == "evidence":
            value = [line.strip() for line in value.splitlines() if line.strip()]
        elif field.annotation in (float, int, int | None):
            try:
                value = float(value) if field.annotation is float else int(value)
            except ValueError:
                pass  # kept as written: the client finds it does not fit
        data[name] = value
    return json.dumps(data)
