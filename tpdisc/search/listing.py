"""What ``tpdisc archive`` shows: a ranked table, one protocol in full, exports, JSON; each
with the protocols' scores on fresh seeds, where they were re-scored.

A protocol goes by one name wherever a user meets it (tables, ``--show``, reports, file
names): its name in the archive (``i0009``, ``i0009r1`` for a repair, ``paired`` for a
seeded baseline), never the archive's row id, which is internal.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from tpdisc.errors import ConfigError, visible
from tpdisc.safefiles import write_file
from tpdisc.search.archive import Archive, Candidate, CandidateSummary, Rescore
from tpdisc.search.prompts import format_fitness


def open_archive(run_dir: Path) -> Archive:
    path = Path(run_dir) / Archive.FILE_NAME
    if not path.is_file():
        raise ConfigError(f"{run_dir}: no {Archive.FILE_NAME} here (not a search run directory)")
    return Archive(path, readonly=True)


def totals_line(archive: Archive) -> str:
    t = archive.totals()
    return (
        f"{t.iterations} iterations: {t.valid} valid, {t.invalid} failed, {t.duplicates} "
        "duplicates"
        + (f", {t.raced} stopped early by racing" if t.raced else "")
        + f" ({t.repairs} repair attempts); {t.seeds} baselines seeded"
        + (
            f"; {t.llm_calls} LLM calls, {t.prompt_tokens:,} prompt + "
            f"{t.completion_tokens:,} completion tokens, ${t.cost:.4f}"
            if t.llm_calls
            else ""  # an offline search: no model, nothing spent
        )
    )


def fresh_text(rescore: Rescore | None) -> str:
    """A protocol's score on fresh seeds, as the table prints it ('' when not re-scored)."""
    if rescore is None:
        return ""
    return f"{rescore.mean:.2f} ± {rescore.sem:.2f}"


def fresh_caption(rescores: Mapping[int, Rescore]) -> str:
    """What the fresh-seed column means, with the seeds it used."""
    blocks = sorted({(r.seeds[0], r.seeds[-1]) for r in rescores.values() if r.seeds})
    where = ", ".join(f"{a}..{b}" for a, b in blocks)
    return (
        f"fresh seeds: mean ± sem on seeds {where}, which the search never used; the "
        "search's best fitness is biased upwards by its selection, the fresh score is not"
    )


def labels(rows: Iterable[CandidateSummary]) -> dict[int, str]:
    """The name users see of each protocol of ``rows`` (all of an archive's), by row id.
    Names are unique in archives of current searches; in an older one where repairs kept
    their protocol's name, the sharers get their row id after a dash (``i0004-12``)."""
    rows = list(rows)
    counts = Counter(c.name for c in rows)
    return {c.id: c.name if counts[c.name] == 1 else f"{c.name}-{c.id}" for c in rows}


def table(archive: Archive, limit: int | None = None) -> Table:
    shown = archive.summaries(valid_only=True, order="fitness", limit=limit or None)
    names = labels(archive.summaries())
    rescores = archive.rescores()
    caption = totals_line(archive)
    if rescores:
        caption += "\n" + fresh_caption(rescores)
    out = Table(title=f"{archive.path.parent}: protocols by fitness", caption=caption)
    with_tokens = any(c.prompt_tokens for c in shown)
    columns = ["rank", "protocol", "mode", "fitness"]
    columns += ["fresh seeds"] if rescores else []
    columns += ["parent", "proposer"]
    for column in columns + (["tokens"] if with_tokens else []):
        numeric = column in ("rank", "tokens")
        out.add_column(column, justify="right" if numeric else "left", no_wrap=True)
    for rank, c in enumerate(shown, 1):
        out.add_row(
            str(rank),
            names[c.id],
            c.mode,
            format_fitness(c),
            *([fresh_text(rescores.get(c.id))] if rescores else []),
            names.get(c.parent_id, "") if c.parent_id is not None else "",
            c.proposer,
            *([_tokens(c)] if with_tokens else []),
        )
    return out


def _tokens(c: CandidateSummary) -> str:
    total = c.prompt_tokens + c.completion_tokens
    return f"{total:,}" if total else ""


def protocol_id(archive: Archive, text: str) -> int:
    """The row id of the protocol named ``text``, as the table prints it (``i0002``,
    ``paired``); a name several rows of an older archive share picks the last, valid one
    first."""
    names = labels(archive.summaries())
    by_name = {name: pid for pid, name in names.items()}
    for key in (text, text.strip()):  # spaces a shell or a copy kept around the name
        if key in by_name:
            return by_name[key]
    ids = archive.ids_named(text.strip())
    if not ids:
        raise ConfigError(
            f"{archive.path.parent}: no protocol named {text!r}{_number_hint(text, names)}; "
            f"'tpdisc archive {archive.path.parent}' lists them by name (i0001, paired, ...)"
        )
    rows = archive.get_many(ids)
    valid = [c.id for c in rows if c.status == "valid" and c.id is not None]
    return (valid or ids)[-1]


def _number_hint(text: str, names: Mapping[int, str]) -> str:
    """For a number given as a name: the protocols it could have meant, by their names (a
    number is ambiguous, and protocols go by name)."""
    if not text.strip().isdigit():
        return ""
    number = int(text)
    meant = [f"row id {number} of --json is {names[number]}"] if number in names else []
    proposal = f"i{number:04d}"
    if proposal in names.values():
        meant.append(f"iteration {number}'s proposal is {proposal}")
    return f" (protocols go by name{': ' if meant else ''}{'; '.join(meant)})"


def show(archive: Archive, protocol_id: int) -> RenderableType:
    c = archive.get(protocol_id)
    names = labels(archive.summaries())

    def named(ids: Iterable[int]) -> str:
        return ", ".join(names.get(i, "?") for i in ids) or "none"

    # Every text here comes from the archive: plain text, the name styled as a style.
    head = Text.assemble(
        (visible(names.get(protocol_id, c.name)), "bold"),
        f" — {c.status}, {c.mode}, iteration {c.iteration}\n",
    )
    facts = [
        f"fitness {format_fitness(c)}"
        + (f" over seeds {c.seeds[0]}..{c.seeds[-1]}" if c.seeds else ""),
        *_fresh_fact(archive.rescores().get(protocol_id)),
        f"parent {named([c.parent_id] if c.parent_id is not None else [])}; lineage "
        f"{' ← '.join(names.get(i, '?') for i in c.lineage) or 'none'}; contrasts "
        f"{named(c.contrast_ids)}",
        f"proposer {c.proposer}"
        + (f", model {c.model}" if c.model else "")
        + (f", {c.prompt_tokens} + {c.completion_tokens} tokens, ${c.cost:.4f}" if c.model else ""),
    ]
    if c.repair_of is not None:
        facts.append(f"repair of {named([c.repair_of])}")
    if c.duplicate_of is not None:
        twin = c.fitness_values is not None  # scored until found to behave as another
        what = "same results on its first seeds as" if twin else "same code as"
        facts.append(f"{what} {named([c.duplicate_of])}")
    # Made visible here: a Text drops a bell or a carriage return before a console sees it.
    parts: list[RenderableType] = [head + Text(visible("\n".join(facts)))]
    if c.error:
        parts.append(Text(visible(f"\nerror: {c.error}"), style="red"))
    parts.append(Text(visible(f"\nDescription: {c.description or '(none)'}")))
    parts.append(Text(visible(f"Logging: {c.logging or '(none)'}")))
    if c.reasoning:
        parts.append(Text(visible(f"Reasoning: {c.reasoning}")))
    if c.code:
        # Imported here: pygments (with importlib.metadata for its plugins) would load at the
        # start of every command that resolves a protocol's name, for one listing's code.
        from rich.syntax import Syntax

        parts.append(Syntax(visible(c.code), "python", line_numbers=True, word_wrap=True))
    return Group(*parts)


def _fresh_fact(rescore: Rescore | None) -> list[str]:
    if rescore is None:
        return []
    return [
        f"on fresh seeds {rescore.seeds[0]}..{rescore.seeds[-1]}: {fresh_text(rescore)} "
        "(not used by the search)"
    ]


def export(archive: Archive, protocol_id: int, path: Path) -> Path:
    """Write a protocol's code as a ``.py`` file that ``tpdisc evaluate`` can run."""
    c = archive.get(protocol_id)
    # One comment line whatever the stored name holds: a newline in it would add code.
    name = " ".join(labels(archive.summaries()).get(protocol_id, c.name).split())
    if not c.code:
        raise ConfigError(f"protocol {name} has no code to export")
    header = [
        f"# {name} from {archive.path.parent} ({c.mode}, {c.status})",
        f"# fitness {format_fitness(c)}"
        + (f" over seeds {c.seeds[0]}..{c.seeds[-1]}" if c.seeds else ""),
    ]
    header += [f"# {line}" for line in (c.description or "").splitlines()]
    return write_file(Path(path), "\n".join(header) + "\n\n" + c.code.rstrip() + "\n")


def as_json(archive: Archive, protocol_id: int | None = None) -> dict[str, Any]:
    """The whole archive (codes left out) or one protocol in full."""
    rescores = archive.rescores()

    def rescored(c: Candidate) -> dict[str, Any] | None:
        found = rescores.get(c.id or 0)
        return found.to_json() if found is not None else None

    if protocol_id is not None:
        c = archive.get(protocol_id)
        return {**c.to_json(), "rescored": rescored(c)}
    return {
        "run_dir": str(archive.path.parent),
        "totals": vars(archive.totals()),
        "iterations": archive.iterations(),
        "protocols": [
            {**c.to_json(full=False), "rescored": rescored(c)} for c in archive.candidates()
        ],
    }
