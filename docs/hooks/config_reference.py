"""A MkDocs hook: the parts of the site generated at build time from the code, so the documentation
cannot drift from it.

- ``<!-- config-reference -->``: each section of the configuration model (``claire.config.Config``)
  as a table of its settings: the name as ``claire.toml`` and ``--set`` write it, its type, its
  default and its description;
- ``<!-- wording-differences -->``: the paper preset beside the paper, rule by rule
  (``claire.prompts.fidelity.side_by_side``), the table every run's report.md gives too;
- ``<!-- readme -->``: the project's README.md, the site's home page (its links into ``docs/``
  made relative to the site), so the front page has one home.
"""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

MARKER = "<!-- config-reference -->"
WORDING = "<!-- wording-differences -->"
README = "<!-- readme -->"
PIPE = "\\|"  # a | inside a table cell


def _type_name(annotation: Any) -> str:
    if typing.get_origin(annotation) is typing.Literal:
        return "one of " + ", ".join(f"`{value}`" for value in typing.get_args(annotation))
    text = getattr(annotation, "__name__", None) if not typing.get_args(annotation) else None
    text = text or str(annotation).replace("typing.", "").replace("pathlib.", "").replace("pydantic.types.", "")
    return text.replace("|", "or").replace("NoneType", "none")


def _default(field: Any) -> str:
    if field.default_factory is not None:
        value = field.default_factory()
    else:
        value = field.default
    if value is None:
        return "—"
    if hasattr(value, "get_secret_value"):
        return "(secret)"
    try:
        return "`" + json.dumps(value, default=str) + "`"
    except TypeError:
        return f"`{value}`"


def reference() -> str:
    """Markdown tables of every section's settings."""
    from claire.config import SECTIONS, Config

    parts = ["| setting | type | default | what it is |", "|---|---|---|---|",
             f"| `preset` | {_type_name(Config.model_fields['preset'].annotation)} | "
             f"{_default(Config.model_fields['preset'])} | {Config.model_fields['preset'].description or ''} |", ""]
    for section in SECTIONS:
        model = Config.model_fields[section].annotation
        parts += [f"### `[{section}]`", "", (model.__doc__ or "").strip().splitlines()[0], "",
                  "| setting | type | default | what it is |", "|---|---|---|---|"]
        for name, field in model.model_fields.items():
            description = (field.description or "").replace("|", PIPE)
            default = _default(field).replace("|", PIPE)
            parts.append(f"| `{section}.{name}` | {_type_name(field.annotation)} | {default} | {description} |")
        parts.append("")
    return "\n".join(parts)


def wording_table() -> str:
    """The paper preset beside the paper, rule by rule (the inventory every run's report.md shows)."""
    from claire.prompts.fidelity import counts, markdown_table

    tally = counts()
    return (f"{tally['follows']} rules followed, {tally['listed']} listed differences, {tally['added']} listed "
            f"additions.\n\n{markdown_table()}")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Put the generated parts where a page asks for them."""
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, reference())
    if WORDING in markdown:
        markdown = markdown.replace(WORDING, wording_table())
    if README in markdown:
        front = (Path(config["config_file_path"]).parent / "README.md").read_text(encoding="utf-8")
        front = front.replace("](docs/", "](").replace("(docs/index.md)", "(index.md)")
        markdown = markdown.replace(README, front)
    return markdown
