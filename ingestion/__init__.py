"""Ingestion: turning sources into corpus blocks and storing them in indexes.

- ``dumps`` — streaming readers of Wikipedia dumps (XML export, Enterprise HTML) and their
  converters to blocks;
- ``dump_build`` — building and updating an index from a dump (resumable, every core), over the
  overlapped stages of ``pipeline`` and the batched encoder of ``encoding``;
- ``live_update`` — storing single edited pages in a dump-built index (the patrol);
- ``web_docs`` — web pages (the sources Wikipedia cites) as blocks;
- ``feverous_pages`` — FEVEROUS's Wikipedia pages as blocks with citable element ids.

May import ``indexes``, ``config``, ``errors`` and ``files``; nothing here is imported by ``indexes``.
"""
