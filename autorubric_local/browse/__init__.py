"""``autorubric-local browse``: the results database in Datasette, a local read-mostly web UI.

:mod:`.metadata` titles and describes every table and view, sets facets (run, criterion,
verdict, judge) and defines the canned queries; :mod:`.search` creates or rebuilds the
full-text indexes over submissions and explanations; :mod:`.server` runs Datasette (the
``[browse]`` extra, imported lazily) until interrupted. Only :mod:`.search` writes to the file.
"""

from __future__ import annotations

from autorubric_local.browse.metadata import CANNED_QUERIES, DESCRIPTIONS, browse_metadata
from autorubric_local.browse.search import SEARCHED_COLUMNS, index_text
from autorubric_local.browse.server import BROWSE_MISSING, DEFAULT_HOST, DEFAULT_PORT, listen, require_datasette, serve

__all__ = ["BROWSE_MISSING", "CANNED_QUERIES", "DEFAULT_HOST", "DEFAULT_PORT", "DESCRIPTIONS", "SEARCHED_COLUMNS",
           "browse_metadata", "index_text", "listen", "require_datasette", "serve"]
