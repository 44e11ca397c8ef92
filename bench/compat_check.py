"""Run `skyform validate`'s checks over a directory of SkyPilot task YAMLs; print a tally.

    .venv/bin/python bench/compat_check.py ../shared/compat/skypilot-examples [-v]

Each file is loaded with skyform.spec.load_task and checked with check_supported:
ok, ok+values (valid once the variables it leaves null are given with --env/--secret),
unsupported (a precise reason), error (a precise SpecError), or crash (any other
exception: a bug in skyform). Exit status 1 if anything crashed.
"""

from __future__ import annotations

import re
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

MAX_FILLS = 10


def classify(path: Path) -> tuple[str, str]:
    """(kind, detail). A variable left null in the YAML (to be given with --env/--secret)
    is filled with a placeholder and the file retried, so the rest of it is checked too."""
    from skyform.errors import SpecError, UnsupportedError
    from skyform.spec import check_supported, load_task
    from skyform.spec.inputs import TaskInputs

    overrides: dict[str, list[str]] = {"envs": [], "secrets": []}
    for _ in range(MAX_FILLS):
        needs = f" (after --env/--secret for {_names(overrides)})" if _names(overrides) else ""
        try:
            inputs = TaskInputs(
                envs=tuple(overrides["envs"]), secrets=tuple(overrides["secrets"]), environ={}
            )
            dag = load_task(path, inputs)
            warnings = check_supported(dag)
        except UnsupportedError as err:
            return "unsupported", f"{err.location}: {err.message}{needs}"
        except SpecError as err:
            section = (err.field or "").split(".")[0]
            if "has no value" in err.message and section in overrides:
                overrides[section].append(f"{err.field.split('.', 1)[1]}=placeholder")
                continue
            field = f"{err.field}: " if err.field else ""
            return "error", f"{err.location}: {field}{err.message}{needs}"
        except Exception:
            return "crash", traceback.format_exc(limit=3)
        kind = "ok+values" if needs else "ok"
        return kind, (f"{len(warnings)} warning(s)" if warnings else "") + needs
    return "error", "too many missing variables"


def _names(overrides: dict[str, list[str]]) -> str:
    return ", ".join(item.split("=")[0] for items in overrides.values() for item in items)


def main(argv: list[str]) -> int:
    if not argv:
        sys.stderr.write(__doc__ or "")
        return 1
    verbose = "-v" in argv
    folder = Path(next(a for a in argv if a != "-v"))
    files = sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml"))
    tally: Counter[str] = Counter()
    reasons: dict[str, Counter[str]] = {"unsupported": Counter(), "error": Counter()}
    start = time.perf_counter()
    for path in files:
        kind, detail = classify(path)
        tally[kind] += 1
        if kind in reasons:
            reason = re.sub(r"the task|task '[^']*'", "task", detail.split(": ", 1)[-1])
            reasons[kind][re.sub(r" \(after .*\)$", "", reason)] += 1
        if verbose or kind not in ("ok", "ok+values"):
            sys.stdout.write(f"{kind:<12} {path.name}  {detail}\n")
    elapsed = time.perf_counter() - start
    sys.stdout.write(f"\n{len(files)} files in {elapsed:.2f}s: ")
    sys.stdout.write(
        ", ".join(f"{k} {tally[k]}" for k in ("ok", "ok+values", "unsupported", "error", "crash"))
    )
    sys.stdout.write("\n")
    for kind, counter in reasons.items():
        for reason, count in counter.most_common():
            sys.stdout.write(f"  {kind:<12} x{count:<3} {reason}\n")
    return 1 if tally["crash"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
