"""Kill a study with SIGKILL in the middle of a stage, rerun it, and check that nothing
finished was redone.

    python benchmarks/study_kill_resume.py --out DIR [--preset smoke] [--kill-in ablation]
        [--delay 5] [--recipes FILE]

The study runs as a user runs it (``tpdisc study --preset P --out DIR``). Once the stage
``--kill-in`` has started and ``--delay`` seconds have passed, the process group gets
SIGKILL. The script then snapshots every stored result — each row of ``study.sqlite``,
each protocol of each run's archive with the records its search kept of it, and each row
of the runs' analysis tables, with its SQLite rowid (a row written again gets a new rowid:
the stores write with INSERT OR REPLACE) — reruns the same command, and checks that:

- every row of the snapshot is still there with the same rowid and value;
- every stage finished exactly once over both sessions;
- the stages finished before the kill were skipped by the rerun, not started or resumed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from tpdisc.storage import connect, has_table

Snapshot = dict[str, Any]


def read(path: Path, table: str, sql: str) -> list[tuple[Any, ...]]:
    """``sql``'s rows, or none while the file or its ``table`` is not made yet."""
    if not path.is_file():
        return []
    with closing(connect(path, readonly=True)) as db:
        return db.execute(sql).fetchall() if has_table(db, table) else []


def snapshot(out: Path) -> Snapshot:
    rows: Snapshot = {}
    for r in read(out / "study.sqlite", "sims", "SELECT rowid, stage, item, seed, value FROM sims"):
        rows[f"study {r[1]} {r[2]} seed {r[3]}"] = (r[0], r[4])
    for archive in sorted((out / "runs").glob("*/archive.sqlite")):
        run = archive.parent.name
        for r in read(
            archive, "protocols", "SELECT rowid, id, iteration, attempt, code FROM protocols"
        ):
            rows[f"{run} protocol {r[1]}"] = (r[0], r[2], r[3], r[4])
        for r in read(
            archive,
            "analysis",
            "SELECT rowid, protocol_id, kind, seed, settings, value FROM analysis",
        ):
            rows[f"{run} analysis {r[1]} {r[2]} {r[3]} {r[4]}"] = (r[0], r[5])
        for r in read(
            archive, "records", "SELECT rowid, protocol_id, settings, seeds, data FROM records"
        ):
            rows[f"{run} records {r[1]}"] = (r[0], r[2], r[3], r[4])
    return rows


def events(out: Path) -> list[tuple[int, str, str]]:
    return [
        (int(s), stage, event)
        for s, stage, event in read(
            out / "study.sqlite",
            "events",
            "SELECT session, stage, event FROM events ORDER BY rowid",
        )
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--preset", default="smoke")
    parser.add_argument("--kill-in", default="ablation", help="stage to kill the study in")
    parser.add_argument("--delay", type=float, default=5.0, help="seconds into that stage")
    parser.add_argument("--recipes", default=None)
    args = parser.parse_args()
    command = ["tpdisc", "study", "--preset", args.preset, "--out", str(args.out)]
    if args.recipes:
        command += ["--recipes", args.recipes]

    started = time.perf_counter()
    first = subprocess.Popen(command, start_new_session=True)
    while not any(s == args.kill_in and e == "started" for _, s, e in events(args.out)):
        if first.poll() is not None:
            print(f"the study ended before stage {args.kill_in} started", file=sys.stderr)
            return 1
        time.sleep(0.2)
    time.sleep(args.delay)
    os.killpg(first.pid, signal.SIGKILL)  # the study and its worker processes
    first.wait()
    killed = time.perf_counter() - started
    before = snapshot(args.out)
    finished_before = {s for _, s, e in events(args.out) if e == "finished"}
    print(f"killed after {killed:.0f} s in stage {args.kill_in}; finished before the kill: "
          f"{', '.join(sorted(finished_before))}; {len(before)} stored rows")  # fmt: skip

    started = time.perf_counter()
    second = subprocess.run(command)
    rerun = time.perf_counter() - started
    after = snapshot(args.out)
    log = events(args.out)
    changed = [key for key, value in before.items() if after.get(key) != value]
    finished = [s for _, s, e in log if e == "finished"]
    second_session = max(s for s, _, _ in log)
    redone = [
        (stage, event)
        for s, stage, event in log
        if s == second_session and stage in finished_before and event != "skipped"
    ]
    report = {
        "killed_after_s": round(killed),
        "rerun_s": round(rerun),
        "rerun_exit": second.returncode,
        "rows_before_kill": len(before),
        "rows_changed_or_lost": len(changed),
        "rows_added_by_rerun": len(set(after) - set(before)),
        "stages_finished_before_kill": sorted(finished_before),
        "finished_counts": {s: finished.count(s) for s in sorted(set(finished))},
        "finished_stages_started_again": redone,
    }
    print(json.dumps(report, indent=2))
    ok = (
        second.returncode == 0
        and not changed
        and not redone
        and all(n == 1 for n in report["finished_counts"].values())
    )
    print("OK: nothing finished was redone" if ok else f"FAILED: changed {changed[:5]}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
