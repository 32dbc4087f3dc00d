"""The controller: at each step the LLM chooses an action from the research so far.

The prompt shows the claim, its passage and the history of steps — derived from the state's
messages (:func:`research_history`) and fitted to the context window (older observations
condensed, then left out; each change is a ``context_budget`` trace item). The answer's actions
are read (:mod:`.actions`); a valid one goes to the tools node as an ``AIMessage`` with one tool
call, while an invalid or repeated one is answered here, with an observation that says what was
wrong, and costs a step. An answer with several calls runs them one step each (the rest wait in
``queued`` and need no new LLM call). An answer with no call at all ends the research when it
says something after some research (many models finish that way); an empty answer, or prose
before any research, is told to choose an action. When the step budget is spent, the research ends.
When the LLM call itself fails, the research ends too: the verifier judges what was gathered, or,
when nothing was, the run ends without a verdict (an assessment with the error and no score).
"""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command

from claire.agent.actions import Action, read_actions, thought_of
from claire.agent.state import ResearchContext, ResearchState
from claire.errors import ClaireError
from claire.llm.answers import text_of
from claire.prompts.budget import fit_history
from claire.usage import record_event
from claire.domain import TraceItem
from claire.tools.registry import argument_of

REVIEWER = "reviewer"
"""The name on a person's feedback to a flagged verdict (a HumanMessage in the state)."""


def research_history(messages: list[AnyMessage]) -> list[dict[str, str]]:
    """The steps taken so far, oldest first: each tool call with its observation and the thought
    written before it (the text of the answer that made the call; "" when none), and each person's
    feedback on a flagged verdict (``human_review``, its argument the agent's last report, empty
    when the verdict came without one)."""
    calls: dict[str, dict[str, Any]] = {}
    thoughts: dict[str, str] = {}
    steps: list[dict[str, str]] = []
    last_report = ""
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                calls[call["id"] or ""] = call
                thoughts[call["id"] or ""] = text_of(message).strip()
        elif isinstance(message, ToolMessage):
            call = calls.get(message.tool_call_id, {"name": message.name or "?", "args": {}})
            argument = str(next(iter((call.get("args") or {}).values()), ""))
            if call["name"] == "report_inconsistency":
                last_report = argument
            steps.append({"action": call["name"], "argument": argument, "observation": str(message.content),
                          "thought": thoughts.get(message.tool_call_id, "")})
        elif isinstance(message, HumanMessage) and message.name == REVIEWER:
            steps.append({"action": "human_review", "argument": last_report, "observation": str(message.content)})
    return steps


def steps_taken(messages: list[AnyMessage]) -> int:
    """The actions taken so far (each one has exactly one observation)."""
    return sum(1 for message in messages if isinstance(message, ToolMessage))


def shown_tools(tools: Any) -> list[dict[str, Any]]:
    """The actions as the controller prompt lists them (name, argument, description); finish() is
    written by the prompt itself."""
    return [{"name": tool.name, "argument": argument_of(tool.name), "description": tool.description}
            for tool in tools if tool.name != "finish"]


def _tool_call(action: Action) -> dict[str, Any]:
    argument = argument_of(action.name)
    args = {argument: action.argument} if argument else ({"value": action.argument} if action.argument else {})
    return {"name": action.name or "invalid", "args": args, "id": action.call_id or f"call_{uuid.uuid4().hex[:12]}",
            "type": "tool_call"}


def _answered_here(action: Action, observation: str, thought: str = "") -> dict[str, Any]:
    """The update of a step the controller answers itself (an invalid or repeated action)."""
    call = _tool_call(action)
    return {
        "messages": [AIMessage(content=thought, tool_calls=[call]),
                     ToolMessage(content=observation, tool_call_id=call["id"], name=call["name"], status="error")],
        "trace": [TraceItem(action_name=action.name, action_argument=action.argument or None, action_output=observation,
                            thought=thought or None)],
    }


def _dispatch(action: Action, history: list[dict[str, str]], update: dict[str, Any], thought: str = "") -> Command:
    """Send a checked action to the tools node, or answer it here when it is invalid or repeated."""
    repeated = next((number for number, step in enumerate(history, start=1)
                     if (step["action"], step["argument"]) == (action.name, action.argument)), None)
    if action.problem:
        record_event("invalid_action")
        observation = f"Invalid action: {action.problem}."
    elif repeated is not None:
        record_event("repeated_action")
        observation = (f"You already ran {action.name}({action.argument}); its result is in step {repeated} above. "
                       "Choose a different action.")
    else:
        update["messages"] = [AIMessage(content=thought, tool_calls=[_tool_call(action)])]
        return Command(update=update, goto="tools")
    step = _answered_here(action, observation, thought)
    update.update(messages=step["messages"], trace=update.get("trace", []) + step["trace"])
    return Command(update=update, goto="controller")


async def controller(state: ResearchState, runtime: Runtime[ResearchContext]) -> Command:
    """Choose the next action, or end the research when the step budget is spent."""
    context = runtime.context
    steps = steps_taken(state.messages)
    steps_left = context.max_steps - steps
    if steps_left <= 0:
        item = TraceItem(action_name="budget_exhausted", action_argument=None,
                         action_output=f"the step budget of {context.max_steps} is spent")
        return Command(update={"stop_reason": "step budget spent", "trace": [item], "queued": []}, goto="verifier")
    history = research_history(state.messages)
    if state.queued:  # the next of several calls one answer made: no new LLM call
        action = Action(**state.queued[0])
        return _dispatch(action, history, {"trace": [], "queued": state.queued[1:]})
    claim, llm = state.claim, context.llm
    native = llm.native_tools
    tools = list(context.tools) if native else None
    shown = shown_tools(context.tools)

    def render(history: list[dict[str, str]]) -> Any:
        return context.prompts.render("controller", claim=claim.text, context=claim.context, tools=shown,
                                      history=history, steps_left=steps_left, text_actions=not native,
                                      finish="finish" in context.tool_names, thoughts=context.thoughts)

    prompt, fit = fit_history(render, history, count=lambda messages: llm.count_tokens(messages, tools),
                              budget=llm.prompt_budget(), keep_latest=context.keep_observations)
    update: dict[str, Any] = {"trace": []}
    shortened = sorted(set(fit.condensed_steps + fit.omitted_steps + fit.trimmed_steps))
    if shortened and shortened != state.condensed:  # the trace notes each change, not every call
        update.update(trace=[TraceItem.model_validate(fit.trace_item())], condensed=shortened)
    try:
        answer = await llm.ainvoke(prompt, tools=tools, tool_choice="auto" if native else None,
                                   one_call=not context.parallel_actions)
    except ClaireError as error:
        update.update(stop_reason="LLM error in the controller", errors=[f"controller: {error}"])
        # With research done, the verifier judges what was gathered (still an error: cut short).
        # With none, there is nothing to judge: no verdict, rather than one that reads as researched.
        return Command(update=update, goto="verifier" if steps else END)
    actions = read_actions(answer, list(context.tool_names), native=native)
    if not actions:
        said = text_of(answer).strip()
        if said and steps > 0 and "finish" not in context.tool_names:
            # no finish() is offered (the paper's controller): only the budget or a report ends the
            # research, so a final answer in prose is asked again for an action, at the cost of a step
            record_event("asked_for_action")
            valid = ", ".join(f"{name}()" for name in context.tool_names)
            return _dispatch(Action("invalid", said[:300], f"you answered without an action, and only the step budget "
                                    f"or a reported inconsistency ends the research; choose one of: {valid}"),
                             history, update)
        if said and steps > 0:  # finish() is offered: a final answer in prose is the research's end
            record_event("plain_text_end")
            item = TraceItem(action_name="finish", action_argument=None,
                             action_output=f"The model ended the research without an action: {said[:500]}")
            update.update(stop_reason="the model answered without an action", trace=update["trace"] + [item])
            return Command(update=update, goto="verifier")
        valid = ", ".join(f"{name}()" for name in context.tool_names)
        problem = "your answer was empty" if not said else "no action found"
        return _dispatch(Action("invalid", said[:300], f"{problem}; choose one of: {valid}"), history, update)
    first, rest = actions[0], actions[1:]
    if rest and context.parallel_actions:
        update["queued"] = [vars(action) for action in rest[: steps_left - 1]]
    elif rest:  # the paper's controller takes one action a step: the others of this answer are not run
        record_event("extra_actions_dropped")
    thought = thought_of(answer)  # the history keeps it (the paper's ReAct thought)
    if context.thoughts and not thought:
        record_event("no_thought")
    return _dispatch(first, history, update, thought)
