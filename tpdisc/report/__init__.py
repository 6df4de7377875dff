"""tpdisc's HTML pages: a search run's browser (``search_run``, ``tpdisc report``), protocol
portraits (``portrait_pages``, ``best_portraits``), and what every page shares (``page``,
``templates``, and ``markup``, the pieces a study's report is written with)."""

from tpdisc.report.search_run import build_report

__all__ = ["build_report"]
