"""Which provider a model name belongs to: ``llm.model`` may be provider-qualified
(``anthropic:claude-sonnet-4-5``, ``ollama:qwen2.5``, any provider LangChain's
``init_chat_model`` knows, each installed as an optional extra); a bare name (``gpt-4o``,
``qwen2.5:7b``) goes to an OpenAI-compatible endpoint."""

from __future__ import annotations

from claire.settings import LLMConfig

# Providers LangChain's init_chat_model can build (the prefix before ":" in llm.model), with the
# pip package each needs. A prefix not listed here is part of the model name ("qwen2.5:7b").
PROVIDER_PACKAGES: dict[str, str] = {
    "openai": "langchain-openai",
    "azure_openai": "langchain-openai",
    "anthropic": "langchain-anthropic",
    "ollama": "langchain-ollama",
    "google_genai": "langchain-google-genai",
    "google_vertexai": "langchain-google-vertexai",
    "bedrock": "langchain-aws",
    "bedrock_converse": "langchain-aws",
    "mistralai": "langchain-mistralai",
    "groq": "langchain-groq",
    "fireworks": "langchain-fireworks",
    "together": "langchain-together",
    "deepseek": "langchain-deepseek",
    "cohere": "langchain-cohere",
    "xai": "langchain-xai",
    "huggingface": "langchain-huggingface",
    "nvidia": "langchain-nvidia-ai-endpoints",
    "openrouter": "langchain-openrouter",
}
"""Provider prefix -> the pip package its LangChain chat model lives in."""

EXTRAS = {"langchain-anthropic": "anthropic", "langchain-ollama": "ollama", "langchain-google-genai": "google",
          "langchain-aws": "bedrock", "langchain-mistralai": "mistral"}
"""Provider packages CLAIRE names as its own extras (``pip install 'claire[anthropic]'``)."""


def split_model(model: str) -> tuple[str | None, str]:
    """``"anthropic:claude-x"`` -> ("anthropic", "claude-x"); a bare or unknown prefix -> (None, model)."""
    prefix, sep, rest = model.partition(":")
    if sep and prefix in PROVIDER_PACKAGES and rest:
        return prefix, rest
    return None, model


def provider_of(config: LLMConfig) -> str:
    """The provider a configuration resolves to: a model prefix wins over ``llm.provider``."""
    prefix, _ = split_model(config.model)
    if prefix:
        return prefix
    return {"azure": "azure_openai"}.get(config.provider, config.provider)


MISSING_API_KEY = ("no API key for the LLM endpoint: set OPENAI_API_KEY (or llm.api_key_env to the variable holding "
                   "it), or point llm.base_url / OPENAI_BASE_URL at a local server")
"""What a run is told when its OpenAI or Azure endpoint has no key."""


def needs_api_key(config: LLMConfig) -> bool:
    """Whether the configured endpoint lacks the key it needs: OpenAI or Azure OpenAI with none set
    (a local OpenAI-compatible server at ``llm.base_url`` usually needs none)."""
    provider = provider_of(config)
    if provider not in ("openai", "azure_openai") or config.resolved_api_key():
        return False
    return not (provider == "openai" and config.base_url)
