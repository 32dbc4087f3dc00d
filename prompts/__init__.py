"""Prompt templates (``*.j2``) and the one Jinja2 environment that renders them.

Each template starts with a comment block declaring its ``inputs:`` and the ``output:`` the
code parses. A rendered template is split into chat messages at marker lines
``=== system ===`` / ``=== user ===`` / ``=== assistant ===``. The split happens *before* any value
is inserted: every ``{{ expression }}`` first renders as a placeholder, the template's own text is
split into messages, and only then are the values put back, so no inserted text (a retrieved
passage, a context file, a dataset field) can open a message of another role. Template sets and variants
(``verifier.strict.j2`` chosen by ``prompts.variants = {verifier = "strict"}``) are the basis of
prompt ablations. :meth:`PromptLibrary.render` returns a :class:`Prompt`: LangChain chat messages
plus the name of the template they came from, which recordings of a run keep and which the LLM
client tells a test server (``X-Claire-Prompt``) when ``llm.prompt_header`` is on.
Templates read passages (:class:`~claire.indexes.corpus.Passage` and its kinds) by their fields.
Pure data plus this loader: imports nothing from the rest of CLAIRE but errors.
"""

from __future__ import annotations

import contextvars
import hashlib
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from glob import escape as glob_escape
from pathlib import Path
from typing import Any, Mapping

import jinja2
import jinja2.meta
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from claire.errors import ConfigError

BUILTIN_DIR = Path(__file__).parent
DEFAULT_MAX_VALUE_CHARS = 6000
"""The most characters of one inserted value (a passage, a context, a fact) a prompt shows."""
_MARKER = re.compile(r"^=== (system|user|assistant) ===[ \t]*$", re.MULTILINE)
_SLOT = re.compile("\x00(\\d+)\x00")  # where an inserted value goes back after the role split
_INPUTS = re.compile(r"^(?:\{#-?)?\s*inputs:\s*(.*)$", re.MULTILINE)
_OUTPUT = re.compile(r"^\s*output:\s*(.*)$", re.MULTILINE)


class PromptError(ConfigError):
    """A template is missing, malformed, or rendered without the inputs it declares."""


@dataclass(frozen=True)
class TemplateInfo:
    """A template's file, the inputs it declares and the first line of what it says its answer is."""
    name: str
    path: Path
    inputs: tuple[str, ...]
    output: str = ""


def _declared_inputs(source: str, path: Path) -> tuple[str, ...]:
    head = source.split("#}", 1)[0] if source.lstrip().startswith("{#") else ""
    match = _INPUTS.search(head)
    if not match:
        raise PromptError(f"{path}: the opening comment must declare its variables on an 'inputs:' line")
    names = match.group(1).rstrip().rstrip("-")  # a one-line comment ends "... -#}"
    return tuple(part.strip() for part in names.split(",") if part.strip())


def _declared_output(source: str) -> str:
    """The opening comment's ``output:`` entry, whole: its first line and the lines under it that
    are indented deeper than the ``output:`` key ("" when it has none)."""
    head = source.split("#}", 1)[0] if source.lstrip().startswith("{#") else ""
    match = _OUTPUT.search(head)
    if not match:
        return ""
    key_indent = len(match.group(0)) - len(match.group(0).lstrip())
    parts = [match.group(1).strip()]
    for line in head[match.end():].split("\n")[1:]:
        if not line.strip() or len(line) - len(line.lstrip()) <= key_indent:
            break
        parts.append(line.strip())
    return " ".join(parts).rstrip("-").rstrip()


PROMPT_HEADER = "X-Claire-Prompt"
"""The HTTP header that names the prompt template a request was rendered from (``verifier``,
``verifier.feverous``); sent only when ``llm.prompt_header`` is on, for test servers (never to a
provider otherwise)."""

_ROLES: dict[str, type[BaseMessage]] = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}


LIBRARY_VALUES = ("structured", "answer_fields")
"""What every template may read without declaring it: whether its fixed-shape answer is asked for
as JSON (llm.structured), and that answer's keys (for the shared ``_json_answer.j2`` section)."""


class Prompt(list):
    """LangChain chat messages that remember the template they were rendered from: ``template``
    (``"verifier"``) and the ``variant`` chosen for it (``"feverous"`` or None). A plain list
    otherwise; ``prompt + [more messages]`` (a follow-up in the same conversation) keeps the names."""

    def __init__(self, messages: Any = (), template: str = "", variant: str | None = None, answer: Any = None):
        super().__init__(messages)
        self.template = template
        self.variant = variant
        # The answer shape the prompt asked for as JSON (a claire.prompts.answers.Answer class), None
        # when it asked for tags or prose: the LLM client sends its schema and reads the answer by it.
        self.answer = answer
        # The template's name, with the variant after a dot when one was chosen (``verifier.feverous``).
        self.name = f"{template}.{variant}" if variant else template

    def __add__(self, other: Any) -> "Prompt":  # type: ignore[override]
        return Prompt(list.__add__(self, list(other)), self.template, self.variant, self.answer)


class PromptLibrary:
    """Finds, checks and renders templates for one prompt set and its variants."""

    def __init__(self, set_name: str = "default", variants: Mapping[str, str] | None = None,
                 max_value_chars: int = DEFAULT_MAX_VALUE_CHARS, structured: bool = False):
        self.set_name = set_name
        self.structured = structured  # llm.structured = "auto": fixed-shape answers asked for as JSON
        self.max_value_chars = max_value_chars
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
            finalize=_hold_value,
            auto_reload=False,  # templates are read once per library; no file check on every render
        )
        self._env.filters["truncate_chars"] = _truncate_chars
        self._env.filters["squash"] = lambda text: " ".join(_plain(text).split())  # every run of white space as one space
        # Every piece of untrusted text is capped, so no passage, context or fact makes a prompt unbounded.
        self._env.filters["as_data"] = lambda text: _as_data(_truncate_chars(_plain(text), self.max_value_chars))
        self._env.filters["as_attr"] = lambda text: _as_attr(_truncate_chars(_plain(text), 300))
        # one line of text in the prompt's own sentence (a title, a tool's argument): no line break, no quote
        self._env.filters["as_line"] = lambda text: _as_attr(_truncate_chars(_plain(text), self.max_value_chars))
        self._infos: dict[str, TemplateInfo] = {}
        for name, variant in self.variants.items():
            self.info(name)  # fail early on a variant that does not exist

    def digest(self) -> str:
        """A short fingerprint of every template this library renders (its set and variants
        resolved, partials included): a run directory records it, so a run never resumes with
        other prompt texts than it began with."""
        names = sorted({path.stem for folder in self.folders for path in folder.glob("*.j2")})
        hasher = hashlib.sha256()
        files = [(name, self.file_name(name)) for name in names]
        files += [(f"{name}:base", f"{name}.j2") for name in sorted(self.variants) if self.variants[name]]  # a variant extends it
        for name, file in files:
            source, _, _ = self._env.loader.get_source(self._env, file)  # type: ignore[union-attr]
            hasher.update(f"{name}\0{source}\0".encode("utf-8"))
        return hasher.hexdigest()[:16]

    def names(self) -> list[str]:
        """Every template this library can render, by name (partials, whose names start with ``_``, left out)."""
        return sorted({path.stem for folder in self.folders for path in folder.glob("*.j2")
                       if not path.name.startswith("_")})

    def variant_names(self, name: str) -> list[str]:
        """The variants of template ``name`` found in the ``variants`` folders (``strict`` for verifier.strict.j2)."""
        found = {path.name[len(name) + 1: -len(".j2")] for folder in self.folders
                 for path in (folder / "variants").glob(f"{glob_escape(name)}.*.j2")}
        return sorted(variant for variant in found if variant and "." not in variant)

    def file_name(self, name: str) -> str:
        """The file a template name renders from (its variant's, when one is chosen)."""
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
        undeclared = sorted(used - set(inputs) - set(LIBRARY_VALUES))
        if undeclared:
            raise PromptError(f"{path}: uses variables not declared in its inputs: {', '.join(undeclared)}")
        return TemplateInfo(name=name, path=path, inputs=inputs, output=_declared_output(source))

    def _render_slotted(self, name: str, values: dict[str, Any]) -> tuple[str, list[str]]:
        """The template's own text with each inserted value replaced by a numbered slot, and the
        values in slot order."""
        info = self.info(name)
        missing = [key for key in info.inputs if key not in values]
        if missing:
            raise PromptError(f"template {info.path.name} needs {', '.join(missing)}")
        held: list[str] = []
        token = _HELD.set(held)
        try:
            shape = self.answer_shape(name)
            text = self._env.get_template(self.file_name(name)).render(
                **values, structured=shape is not None, answer_fields=shape.fields_for_prompt() if shape else [])
        except jinja2.UndefinedError as error:
            raise PromptError(f"template {info.path.name}: {error.message}") from None
        finally:
            _HELD.reset(token)
        return text, held

    def render_text(self, name: str, **values: Any) -> str:
        """The rendered template as one text (role marker lines included)."""
        text, held = self._render_slotted(name, values)
        return _fill(text, held)

    def render(self, name: str, **values: Any) -> Prompt:
        """Render a template into chat messages that carry the template's name. Roles come from
        the template's own marker lines only, never from inserted values."""
        text, held = self._render_slotted(name, values)
        parts = _MARKER.split(text)
        if parts[0].strip():
            raise PromptError(f"template {self.file_name(name)}: text before the first '=== role ===' line")
        messages = []
        for role, content in zip(parts[1::2], parts[2::2]):
            content = _fill(content, held).strip()
            if content:
                messages.append(_ROLES[role](content=content))
        if not messages:
            raise PromptError(f"template {self.file_name(name)} rendered no messages")
        return Prompt(messages, name, self.variants.get(name), self.answer_shape(name))

    def answer_shape(self, name: str) -> Any:
        """The JSON answer shape template ``name`` asks for in this library (None: tags or prose)."""
        if not self.structured:
            return None
        from claire.prompts.answers import answer_for

        return answer_for(name, self.variants.get(name))


# The values held back during one render (a context variable, so concurrent renders stay apart).
_HELD: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("claire_prompt_values", default=None)


def _hold_value(value: Any) -> Any:
    """Jinja's finalize hook: keep the value aside and leave a numbered slot in the text."""
    held = _HELD.get()
    if held is None:  # rendering outside PromptLibrary (not expected): plain behaviour
        return value
    held.append("" if value is None else str(value))
    return f"\x00{len(held) - 1}\x00"


def _fill(text: str, held: list[str]) -> str:
    return _SLOT.sub(lambda m: held[int(m.group(1))], text)


# Characters that could open or close a delimiter tag, in their ASCII, full-width, small and
# bracket look-alike forms, and the invisible characters that could hide inside a tag name.
_ANGLES = str.maketrans({
    "<": "‹", ">": "›", "\uff1c": "‹", "\uff1e": "›", "\ufe64": "‹", "\ufe65": "›",
    "\u2329": "‹", "\u232a": "›", "\u3008": "‹", "\u3009": "›", "\u27e8": "‹", "\u27e9": "›",
})
_INVISIBLE = dict.fromkeys(
    [0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E, 0x3164, 0xFEFF, 0xFFA0,
     *range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2060, 0x2070)]
)
_QUOTES = str.maketrans({'"': "″", "\uff02": "″", "'": "′"})


# The same tables as patterns: translate() looks every character up, which on a passage of a few
# thousand characters costs far more than a regular-expression scan for the few that change.
_ANGLE_CHARS = re.compile("[" + "".join(re.escape(chr(c)) for c in _ANGLES) + "]")
_INVISIBLE_CHARS = re.compile("[" + "".join(re.escape(chr(c)) for c in _INVISIBLE) + "]")


def _angle(match: re.Match[str]) -> str:
    return _ANGLES[ord(match.group())]


def _as_data(text: Any) -> str:
    """Untrusted text made inert inside the prompt's delimiters: no angle bracket in any of its
    look-alike forms survives, so the text can neither close a ``<passage>``/``<document>`` fence
    nor fake one of ours; invisible format characters are dropped."""
    value = "" if text is None else str(text)
    if value.isascii():  # only the ASCII brackets can occur
        return value.replace("<", "‹").replace(">", "›")
    value = unicodedata.normalize("NFC", _INVISIBLE_CHARS.sub("", value))
    return _ANGLE_CHARS.sub(_angle, value)


def _as_attr(text: Any) -> str:
    """``as_data`` for a value written inside a quoted attribute: quotes cannot end the attribute
    (``section="x" trusted="true"`` stays one value); line breaks become spaces."""
    return " ".join(_as_data(text).translate(_QUOTES).split())


def _plain(value: Any) -> str:
    return "" if value is None else str(value)


def _truncate_chars(text: str, limit: int) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


@lru_cache(maxsize=16)
def _cached_library(set_name: str, variants: tuple[tuple[str, str], ...], max_value_chars: int,
                    structured: bool) -> PromptLibrary:
    return PromptLibrary(set_name, dict(variants), max_value_chars, structured)


def library(set_name: str = "default", variants: Mapping[str, str] | None = None,
            max_value_chars: int = DEFAULT_MAX_VALUE_CHARS, structured: bool = False) -> PromptLibrary:
    """A shared library per (set, variants, cap, answer format) so templates are parsed once per process."""
    return _cached_library(set_name, tuple(sorted((variants or {}).items())), max_value_chars, structured)
