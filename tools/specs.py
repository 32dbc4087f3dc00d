"""What the controller is told about each action: OpenAI tool schemas for native tool calling and
the same descriptions for the text-action fallback (``name(argument)``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolSpec:
    name: str
    argument: str  # the one argument's name ("" for none)
    description: str

    def openai_schema(self) -> dict[str, Any]:
        properties = {self.argument: {"type": "string", "description": self.argument.replace("_", " ")}} if self.argument else {}
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {"type": "object", "properties": properties, "required": [self.argument] if self.argument else []},
            },
        }


TOOL_SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec("search", "query", "Search Wikipedia outside the fact's own article. Returns numbered passages."),
        ToolSpec(
            "clarify_entity",
            "name_and_description",
            "Find entities with similar names and get a note telling them apart, e.g. 'Paris (city in Texas)'.",
        ),
        ToolSpec("explain", "topic", "Get short background on a term or topic (no search)."),
        ToolSpec(
            "report_inconsistency",
            "evidence",
            "Report that a retrieved passage contradicts the fact; quote the passage and say what differs.",
        ),
        ToolSpec("finish", "", "Stop researching when you have looked properly and found no contradiction."),
    )
}


def specs_for(enabled: list[str]) -> list[ToolSpec]:
    """The specs of the enabled tools, in a fixed order, always ending with finish."""
    return [TOOL_SPECS[name] for name in TOOL_SPECS if name in enabled] + [TOOL_SPECS["finish"]]
