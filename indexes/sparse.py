"""BM25 sparse vectors, shared by both vector stores.

Qdrant Edge's built-in BM25 model tokenises (English stop words, Snowball stemming) and hashes
tokens to sparse indices; a document vector holds BM25 term-frequency weights, a query vector
weight 1.0 per distinct token. The IDF half of BM25 is applied by the store (``Modifier.Idf``),
so the same vectors give the same ranking in the embedded engine and on a Qdrant server.
"""

from __future__ import annotations

from qdrant_client import models
from qdrant_edge import Bm25, Bm25Config, SparseVector

LANGUAGE = "english"

_model = Bm25(Bm25Config(language=LANGUAGE))


def document_vector(text: str) -> SparseVector:
    """The BM25 vector of a passage to index."""
    return _model.embed_document(text)


def query_vector(text: str) -> SparseVector:
    """The BM25 vector of a search query (empty when it has only stop words)."""
    return _model.embed_query(text)


def for_client(vector: SparseVector) -> models.SparseVector:
    """The same vector in qdrant-client's type, for the server store."""
    return models.SparseVector(indices=list(vector.indices), values=list(vector.values))
