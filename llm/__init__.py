"""The LLM layer: LangChain chat models built from the configuration and the one client every
part of CLAIRE calls them through.

- ``models``: which LangChain chat model a configuration names (``ChatOpenAI`` on the OpenAI SDK's
  aiohttp transport for every OpenAI-compatible endpoint, ``AzureChatOpenAI``, any
  ``init_chat_model`` provider, the in-process llama.cpp model) with its public parameters;
- ``local``: a GGUF file run in-process by llama-cpp-python, as a LangChain chat model;
- ``client``: :class:`~claire.llm.client.ChatClient`: which failures are worth retrying and the
  retries themselves (the one policy in ``retrying``), a process-wide concurrency limit, failing
  fast when the endpoint is down, tidying answers, Anthropic's prompt-cache breakpoints, and
  asking again when an answer cannot be read;
- ``cache``: a SQLite LangChain cache keyed by endpoint; ``tokens``:
  context windows and token counts; ``answers``: reading scores, labels and tags out of model
  answers; ``cassette``: recording a run's calls for replay tests.

One call passes two of these modules (``client``, ``cache``; three while recording), the
accounting of :mod:`claire.usage` (tokens and cost through a LangChain callback) and the library's
chat model, so what happens to a request is read in few places. Fitting prompts into the context
window is :mod:`claire.prompts.budget`'s.
May import ``config``, ``settings``, ``errors``, ``files``, ``usage``, ``retrying`` and ``prompts``;
nothing else of CLAIRE.
"""
