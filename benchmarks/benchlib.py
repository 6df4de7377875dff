"""Helpers shared by the benchmark scripts: the machine, its load, timing, and recording
figures in docs/performance.md."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tpdisc.agents.population import AGENT_TYPES
from tpdisc.domain.data import default_graph
from tpdisc.domain.variants import Domain, make_domain

ROOT = Path(__file__).resolve().parent.parent
PERFORMANCE_DOC = ROOT / "docs" / "performance.md"
# The agent types the issue asks figures for, in the order they are reported.
BENCH_AGENT_TYPES = ("empowerment", "stochastic")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def machine() -> str:
    """One line describing where the figures were measured."""
    return (
        f"{cpu_model()}, {usable_cores()} usable cores ({os.cpu_count()} logical), "
        f"Python {platform.python_version()}, numpy {np.__version__}, {platform.system()} "
        f"{platform.release()}"
    )


def load() -> str:
    """The load average right now: other work on the machine inflates wall times."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f}/{five:.2f}/{fifteen:.2f}"


def agent_types() -> list[str]:
    """The benchmarked agent types this version has."""
    return [t for t in BENCH_AGENT_TYPES if t in AGENT_TYPES]


def full_domain(recipes: str | None = None) -> Domain:
    """The full game, from ``recipes`` or wherever tpdisc finds its data."""
    return make_domain(default_graph(recipes))


@dataclass
class Timing:
    """Wall and CPU (this process) seconds of several repetitions."""

    wall: list[float]
    cpu: list[float]

    @property
    def wall_median(self) -> float:
        return statistics.median(self.wall)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu)

    def describe(self) -> str:
        return (
            f"wall {self.wall_median:.3f} s (min {min(self.wall):.3f}, {len(self.wall)} runs), "
            f"CPU {self.cpu_median:.3f} s"
        )


def timed(fn: Callable[[], object], repeat: int) -> Timing:
    walls, cpus = [], []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return Timing(walls, cpus)


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument(
        "--record",
        action="store_true",
        help=f"Also write the figures into {PERFORMANCE_DOC.relative_to(ROOT)}.",
    )
    p.add_argument(
        "--recipes",
        default=None,
        help="Little Alchemy 2 recipe file (default: $TPDISC_RECIPES, then the user cache).",
    )
    return p


def record(key: str, markdown: str, doc: Path = PERFORMANCE_DOC) -> None:
    """Replace this benchmark's block in ``doc`` (appended the first time).

    Only the text between this key's markers changes, so sections written by hand or by
    other benchmarks stay as they are.
    """
    begin, end = f"<!-- BEGIN {key} -->", f"<!-- END {key} -->"
    block = f"{begin}\n{markdown.strip()}\n{end}"
    text = doc.read_text() if doc.exists() else "# Performance\n"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)
    print(f"recorded in {doc}")


def report(
    key: str, title: str, lines: list[str], record_it: bool, doc: Path = PERFORMANCE_DOC
) -> None:
    """Print the figures; with ``record_it``, also keep them in ``doc``."""
    stamp = time.strftime("%Y-%m-%d %H:%M")
    text = "\n".join([f"### {title}", "", f"Measured {stamp} on {machine()}.", "", *lines])
    print(text)
    if record_it:
        record(key, text, doc)
