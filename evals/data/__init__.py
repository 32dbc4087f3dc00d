"""Sample data files shipped with the evaluation code (e.g. a tiny FEVEROUS-format claim file)."""
