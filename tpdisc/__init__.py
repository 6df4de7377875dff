"""tpdisc: discover transmission protocols for groups that innovate together."""

__version__ = "0.1.0"
