"""Corpora and search over them: the bottom layer of CLAIRE.

What lives here: the corpus block format and its converters (``corpus``, ``feverous_pages``), sentence embedders
(``embedders``), BM25 sparse vectors (``sparse``), the two vector-store backends behind one
interface — the embedded Qdrant engine and a Qdrant server (``stores``), many readers and one
writer on an embedded index folder (``sharing``), hybrid dense + BM25 retrieval and index
building (``retriever``), the remote WikiChat search client (``wikichat``), the client and
contract of a ``claire serve`` search endpoint (``http_search``),
the selection of a search backend by name (``registry``) and the bundled demo corpus (``data/``).

It imports only third-party libraries and :mod:`claire.errors` — nothing from ``agent``,
``tools``, ``evals`` or ``cli``.
"""
