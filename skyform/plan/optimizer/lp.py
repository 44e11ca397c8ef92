"""A small linear model for CBC, written straight to MPS (no PuLP objects on the hot path).

Building the placement model out of PuLP expressions and letting PuLP write it cost more than
CBC's own solve on a 20-task DAG. This module keeps a model as plain dicts and writes the very
MPS file PuLP 3.3 writes for it (`writeMPS(rename=1)`: rows C0000000… in insertion order,
columns X0000000… in name order, the same number formats and bound lines), then runs CBC with
the options PuLP passes it and reads its solution file the same way. CBC gets the same bytes
as before, so it answers the same; only PuLP's bundled binary path comes from PuLP (imported
once, on the first solve). An integer solve also gets the assignment already known as a MIP
start, in the file PuLP's `warmStart=True` writes.

Rows are `sum(coefs) + constant  (<=, =, >=)  0`, as in PuLP's LpConstraint.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid

from skyform.errors import PlanError

LE, EQ, GE = "L", "E", "G"


class Var:
    __slots__ = ("dj", "integer", "low", "name", "up", "value")

    def __init__(
        self, name: str, low: float | None = None, up: float | None = None, integer: bool = False
    ) -> None:
        self.name = name
        self.low = low
        self.up = up
        self.integer = integer
        self.value: float | None = None  # set by a solve
        self.dj: float | None = None  # reduced cost, set by a solve


Coefs = dict[Var, float]


class Model:
    def __init__(self) -> None:
        self.rows: dict[str, tuple[Coefs, str, float]] = {}  # name -> (coefs, sense, constant)
        self.objective: Coefs = {}
        self.objective_constant = 0.0

    def add(self, name: str, coefs: Coefs, sense: str, constant: float = 0.0) -> None:
        self.rows[name] = (coefs, sense, constant)

    def objective_value(self) -> float | None:
        total = self.objective_constant
        for x, coefficient in self.objective.items():
            if x.value is None:
                return None
            total += x.value * coefficient
        return total

    def columns(self) -> list[Var]:
        """The variables the model uses, in the order PuLP writes them (by name)."""
        seen: dict[Var, None] = dict.fromkeys(self.objective)
        for coefs, _, _ in self.rows.values():
            seen.update(dict.fromkeys(coefs))
        return sorted(seen, key=_name)

    def mps(self, columns: list[Var]) -> str:
        """The MPS text PuLP writes for this model (minimise, renamed rows and columns)."""
        objective = self.objective
        if not objective:  # PuLP's fixObjective: a fixed dummy column
            dummy = Var("__dummy", 0, 0)
            objective = {dummy: 0}
            columns = sorted([*columns, dummy], key=_name)
        col_name = {x: f"X{n:07d}" for n, x in enumerate(columns)}
        entries: dict[Var, list[str]] = {x: [] for x in columns}
        rows = ["*SENSE:Minimize\n", "NAME          MODEL\n", "ROWS\n", " N  OBJ\n"]
        rhs = []
        number = _number
        for n, (coefs, sense, constant) in enumerate(self.rows.values()):
            row = f"C{n:07d}"
            rows.append(f" {sense}  {row}\n")
            rhs.append(f"    RHS       {row:<8}  {number(-constant if constant != 0 else 0)}\n")
            for x, coefficient in coefs.items():
                entries[x].append(f"{row:<8}  {number(coefficient)}\n")
        out = rows
        out.append("COLUMNS\n")
        bounds = []
        for x in columns:
            name = col_name[x]
            lead = f"    {name:<8}  "
            if x.integer:
                out.append("    MARK      'MARKER'                 'INTORG'\n")
            out += [lead + entry for entry in entries[x]]
            if x in objective:
                out.append(f"{lead}OBJ       {number(objective[x])}\n")
            if x.integer:
                out.append("    MARK      'MARKER'                 'INTEND'\n")
            bounds += _bounds(name, x)
        out.append("RHS\n")
        out += rhs
        out.append("BOUNDS\n")
        out += bounds
        out.append("ENDATA\n")
        return "".join(out)

    def solve(self, *, mip: bool, start: dict[Var, float] | None = None) -> None:
        """Run CBC on the model; set every column's value and reduced cost. `start`:
        values of the integer columns that CBC completes into its first solution (PuLP's
        warmStart file; CBC drops a start it finds infeasible): its value bounds the search
        from the first node, so nodes that cannot beat it are cut; the optimum proved is the
        same."""
        columns = self.columns()
        text = self.mps(columns)
        stem = os.path.join(tempfile.gettempdir(), uuid.uuid4().hex)
        model, solution, known = f"{stem}-pulp.mps", f"{stem}-pulp.sol", f"{stem}-pulp.mst"
        try:
            with open(model, "w") as handle:
                handle.write(text)
            args = [cbc_path(), model]
            if mip and start:
                with open(known, "w") as handle:
                    handle.write(_mip_start(columns, start))
                args += ["-mips", known]
            args += ["-ratio", "0.0", "-allow", "1e-09", "-timeMode", "elapsed"]
            args += ["-solve" if mip else "-initialSolve", "-printingOptions", "all"]
            args += ["-solution", solution]
            done = subprocess.run(
                args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            if done.returncode != 0 or not os.path.exists(solution):
                raise RuntimeError("CBC failed on the placement ILP")
            with open(solution) as handle:
                lines = handle.read().splitlines()
        finally:
            for path in (model, solution, known):
                if os.path.exists(path):
                    os.unlink(path)
        status = lines[0].split()[0] if lines and lines[0].split() else "Undefined"
        if status != "Optimal":
            raise RuntimeError(f"CBC returned {status} for the placement ILP")
        by_name = {f"X{n:07d}": x for n, x in enumerate(columns)}
        for x in columns:
            x.value = 0.0
        for line in lines:
            if len(line) + 1 <= 2:  # PuLP reads lines with their newline
                break
            parts = line.split()
            if parts[0] == "**":
                parts = parts[1:]
            found = by_name.get(parts[1])
            if found is not None:
                found.value = float(parts[2])
                found.dj = float(parts[3])


def _mip_start(columns: list[Var], start: dict[Var, float]) -> str:
    """The start as PuLP's writesol writes it: CBC's solution format, every column in the
    MPS file's order (X0000000…), 0 where the start says nothing."""
    lines = ["Stopped on time - objective value 0\n"]
    for n, x in enumerate(columns):
        value = start.get(x, 0)
        lines.append(f"{n:>7} X{n:07d} {value:>15} {0:>23}\n")
    return "".join(lines)


_NUMBERS: dict[float, str] = {}


def _number(value: float) -> str:
    """`% .12e` of a coefficient (cached: a model repeats few distinct values; zeros keep
    their sign, so they are never cached)."""
    text = _NUMBERS.get(value)
    if text is None:
        text = f"{value: .12e}"
        if value and len(_NUMBERS) < 100_000:
            _NUMBERS[value] = text
    return text


def _name(x: Var) -> str:
    return x.name


def _bounds(name: str, x: Var) -> list[str]:
    """PuLP's writeMPSBoundLines (mip=True)."""
    low, up = x.low, x.up
    if low is not None and low == up:
        return [f" FX BND       {name:<8}  {low: .12e}\n"]
    if low == 0 and up == 1 and x.integer:
        return [f" BV BND       {name:<8}\n"]
    lines = []
    if low is not None:
        if low != 0 or (x.integer and up is None):
            lines.append(f" LO BND       {name:<8}  {low: .12e}\n")
    elif up is not None:
        lines.append(f" MI BND       {name:<8}\n")
    else:
        lines.append(f" FR BND       {name:<8}\n")
    if up is not None:
        lines.append(f" UP BND       {name:<8}  {up: .12e}\n")
    return lines


_CBC: list[str] = []


def cbc_path() -> str:
    """CBC: the binary bundled with PuLP when there is one (PuLP deprecates the PULP_CBC_CMD
    wrapper, not the binary), else `cbc` on PATH. No `-threads` option: CBC's default is
    single-threaded, while `-threads 1` starts a worker thread that was seen to stall for 10 s
    at exit once in a few hundred solves."""
    if _CBC:
        return _CBC[0]
    try:
        from pulp.apis.coin_api import pulp_cbc_path
    except ImportError:  # a PuLP without a bundled binary (or none at all)
        pulp_cbc_path = None
    if pulp_cbc_path and os.access(pulp_cbc_path, os.X_OK):
        found: str | None = pulp_cbc_path
    else:
        found = shutil.which("cbc")
    if found is None:
        raise PlanError(
            "the CBC solver is not available, so this task graph cannot be optimized",
            hint="Install it with `pip install 'pulp[cbc]'` (or put `cbc` on PATH).",
        )
    _CBC.append(found)
    return found
