"""What a result records about the run that made it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import tpdisc
from tpdisc.sim.provenance import provenance, source_commit


def test_provenance_is_plain_data_naming_version_time_and_commit() -> None:
    started = datetime.now(UTC) - timedelta(seconds=5)
    record = json.loads(json.dumps(provenance(started)))
    assert record["tpdisc_version"] == tpdisc.__version__ != "unknown"
    assert record["started"] < record["finished"]
    assert record["commit"] == source_commit()
    if record["commit"] is not None:  # a git checkout (CI, developers); None when installed
        assert len(record["commit"].removesuffix("+dirty")) == 40
