"""Loading protocol files written to SPEC §3 by others, and the errors for broken ones.

The files run in-process (``trusted``): sandboxing untrusted code is tested with the
sandbox. What is tested here is what any protocol file gets: class discovery, the call
contract, and one-line errors naming the file, the line and the step.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import APPENDIX, DATACLASS_PROTOCOL, FUTURE_ANNOTATIONS
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import Domain, make_domain
from tpdisc.errors import ProtocolError
from tpdisc.protocols.loader import SourceProtocol, find_protocol_class, load_protocol_class
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import SimResult, run_simulation


def write(tmp_path: Path, source: str, name: str = "proto.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def play(
    domain: Domain, path: Path, seed: int = 0, n_agents: int = 6, steps: int = 10
) -> SimResult:
    spec = SourceProtocol.from_file(path, trusted=True)
    config = SimConfig(n_agents=n_agents, n_steps=steps, agent_type="stochastic")
    return run_simulation(domain, config, spec, seed, record_log=True)


@pytest.fixture
def toy(toy_graph: RecipeGraph) -> Domain:
    return make_domain(toy_graph)


def test_appendix_style_file_runs_unchanged(toy: Domain, tmp_path: Path) -> None:
    path = write(tmp_path, APPENDIX, "recency_sharing.py")
    spec = SourceProtocol.from_file(path, trusted=True)
    assert spec.name == "recency_sharing" and spec.origin == str(path)
    result = play(toy, path)
    log = result.log
    assert log is not None and len(log) > 0
    learners = set(log.learner)
    assert learners == {1, 2, 4, 5}  # 0 and 3 were left out (or given nothing)
    assert all(t != learner for t, learner in zip(log.teacher, log.learner, strict=True))
    assert result.protocol_logs == [
        {
            "metric_name": "sent",
            "metric_description": "memories sent in all",
            "metric_value": len(log),
        }
    ]


def test_file_protocol_is_reproducible_from_seed(toy: Domain, tmp_path: Path) -> None:
    path = write(tmp_path, APPENDIX)
    import random

    import numpy as np

    first = play(toy, path, seed=4)
    np.random.seed(99)  # global generators are reseeded per simulation: this changes nothing
    random.seed(99)
    again = play(toy, path, seed=4)
    other = play(toy, path, seed=5)
    assert first.schedule.steps == again.schedule.steps and first.curve == again.curve
    assert first.schedule.steps != other.schedule.steps


def test_conventional_name_wins_over_other_protocol_classes(tmp_path: Path) -> None:
    source = """
    class Helper:
        def share_memories(self, i_step, agent_states):
            return {}

    class TransmissionProtocol(Helper):
        def __init__(self, n_agents, n_steps):
            pass
    """
    cls = load_protocol_class(textwrap.dedent(source), "p.py")
    assert cls.__name__ == "TransmissionProtocol"


def test_single_class_with_share_memories_is_found_among_others() -> None:
    source = """
    from collections import Counter

    class Tally:
        pass

    class Base:
        def __init__(self, n_agents, n_steps):
            self.n = n_agents

    class Mine(Base):
        def share_memories(self, i_step, agent_states):
            return {}
    """
    assert load_protocol_class(textwrap.dedent(source), "p.py").__name__ == "Mine"


def test_imported_protocol_classes_do_not_count() -> None:
    source = """
    from tpdisc.protocols.baselines import Paired

    class Mine:
        def __init__(self, n_agents, n_steps):
            pass

        def share_memories(self, i_step, agent_states):
            return {}
    """
    assert load_protocol_class(textwrap.dedent(source), "p.py").__name__ == "Mine"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            """
            class A:
                def share_memories(self, i_step, agent_states):
                    return {}

            class B:
                def share_memories(self, i_step, agent_states):
                    return {}
            """,
            r"^p\.py: several classes define share_memories \(A, B\); "
            "name the one to use TransmissionProtocol$",
        ),
        ("x = 1\nclass A:\n    pass\n", r"^p\.py: no class with a share_memories method$"),
        (
            "import numpy as np\n\nclass A:\n    def share_memories(self, i, s)\n        pass\n",
            r"^p\.py: SyntaxError at line 4: ",
        ),
        (
            "import numpy as np\nWEIGHTS = np.ones(3)\nSCALE = undefined_name * 2\n",
            r"^p\.py: NameError: name 'undefined_name' is not defined \(line 3\) while loading$",
        ),
    ],
)
def test_load_errors_name_file_and_line(source: str, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        load_protocol_class(textwrap.dedent(source), "p.py")


@pytest.mark.parametrize("future", ["", FUTURE_ANNOTATIONS])
def test_a_dataclass_protocol_loads_as_a_file_of_its_own(
    toy: Domain, tmp_path: Path, future: str
) -> None:
    """Compiled with its own ``__future__`` flags only (this loader postpones annotations,
    the protocol need not), in a module registered as an imported one is."""
    path = write(tmp_path, future + DATACLASS_PROTOCOL)
    cls = load_protocol_class(path.read_text(), str(path))
    module = sys.modules[cls.__module__]
    assert cls.__module__ == module.MODULE  # __name__, and no __main__ demo run
    assert module.FIELDS == ["last_teacher", "sent"]
    annotation = module.Settings.__annotations__["per_step"]
    assert annotation == ("int" if future else int)
    result = play(toy, path)
    assert result.schedule.total_sent() > 0 and result.protocol_logs[0]["metric_value"] > 0


def test_find_protocol_class_needs_a_class_not_a_name() -> None:
    with pytest.raises(ProtocolError, match="no class with a share_memories method"):
        find_protocol_class({"__name__": "m", "TransmissionProtocol": 3}, "m.py")


def test_crash_in_init_names_file(toy: Domain, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        class P:
            def __init__(self, n_agents, n_steps):
                self.table = [0] * n_agents
                self.table[n_agents] = 1

            def share_memories(self, i_step, agent_states):
                return {}
        """,
    )
    with pytest.raises(ProtocolError) as err:
        play(toy, path)
    assert str(err.value) == (
        f"{path}: IndexError: list assignment index out of range (line 5) in __init__"
    )


def test_crash_in_share_memories_names_file_line_and_step(toy: Domain, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        def ratio(a, b):
            return a / b

        class P:
            def __init__(self, n_agents, n_steps):
                pass

            def share_memories(self, i_step, agent_states):
                return {0: [(1, int(ratio(1, 3 - i_step)))]}
        """,
    )
    with pytest.raises(ProtocolError) as err:
        play(toy, path)
    # the line is that of the innermost frame in the protocol's own code
    assert str(err.value) == (
        f"{path}: ZeroDivisionError: division by zero (line 3) in share_memories at step 3"
    )


def test_malformed_exchange_from_file_names_it(toy: Domain, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        class P:
            def __init__(self, n_agents, n_steps):
                self.n = n_agents

            def share_memories(self, i_step, agent_states):
                return {i: [(i + 1, 0)] for i in range(self.n)}
        """,
        "off_by_one.py",
    )
    with pytest.raises(
        ProtocolError, match=r"off_by_one\.py: invalid exchange at step 0: recipient 5"
    ):
        play(toy, path)


def test_crash_in_get_logs(toy: Domain, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        class P:
            def __init__(self, n_agents, n_steps):
                pass

            def share_memories(self, i_step, agent_states):
                return {}

            def get_logs(self):
                return {}["missing"]
        """,
    )
    with pytest.raises(ProtocolError, match=r"KeyError: 'missing' \(line 10\) in get_logs"):
        play(toy, path, steps=2)


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ProtocolError, match=r"nope\.py: cannot read protocol file"):
        SourceProtocol.from_file(tmp_path / "nope.py")
    binary = tmp_path / "binary.py"
    binary.write_bytes(b"\xff\xfe\x00class")
    with pytest.raises(ProtocolError, match=r"binary\.py: cannot read protocol file"):
        SourceProtocol.from_file(binary)


def test_a_subclass_is_preferred_over_its_base() -> None:
    source = (
        "class Base:\n"
        "    def __init__(self, n_agents, n_steps):\n        self.n = n_agents\n"
        "    def share_memories(self, i_step, agent_states):\n        return {}\n"
        "class Mine(Base):\n"
        "    def share_memories(self, i_step, agent_states):\n        return {0: []}\n"
    )
    assert load_protocol_class(source, "sub.py").__name__ == "Mine"


def test_the_class_search_is_linear_on_deep_class_graphs() -> None:
    """A 1,000-class chain and a ladder (each class inheriting from the two before) are
    searched without pairwise issubclass checks: the last class is the protocol."""
    share = "    def share_memories(self, i, s):\n        return {}\n"
    chain = "class C0:\n" + share
    chain += "".join(f"class C{k}(C{k - 1}):\n    pass\n" for k in range(1, 1_000))
    assert load_protocol_class(chain, "chain").__name__ == "C999"
    ladder = "class C0:\n" + share + "class C1(C0):\n    pass\n"
    ladder += "".join(f"class C{k}(C{k - 1}, C{k - 2}):\n    pass\n" for k in range(2, 300))
    assert load_protocol_class(ladder, "ladder").__name__ == "C299"
