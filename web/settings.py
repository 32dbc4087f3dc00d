"""How ``claire serve`` listens and guards itself: address, token, limits, where jobs are kept
and which extra origins may call it. What a check does follows :class:`~claire.config.Config`.
Resolved by pydantic-settings as the configuration is: defaults < environment (``CLAIRE_SERVE_PORT``,
``CLAIRE_SERVE_TOKEN``, ...) < the flags of ``claire serve``."""

from __future__ import annotations

from pathlib import Path

from typing import Any

from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from claire.errors import ConfigError
from claire.validation import describe
from claire.web.security import is_loopback
from claire.jobs.store import default_store_path


WILDCARD_HOSTS = {"0.0.0.0", "::", ""}


class ServeSettings(BaseSettings):
    """The server's own settings (the checking itself follows :class:`~claire.config.Config`); each
    may be given as ``CLAIRE_SERVE_<NAME>`` (lists as JSON), and the values passed win."""
    model_config = SettingsConfigDict(env_prefix="CLAIRE_SERVE_", extra="forbid", case_sensitive=False)

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    token: SecretStr | None = None
    concurrency: int = Field(4, ge=1, le=256)
    max_body_bytes: int = Field(1_000_000, ge=1024)
    max_jobs: int = Field(200, ge=1)  # queued or running at once; more are refused with 429
    data_dir: Path | None = None
    cors_origins: list[str] = Field(default_factory=list)
    allowed_hosts: list[str] = Field(default_factory=list)  # more names the Host header may give
    watch: bool = False  # also run the patrol of live edits (config.watch) inside the server
    worklist: Path | None = None  # a run directory of `claire worklist` shown in the Worklist tab
    request_timeout: float = Field(30.0, gt=0, le=3600)  # seconds a client has to send a whole request

    @classmethod
    def resolve(cls, **given: Any) -> "ServeSettings":
        """The settings from the values given (None: not given, so the environment or the default
        decides); a ConfigError naming each invalid one."""
        try:
            return cls(**{name: value for name, value in given.items() if value is not None})
        except ValidationError as error:
            raise ConfigError(f"invalid server settings (flags or CLAIRE_SERVE_* variables): {describe(error)}") from None
        except SettingsError as error:  # a list variable that is not JSON
            raise ConfigError(f"invalid server settings: {error} (CLAIRE_SERVE_CORS_ORIGINS and "
                              "CLAIRE_SERVE_ALLOWED_HOSTS hold JSON lists)") from None

    def trusted_hosts(self) -> list[str] | None:
        """The names a request's Host header may give: the bound address, the loopback names and
        ``allowed_hosts``; None (any) for a wildcard bind without ``allowed_hosts``, which already
        needs a token."""
        if self.host in WILDCARD_HOSTS and not self.allowed_hosts:
            return None
        names = {self.host, "localhost", "127.0.0.1", "::1", "[::1]"} if is_loopback(self.host) else {self.host}
        return sorted((names - WILDCARD_HOSTS) | set(self.allowed_hosts))

    def bearer_token(self) -> str | None:
        """The token clients must send, as plain text; None when the API is open."""
        return self.token.get_secret_value() if self.token else None

    def store_path(self) -> Path:
        """The SQLite file that holds the server's jobs and reviews."""
        return default_store_path(self.data_dir)

    def own_origins(self) -> list[str]:
        """The origins the server's own page is loaded from (loopback names count as one)."""
        hosts = {self.host, "127.0.0.1", "localhost"} if is_loopback(self.host) else {self.host}
        return [f"http://{host}:{self.port}" for host in sorted(hosts)]
