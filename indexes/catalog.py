"""Opening, listing and deleting indexes by name: embedded ones under an index root
(:class:`~claire.indexes.edge_store.EdgeStore`) or collections on a Qdrant server
(:class:`~claire.indexes.server_store.ServerStore`), both behind
:class:`~claire.indexes.store.IndexStore`.
"""

from __future__ import annotations

from pathlib import Path

from claire.errors import RetrievalError
from claire.indexes import sharing
from claire.indexes.edge_store import EdgeStore
from claire.indexes.index_meta import IndexMeta, check_name, read_meta_file
from claire.indexes.server_store import ServerStore, collection_meta, connect, server_errors
from claire.indexes.store import IndexStore


def _available(root: Path, url: str | None, api_key: str | None) -> str:
    names = [m.name for m in list_indexes(root, url, api_key=api_key)]
    return ", ".join(names) if names else "none yet"


def open_index(
    name: str,
    *,
    root: Path,
    url: str | None = None,
    api_key: str | None = None,
    create_meta: IndexMeta | None = None,
    replace: bool = False,
    lock_timeout: float = sharing.DEFAULT_LOCK_TIMEOUT,
) -> IndexStore:
    """Open the index ``name`` — embedded under ``root``, or on the Qdrant server at ``url`` —
    or create it from ``create_meta``. An embedded index is built as a new version of its folder
    (``replace`` lets it replace an existing one at the end); a build waits up to
    ``lock_timeout`` s for another build of the same index to finish."""
    check_name(name)
    store: IndexStore = (
        ServerStore(url, api_key=api_key, collection=name)
        if url
        else EdgeStore(Path(root) / name, open_existing=create_meta is None, replace=replace, lock_timeout=lock_timeout)
    )
    where = url or str(root)
    if create_meta is not None:
        if store.exists:
            store.close()
            raise RetrievalError(f"index {name} already exists in {where}; delete it or rebuild with --replace")
        store.create(create_meta)
        return store
    if not store.exists:
        store.close()
        raise RetrievalError(f"no index named {name} in {where}; available: {_available(Path(root), url, api_key)}")
    if not store.meta.complete:
        store.close()
        raise RetrievalError(f"index {name} was never finished (interrupted build?); rebuild it with --replace")
    return store


def list_indexes(root: Path, url: str | None = None, *, api_key: str | None = None) -> list[IndexMeta]:
    """The indexes under ``root`` (embedded) or on the Qdrant server at ``url``, by name."""
    if url is None:
        root = Path(root)
        if not root.is_dir():
            return []
        return [read_meta_file(d / "meta.json") for d in sorted(root.iterdir()) if (d / "meta.json").is_file()]
    connection = connect(url, None, api_key)
    try:
        with server_errors(connection.where):
            found = [
                collection_meta(connection.client, c.name, connection.where)
                for c in connection.client.get_collections().collections
            ]
    finally:
        connection.client.close()
    return sorted((m for m in found if m is not None), key=lambda m: m.name)


def delete_index(
    name: str,
    *,
    root: Path,
    url: str | None = None,
    api_key: str | None = None,
    lock_timeout: float = sharing.DEFAULT_LOCK_TIMEOUT,
) -> None:
    """Delete the index ``name``. An embedded index waits for a build in progress; processes that
    have it open keep searching their view of it until they close it."""
    check_name(name)
    if url is not None:
        connection = connect(url, None, api_key)
        client = connection.client
        try:
            with server_errors(connection.where):
                if client.collection_exists(name) and collection_meta(client, name, connection.where):
                    client.delete_collection(name)
                    return
        finally:
            client.close()
    else:
        path = Path(root) / name
        if (path / sharing.POINTER).is_file():
            with sharing.WriterLock(path, name, lock_timeout):
                (path / sharing.POINTER).unlink(missing_ok=True)  # from here on the index is gone
                sharing.prune(path, keep=None)
                sharing.remove_if_unused(path)
            return
    raise RetrievalError(f"no index named {name} in {url or root}; available: {_available(Path(root), url, api_key)}")
