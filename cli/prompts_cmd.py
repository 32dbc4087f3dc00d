"""``claire prompts``: list the prompt templates, and show one filled in with a real record or the
built-in example, its messages split by role."""

from __future__ import annotations

import json
from typing import Annotated, Optional

import typer

from claire.cli.options import JsonOpt, Settings, console, with_settings

_ROLE = {"system": "system", "human": "user", "ai": "assistant"}


@with_settings("preset", "config_file", "sets")
def prompts_list(as_json: JsonOpt = False, *, settings: Settings) -> None:
    """List every prompt template: the file the configuration renders, its variants, inputs and answer."""
    from claire.agent.runtime import prompt_library

    config = settings.resolve()
    prompts = prompt_library(config)
    rows = []
    for name in prompts.names():
        info = prompts.info(name)
        rows.append({"template": name, "renders": prompts.file_name(name), "variants": prompts.variant_names(name),
                     "inputs": list(info.inputs), "output": info.output})
    if as_json:
        print(json.dumps({"preset": config.preset, "templates": rows}, indent=2))
        return
    lines = [f"Prompt templates (preset {config.preset}, task {config.agent.task}); partials (_*.j2) are left out", ""]
    for row in rows:
        chosen = "" if row["renders"] == f"{row['template']}.j2" else f"  renders {row['renders']}"
        lines.append(f"{row['template']}{chosen}")
        lines.append(f"    variants: {', '.join(row['variants']) or 'none'}")
        lines.append(f"    inputs:   {', '.join(row['inputs'])}")
        lines.append(f"    answer:   {row['output']}")
    lines += ["", "Show one filled in: claire prompts show NAME [--variant V] [--record FILE:ID]"]
    console.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)


@with_settings("preset", "config_file", "sets")
def prompts_show(
    name: Annotated[str, typer.Argument(help="The template, e.g. verifier (or verifier.lenient for a variant).")],
    variant: Annotated[Optional[str], typer.Option(
        "--variant", help="Render this variant of the template ('default' names the paper's wording); "
                          "without it, the one the configuration chooses.")] = None,
    record: Annotated[Optional[str], typer.Option(
        "--record", help="Fill it from a real record, FILE:ID (a WikiCollide, FEVEROUS or citations file and a "
                         "record's id); default: the built-in example.")] = None,
    steps: Annotated[int, typer.Option(
        "--steps", min=0, help="Research steps of the record (or example) shown as the controller's history.")] = 0,
    as_json: JsonOpt = False,
    *,
    settings: Settings,
) -> None:
    """Show a prompt template filled in: its file, declared inputs, answer format and messages by role."""
    from claire.agent.prompt_preview import record_sample, render_preview

    config = settings.resolve()
    sample = record_sample(record, passages_per_source=config.cite.passages_per_source,
                           passage_words=config.cite.passage_words) if record else None
    preview = render_preview(name, config, variant=variant, sample=sample, steps=steps)
    messages = [{"role": _ROLE.get(message.type, message.type), "content": message.content}
                for message in preview.messages]
    if as_json:
        print(json.dumps({"template": preview.template, "variant": preview.variant, "file": str(preview.path),
                          "inputs": list(preview.inputs), "output": preview.output, "values_from": preview.origin,
                          "notes": preview.notes, "messages": messages}, indent=2, ensure_ascii=False))
        return
    shown = preview.template + (f".{preview.variant}" if preview.variant else "")
    lines = [f"template  {shown}  ({preview.path})", f"inputs    {', '.join(preview.inputs)}",
             f"answer    {preview.output}", f"values    {preview.origin}"]
    lines += [f"note      {note}" for note in preview.notes]
    for message in messages:
        lines += ["", f"━━━━━━━━━━ {message['role']} ━━━━━━━━━━", message["content"]]
    console.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)
