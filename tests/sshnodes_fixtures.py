"""pytest fixtures over tests/sshnodes.py. Use them from a conftest:

    sys.path.insert(0, "<repo>/tests")
    from sshnodes_fixtures import fresh_ssh_nodes, make_ssh_nodes, ssh_nodes  # noqa: F401

Imported by one conftest (the root one, ideally), the session's nodes are shared by every
test below it; imported by two sibling conftests, each directory gets its own set.
"""

from __future__ import annotations

import pytest
from sshnodes import SSHNodes, missing_requirements


def _skip_unless_possible() -> None:
    reason = missing_requirements()
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="session")
def ssh_nodes():
    """Four sshd nodes shared by the session. Tests must not kill, freeze or re-key them
    (use make_ssh_nodes for that) and must end the jobs they start."""
    _skip_unless_possible()
    with SSHNodes(4) as nodes:
        yield nodes


@pytest.fixture
def fresh_ssh_nodes(ssh_nodes):
    """The session nodes with their homes emptied (keys kept)."""
    for i in range(ssh_nodes.count):
        ssh_nodes.reset_home(i)
    return ssh_nodes


@pytest.fixture
def make_ssh_nodes():
    """Factory for nodes a test may kill, freeze or re-key; torn down after the test."""
    _skip_unless_possible()
    made: list[SSHNodes] = []

    def make(count: int = 1) -> SSHNodes:
        nodes = SSHNodes(count)
        made.append(nodes)
        nodes.start()
        return nodes

    yield make
    for nodes in made:
        nodes.close()
