"""Prompt templates (``*.j2``) and the one Jinja2 environment that renders them.

Each template starts with a comment block declaring its ``inputs:`` and the ``output:`` the
code parses. A rendered template is split into chat messages at marker lines
``=== system ===`` / ``=== user ===`` / ``=== assistant ===``. Template sets and variants
(``verifier.strict.j2`` chosen by ``prompts.variants = {verifier = "strict"}``) are the basis of
prompt ablations. Pure data plus this loader: imports nothing from the rest of CLAIRE but errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import jinja2
import jinja2.meta

from claire.errors import ConfigError

BUILTIN_DIR = Path(__file__).parent
_MARKER = re.compile(r"^=== (system|user|assistant) ===[ \t]*$", re.MULTILINE)
_INPUTS = re.compile(r"^(?:\{#-?)?\s*inputs:\s*(.*)$", re.MULTILINE)


class PromptError(ConfigError):
    """A template is missing, malformed, or rendered without the inputs it declares."""


@dataclass(frozen=True)
class TemplateInfo:
    name: str
    path: Path
    inputs: tuple[str, ...]


def _declared_inputs(source: str, path: Path) -> tuple[str, ...]:
    head = source.split("#}", 1)[0] if source.lstrip().startswith("{#") else ""
    match = _INPUTS.search(head)
    if not match:
        raise PromptError(f"{path}: the opening comment must declare its variables on an 'inputs:' line")
    names = match.group(1).rstrip().rstrip("-")  # a one-line comment ends "... -#}"
    return tuple(part.strip() for part in names.split(",") if part.strip())


class PromptLibrary:
    """Finds, checks and renders templates for one prompt set and its variants."""

    def __init__(self, set_name: str = "default", variants: Mapping[str, str] | None = None):
        self.set_name = set_name
        self.variants = dict(variants or {})
        folders = [BUILTIN_DIR]
        if set_name != "default":
            folder = Path(set_name).expanduser()
            if not folder.is_dir():
                raise PromptError(
                    f"prompt set '{set_name}' is neither 'default' nor a folder of .j2 templates"
                )
            folders.insert(0, folder)
        self.folders = folders
        self._env = jinja2.Environment(
            loader=jinja2.FileSystemLoader([str(f) for f in folders] + [str(f / "variants") for f in folders]),
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            keep_trailing_newline=True,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self._env.filters["truncate_chars"] = _truncate_chars
        self._env.filters["as_data"] = _as_data
        self._infos: dict[str, TemplateInfo] = {}
        for name, variant in self.variants.items():
            self.info(name)  # fail early on a variant that does not exist

    def file_name(self, name: str) -> str:
        variant = self.variants.get(name)
        return f"{name}.{variant}.j2" if variant else f"{name}.j2"

    def info(self, name: str) -> TemplateInfo:
        """The template's path and declared inputs, checked once per library (parsing is slow)."""
        if name not in self._infos:
            self._infos[name] = self._check(name)
        return self._infos[name]

    def _check(self, name: str) -> TemplateInfo:
        file_name = self.file_name(name)
        try:
            source, filename, _ = self._env.loader.get_source(self._env, file_name)  # type: ignore[union-attr]
        except jinja2.TemplateNotFound:
            raise PromptError(
                f"no prompt template '{file_name}' (looked in {', '.join(map(str, self.folders))})"
            ) from None
        path = Path(filename)
        inputs = _declared_inputs(source, path)
        try:
            used = jinja2.meta.find_undeclared_variables(self._env.parse(source))
        except jinja2.TemplateSyntaxError as error:
            raise PromptError(f"{path}:{error.lineno}: {error.message}") from None
        undeclared = sorted(used - set(inputs))
        if undeclared:
            raise PromptError(f"{path}: uses variables not declared in its inputs: {', '.join(undeclared)}")
        return TemplateInfo(name=name, path=path, inputs=inputs)

    def render_text(self, name: str, **values: Any) -> str:
        info = self.info(name)
        missing = [key for key in info.inputs if key not in values]
        if missing:
            raise PromptError(f"template {info.path.name} needs {', '.join(missing)}")
        try:
            return self._env.get_template(self.file_name(name)).render(**values)
        except jinja2.UndefinedError as error:
            raise PromptError(f"template {info.path.name}: {error.message}") from None

    def render(self, name: str, **values: Any) -> list[dict[str, str]]:
        """Render a template into chat messages ([{role, content}, ...])."""
        text = self.render_text(name, **values)
        parts = _MARKER.split(text)
        if parts[0].strip():
            raise PromptError(f"template {self.file_name(name)}: text before the first '=== role ===' line")
        messages = []
        for role, content in zip(parts[1::2], parts[2::2]):
            content = content.strip()
            if content:
                messages.append({"role": role, "content": content})
        if not messages:
            raise PromptError(f"template {self.file_name(name)} rendered no messages")
        return messages


_OUR_TAGS = re.compile(
    r"<(?=/?\s*(?:documents?|passage|fact|observation|notes|inconsistency_score|restated_claim|analysis|label|reason|question|answer|statement)\b)",
    re.IGNORECASE,
)


def _as_data(text: Any) -> str:
    """Neutralise our own delimiter tags inside retrieved text so it cannot close or fake them."""
    return _OUR_TAGS.sub("‹", "" if text is None else str(text))


def _truncate_chars(text: str, limit: int) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


@lru_cache(maxsize=16)
def _cached_library(set_name: str, variants: tuple[tuple[str, str], ...]) -> PromptLibrary:
    return PromptLibrary(set_name, dict(variants))


def library(set_name: str = "default", variants: Mapping[str, str] | None = None) -> PromptLibrary:
    """A shared library per (set, variants) so templates are parsed once per process."""
    return _cached_library(set_name, tuple(sorted((variants or {}).items())))
