"""PuLP costs a noticeable fraction of a second to import: only the ILP path may load it."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
from skyform.plan.catalog.offer import Offer
from skyform.plan.optimizer import Candidate, Edge, Problem, Task, solve
loaded = ["pulp" in sys.modules]
chain = Problem(
    tuple(Task(f"t{i}", (Candidate(Offer("c", "r", "z", "m", False, 1.0)),)) for i in range(3)),
    (Edge(0, 1), Edge(1, 2)),
)
solve(chain)
loaded.append("pulp" in sys.modules)
print(loaded)
"""


def test_importing_and_solving_a_chain_does_not_import_pulp():
    proc = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[False, False]"
