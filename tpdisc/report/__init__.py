"""Static HTML reports of search runs: ``tpdisc report``."""

from tpdisc.report.site import build_report

__all__ = ["build_report"]
