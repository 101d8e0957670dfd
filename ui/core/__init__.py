"""Shared infrastructure of the app, used by every section: the one plan of the session
(`state`, its undo `history`, the share link `urlcodec`), typed numbers (`typed`), user
text shown as plain text (`plaintext`), tables and charts with their downloads
(`widgets`, `charts`), the plan's tables (`planner`), uploads and releases (`files`), the
per-session work folder (`workdir`) and the `glossary`.

It imports no other ui subpackage, so that any page or helper can use it.
"""
