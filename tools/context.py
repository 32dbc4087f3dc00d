"""What every tool reads from the run it serves: :class:`ToolContext`, the LangGraph run context
the agent's graph is invoked with (the agent's own context extends it). Services (the LLM
client, the search engine, the prompts) and the run settings the tools obey travel here, so the
compiled graph and the tools themselves hold nothing of one run."""

from __future__ import annotations

from dataclasses import dataclass

from langchain_core.tools import BaseTool

from claire.llm.client import ChatClient
from claire.prompts import PromptLibrary
from claire.indexes.search_engine import SearchEngine


@dataclass(frozen=True)
class ToolContext:
    """The services and settings a tool call uses."""

    llm: ChatClient
    search: SearchEngine
    prompts: PromptLibrary
    docs_per_query: int = 15  # passages a search returns
    clarify_k: int = 10  # passages clarify_entity reads
    stop_on_report: bool = False  # a reported inconsistency ends the research (batch runs)
    snippet_chars: int = 0  # how much of a new passage a search shows the controller (0: all of it)
    tools: tuple[BaseTool, ...] = ()  # the enabled actions, in the order the controller is shown them

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The names of the enabled actions."""
        return tuple(tool.name for tool in self.tools)
