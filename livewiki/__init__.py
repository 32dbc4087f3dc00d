"""A live wiki, followed edit by edit: its recent-changes stream (``recentchanges``), its MediaWiki
API (``mediawiki``), what an edit changed (``edit_diff``) and the patrol that updates the index and
checks each kept edit's new facts as a job (``patrol``).

May import ``jobs``, ``runs``, ``ingestion``, ``indexes``, ``config``, ``domain``, ``retrying``,
``files`` and ``errors``; never ``studies``, ``web`` or ``cli``.
"""
