"""The one configuration object of CLAIRE and how it is resolved.

Precedence, lowest first: built-in defaults < ``claire.toml`` (the working directory, or the file
given with ``--config``) < environment (``CLAIRE_SECTION__FIELD``, plus ``OPENAI_API_KEY`` /
``OPENAI_BASE_URL`` as the OpenAI SDK reads them) < command-line flags and ``--set key=value``;
a preset (``paper``, the defaults, or ``practical``) sits just above the defaults. pydantic-settings
reads the environment and the file (:func:`load_config`); this module layers them, and adds the
preset, retired settings, misspelt sections, and naming the layer at fault. The settings
themselves, section by section, are in :mod:`claire.settings`. A leaf module: it imports no CLAIRE
module but ``errors``, ``validation`` and ``settings``. The settings that name an entry of a
registry are checked by the check that registry registers (:func:`claire.settings.register_name_check`),
the registries being loaded the first time such a name is validated.
"""

from __future__ import annotations

import datetime
import os
import tomllib
import warnings
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError
from pydantic_settings import (BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict,
                               SettingsError, TomlConfigSettingsSource)

from claire.errors import ConfigError, mask, redact, register_secret
from claire.settings import (PRESETS, SECRET_FIELDS, AgentConfig, BaselineConfig, CiteConfig, EvalConfig, LLMConfig,
                             PromptsConfig, ResolveConfig, RetrievalConfig, WatchConfig)
from claire.validation import problems

ENV_PREFIX = "CLAIRE_"
RETIRED_SETTINGS = {
    "llm.openai_client": "every OpenAI-compatible endpoint is called through langchain-openai's ChatOpenAI",
}
"""Settings CLAIRE no longer has, with why: given anywhere, each is ignored with a note (an old
claire.toml or run keeps working)."""



class Config(BaseSettings):
    """The whole configuration of CLAIRE, one section per concern."""
    model_config = SettingsConfigDict(extra="forbid", validate_assignment=True, env_prefix=ENV_PREFIX,
                                      env_nested_delimiter="__", case_sensitive=False)

    preset: Literal["paper", "practical"] = Field(
        "paper", description="the starting point the settings were resolved from: paper (the paper's method, the "
                             "defaults) or practical (this project's additions)",
    )
    llm: LLMConfig = Field(default_factory=LLMConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    baselines: BaselineConfig = Field(default_factory=BaselineConfig)
    prompts: PromptsConfig = Field(default_factory=PromptsConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    cite: CiteConfig = Field(default_factory=CiteConfig)
    watch: WatchConfig = Field(default_factory=WatchConfig)
    resolve: ResolveConfig = Field(default_factory=ResolveConfig)

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource) -> tuple[PydanticBaseSettingsSource, ...]:
        """Only the values given: ``Config(...)`` is those over the defaults. :func:`load_config` reads
        the environment and claire.toml itself and passes the merged layers in."""
        return (init_settings,)

    def public_dict(self) -> dict[str, Any]:
        """The resolved config as plain data with every secret masked (for show and run dirs)."""
        data = self.model_dump(mode="json")
        data["llm"]["api_key"] = mask(self.llm.resolved_api_key())
        data["retrieval"]["qdrant_api_key"] = mask(
            self.retrieval.qdrant_api_key.get_secret_value() if self.retrieval.qdrant_api_key else None
        )
        return _redacted(data)

    def register_secrets(self) -> None:
        """Let every message CLAIRE prints mask this config's keys (see ``errors.redact``)."""
        register_secret(self.llm.resolved_api_key())
        if self.retrieval.qdrant_api_key:
            register_secret(self.retrieval.qdrant_api_key.get_secret_value())

    def with_overrides(self, overrides: dict[str, Any]) -> "Config":
        """A copy with dotted-key overrides applied (``{"agent.max_steps": 5}``), re-validated."""
        data = self.model_dump(mode="python")
        for key, value in overrides.items():
            if key == "preset":
                raise ConfigError("a preset applies when the configuration is resolved (--preset, CLAIRE_PRESET or "
                                  "preset in claire.toml), not as an override of a resolved one")
            _set_dotted(data, key, value)
        return _validate(data, source="overrides")


SECTIONS: tuple[str, ...] = tuple(name for name in Config.model_fields if name != "preset")
"""The configuration's sections (``llm``, ``retrieval``, ...): what ``section.field`` settings name."""


def describe(section: str, name: str) -> str:
    """What setting ``section.name`` means (its field's description; "" for an unknown setting)."""
    if not section and name in Config.model_fields:
        return Config.model_fields[name].description or ""
    model = Config.model_fields[section].annotation if section in SECTIONS else None
    fields = getattr(model, "model_fields", None)
    field = fields.get(name) if fields is not None else None
    return (field.description or "") if field is not None else ""


def _redacted(value: Any) -> Any:
    """Every string in ``value`` (nested dicts and lists) with URL credentials and keys masked."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    return value


VARIANT_ALIAS = "prompt_variant."
"""Another spelling of ``prompts.variants.TEMPLATE`` (as sweeps wrote it), accepted everywhere."""


def _set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    """Set ``section.field`` (or ``prompts.variants.TEMPLATE``, also spelt ``prompt_variant.TEMPLATE``;
    ``default`` or none drops a template's variant) in ``data``."""
    if key.startswith(VARIANT_ALIAS):
        key = "prompts.variants." + key[len(VARIANT_ALIAS):]
    parts = key.split(".")
    if len(parts) == 3 and parts[:2] == ["prompts", "variants"] and parts[2]:
        prompts = data.setdefault("prompts", {})
        if not isinstance(prompts, dict):
            prompts = data["prompts"] = prompts.model_dump(mode="python")
        variants = dict(prompts.get("variants") or {})
        if value in (None, "default"):
            variants.pop(parts[2], None)
        else:
            variants[parts[2]] = str(value)
        prompts["variants"] = variants
        return
    if len(parts) > 2:
        raise ConfigError(f"unknown setting '{key}': a setting is section.field (e.g. llm.model), or "
                          "prompts.variants.TEMPLATE for a prompt variant")
    section, _, field = key.partition(".")
    if not field:
        raise ConfigError(f"setting '{key}' must look like section.field (e.g. llm.model)")
    if section not in SECTIONS:
        raise ConfigError(f"unknown config section '{section}'; allowed: {', '.join(SECTIONS)}")
    data.setdefault(section, {})
    if not isinstance(data[section], dict):
        data[section] = data[section].model_dump(mode="python")
    data[section][field] = value


def _shown(value: Any, limit: int = 80) -> str:
    text = redact(repr(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _format_errors(error: ValidationError, source: str) -> str:
    """One line: the layer, then each setting at fault with what is wrong and the value (cut short)."""
    lines: list[str] = []
    for item, (where, message) in zip(error.errors(), problems(error)):
        if item["type"] == "extra_forbidden":
            section = item["loc"][0] if len(item["loc"]) > 1 else None
            allowed = (
                Config.model_fields[section].annotation.model_fields  # type: ignore[union-attr]
                if section in SECTIONS
                else Config.model_fields
            )
            message = f"unknown setting; allowed in {section or 'the configuration'}: {', '.join(allowed)}"
        got = item.get("input")
        if item["type"] == "extra_forbidden":  # the key is what is wrong, not its value
            got_text = ""
        elif item["loc"] and item["loc"][-1] in SECRET_FIELDS:
            got_text = ""
        elif isinstance(got, dict):
            got_text = ""
        else:
            got_text = f" (got {_shown(got)})"
        if item["type"] in ("string_type",) and not isinstance(got, str):
            message += f"; to pass text that looks like a number or date, quote it: --set {where}='\"{_shown(got, 40)}\"'"
        lines.append(f"{where}: {' '.join(str(message).split())}{got_text}")
    return f"invalid configuration ({source}): " + "; ".join(lines)


class ConfigWarning(UserWarning):
    """A setting that is ignored (e.g. a misspelt CLAIRE_* variable); the CLI prints it as a note."""


def _without_retired(data: dict[str, Any], source: str) -> dict[str, Any]:
    """``data`` without the RETIRED_SETTINGS it holds, each noted as ignored."""
    for setting, why in RETIRED_SETTINGS.items():
        section, _, field = setting.partition(".")
        if isinstance(data.get(section), dict) and field in data[section]:
            data = {**data, section: {k: v for k, v in data[section].items() if k != field}}
            warnings.warn(f"{setting} ({source}) is ignored: it was retired ({why})", ConfigWarning, stacklevel=3)
    return data


def _validate(data: dict[str, Any], source: str) -> Config:
    try:
        config = Config.model_validate(data)
    except ValidationError as error:
        raise ConfigError(_format_errors(error, source)) from None
    config.register_secrets()
    return config


def _misspelt_environment() -> None:
    """Note every CLAIRE_X__FIELD variable whose X is no section (pydantic-settings passes them by)."""
    for name in os.environ:
        section = name[len(ENV_PREFIX):].lower().partition("__")[0]
        if name.upper().startswith(ENV_PREFIX) and "__" in name and section not in SECTIONS:
            warnings.warn(f"environment variable {name} is ignored: '{section}' is not a config section "
                          f"(sections: {', '.join(SECTIONS)})", ConfigWarning, stacklevel=3)


def _file_layer(path: Path | None) -> tuple[dict[str, Any], str]:
    """The claire.toml layer (``path``, else one in the working directory) as pydantic-settings
    reads it, and the layer's name."""
    if path is None:
        path = Path.cwd() / "claire.toml"
        if not path.is_file():
            return {}, "defaults"
    elif path.is_dir():
        raise ConfigError(f"config file {path} is a folder; give the claire.toml file itself")
    elif not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    try:
        return TomlConfigSettingsSource(Config, toml_file=path)(), str(path)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    except OSError as error:
        raise ConfigError(f"cannot read config file {path}: {error.strerror or error}") from None


def _merged(lower: dict[str, Any], upper: dict[str, Any]) -> dict[str, Any]:
    """``upper`` over ``lower``, table by table (a section given in two layers keeps the fields of both)."""
    out = dict(lower)
    for key, value in upper.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _holds(data: Any, loc: tuple[Any, ...]) -> bool:
    return not loc or (isinstance(data, dict) and loc[0] in data and _holds(data[loc[0]], loc[1:]))


def load_config(config_file: Path | None = None, overrides: dict[str, Any] | None = None) -> Config:
    """Resolve defaults < preset < claire.toml < environment < overrides into one validated Config.
    pydantic-settings reads the environment (``CLAIRE_SECTION__FIELD``) and the file, and layers
    them under the overrides (flags and ``--set``) field by field
    (:meth:`Config.settings_customise_sources`). The preset is named by the overrides
    (``{"preset": ...}``), else ``CLAIRE_PRESET``, else the file's ``preset``, else it is ``paper``.
    An invalid value is reported with the layer it came from."""
    overrides = dict(overrides or {})
    file_data, file_name = _file_layer(config_file)
    file_data = _without_retired(file_data, file_name)
    _validate(file_data, source=file_name)
    _misspelt_environment()
    try:
        env_data = _without_retired(EnvSettingsSource(Config)(), "environment")
    except SettingsError as error:  # a whole section's variable (CLAIRE_LLM) that is not a JSON table
        said = " ".join(str(error).split())
        raise ConfigError(f"invalid configuration (environment): {said[:160]}{'…' if len(said) > 160 else ''} (a "
                          "CLAIRE_SECTION variable holds a JSON table; set one field with CLAIRE_SECTION__FIELD)") from None
    except RecursionError:  # JSON nested thousands deep
        raise ConfigError("invalid configuration (environment): a CLAIRE_* variable holds JSON nested too deeply") from None
    if os.environ.get("OPENAI_BASE_URL"):  # as the OpenAI SDK reads it, under CLAIRE_LLM__BASE_URL
        env_data = {**env_data, "llm": {"base_url": os.environ["OPENAI_BASE_URL"], **env_data.get("llm", {})}}
    preset = overrides.pop("preset", None) or env_data.get("preset") or file_data.get("preset") or "paper"
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {str(preset)!r}; allowed: {', '.join(PRESETS)}")
    given: dict[str, Any] = {"preset": preset}
    for key, value in overrides.items():
        if key in RETIRED_SETTINGS:
            warnings.warn(f"{key} (--set) is ignored: it was retired ({RETIRED_SETTINGS[key]})", ConfigWarning,
                          stacklevel=2)
        else:
            _set_dotted(given, key, value)
    below = {"environment": env_data, file_name: file_data, f"preset {preset}": PRESETS[preset]}
    merged: dict[str, Any] = {}
    for data in (PRESETS[preset], file_data, env_data, given):  # lowest first
        merged = _merged(merged, data)
    try:
        config = Config(**merged)
    except ValidationError as error:
        layers = {"--set or a flag": given, **below}
        blamed = [name for name, data in layers.items() if any(_holds(data, item["loc"]) for item in error.errors())]
        raise ConfigError(_format_errors(error, ", ".join(blamed) or "defaults")) from None
    config.register_secrets()
    return config


def _toml_value(raw: str) -> Any:
    """A value read as TOML when it can be (numbers, booleans, lists, tables), else the string.
    Dates and times stay strings: no setting takes one, and model names like 2024-08-06 look so."""
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw
    return raw if isinstance(value, (datetime.date, datetime.time)) else value


def parse_assignment(text: str) -> tuple[str, Any]:
    """Parse ``section.field=value`` from ``--set``."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set expects section.field=value, got {text!r}")
    return key.strip(), _toml_value(raw)
