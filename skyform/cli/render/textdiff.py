"""Line diffs of multi-line job text (`run`, `setup`) for the text and markdown plans. Pure.

A reviewer sees the lines that changed with a little context, as Terraform shows a heredoc:
unchanged lines start with two spaces, removed ones with `- `, added ones with `+ `; long
unchanged stretches are folded into one "(N unchanged lines)" line.
"""

from __future__ import annotations

import difflib
import re

from skyform.cli.render.visible import script_lines

TEXT_ATTRS = frozenset({"run", "setup"})
CONTEXT = 2  # unchanged lines kept around each change


def diff_lines(before: str | None, after: str | None) -> list[tuple[str, str]]:
    """(mark, line): mark is " ", "-", "+", or "…" for a fold of unchanged lines."""
    old = script_lines(before)
    new = script_lines(after)
    out: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            same = old[i1:i2]
            head = same[:CONTEXT] if out else []
            tail = same[-CONTEXT:] if i2 < len(old) or j2 < len(new) else []
            if len(same) > len(head) + len(tail):
                hidden = len(same) - len(head) - len(tail)
                out += [(" ", line) for line in head]
                out.append(("…", f"({hidden} unchanged line{'s' if hidden != 1 else ''})"))
                out += [(" ", line) for line in tail]
            else:
                out += [(" ", line) for line in same]
            continue
        out += [("-", line) for line in old[i1:i2]]
        out += [("+", line) for line in new[j1:j2]]
    return out


def heredoc(path: str, before: str | None, after: str | None) -> list[str]:
    """`~ run = <<-EOT` … `EOT`, Terraform's way of showing a changed multi-line string."""
    if before is None or after is None:
        symbol, text = ("+", after) if before is None else ("-", before)
        lines = [f"{symbol} {path} = <<-EOT"]
        lines += [f"    {line}" for line in script_lines(text)]
        return [*lines, "  EOT"]
    lines = [f"~ {path} = <<-EOT"]
    for mark, line in diff_lines(before, after):
        lines.append(f"    # {line}" if mark == "…" else f"  {mark} {line}")
    return [*lines, "  EOT"]


def fenced_diff(before: str | None, after: str | None) -> list[str]:
    """A ```diff block (fence longer than any backtick run in the text)."""
    text = f"{before or ''}\n{after or ''}"
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = []
    for mark, line in diff_lines(before, after):
        body.append(f"@@ {line} @@" if mark == "…" else f"{mark}{line}")
    return [f"{fence}diff", *body, fence]
