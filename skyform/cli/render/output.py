"""Machine-readable output shared by every `--json` flag."""

from __future__ import annotations

import json
import sys
from typing import Any


def print_json(data: Any) -> None:
    """Stable JSON on stdout: sorted keys, two-space indent, trailing newline."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
