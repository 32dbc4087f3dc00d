"""Corpora and search over them: the bottom layer of CLAIRE.

What lives here: the corpus block format (``corpus``), sentence embedders (``embedders``) and
query encoders (``query_encoders``), BM25 sparse vectors (``sparse``), the store interface
(``store``) and its two backends — the embedded Qdrant engine (``edge_store``) and a Qdrant
server (``server_store``) — opened, listed and deleted by name in ``catalog``; many readers and
one writer on an embedded index folder (``sharing``), hybrid dense + BM25 retrieval
(``retriever``), the search engine the agent and baselines search with (``search_engine``, with
RankGPT listwise reranking in ``rankgpt``), the remote WikiChat search client (``wikichat``), the
client and contract of a ``claire serve`` search endpoint (``http_search``), the selection of a
search backend by name (``registry``) and the bundled demo corpus (``data/``). Building indexes
from dumps and other sources is :mod:`claire.ingestion`.

It imports third-party libraries, :mod:`claire.errors`, :mod:`claire.files` and — for RankGPT —
the LLM client and prompts; nothing from ``ingestion``, ``agent``, ``tools``, ``evals`` or ``cli``.
"""
