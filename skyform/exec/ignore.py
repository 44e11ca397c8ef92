"""Which files a workdir sync leaves out — the rules rsync applies for SkyPilot's filters.

rsync runs with `--filter='dir-merge,- .skyignore'` when the root has a .skyignore, else
`--filter='dir-merge,- .gitignore'` plus `--exclude-from=.git/info/exclude`. The SFTP and
copy fallbacks must pick the same files, so this module mirrors rsync's semantics for those
"exclude-only" merge files (not git's): every line is an exclude pattern (no `!` negation);
a leading `/` anchors to the ignore file's directory; a pattern with an inner `/` or `**`
matches the end of the path; otherwise it matches the last component; a trailing `/`
matches directories only; `*`, `?`, `[...]` never cross `/`, `**` does. An excluded
directory is not descended into.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

SKYIGNORE = ".skyignore"
GITIGNORE = ".gitignore"
GIT_EXCLUDE = ".git/info/exclude"


@dataclass(frozen=True)
class Rule:
    base: str  # directory (relative to the sync root, "" = root) whose ignore file holds it
    regex: re.Pattern[str]
    dir_only: bool
    anchored: bool  # starts with "/": relative to `base`
    whole_path: bool  # has an inner "/" or "**": matches the end of the full path

    def matches(self, rel: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        if self.anchored:
            prefix = f"{self.base}/" if self.base else ""
            return rel.startswith(prefix) and bool(self.regex.fullmatch(rel[len(prefix) :]))
        if self.whole_path:
            return bool(re.search(rf"(?:^|/)(?:{self.regex.pattern})\Z", rel))
        return bool(self.regex.fullmatch(rel.rsplit("/", 1)[-1]))


def _translate(pattern: str) -> str:
    """rsync wildcards to a regex: `*` `?` `[..]` stay within a component, `**` crosses `/`."""
    out, i = [], 0
    if pattern.endswith("/***"):  # "dir/***" = the directory and everything in it
        return _translate(pattern[:-4]) + "(?:/.*)?"
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        elif ch == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def parse_rules(text: str, base: str) -> list[Rule]:
    rules = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        # rsync: blank lines and lines starting with ';' or '#' are comments in merge files.
        if not line.strip() or line.startswith(("#", ";")):
            continue
        dir_only = line.endswith("/") and not line.endswith("/***")
        pattern = line.rstrip("/") if dir_only else line
        anchored = pattern.startswith("/")
        pattern = pattern.lstrip("/") if anchored else pattern
        if not pattern:
            continue
        whole = "/" in pattern.removesuffix("/***") or "**" in pattern
        regex = re.compile(_translate(pattern))
        rules.append(Rule(base, regex, dir_only, anchored, whole and not anchored))
    return rules


class IgnoreRules:
    """The exclude rules for one sync root, read as the walk reaches each directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.merge_name = SKYIGNORE if (root / SKYIGNORE).is_file() else GITIGNORE
        self._per_dir: dict[str, list[Rule]] = {}
        self._global: list[Rule] = []
        exclude = root / GIT_EXCLUDE
        if self.merge_name == GITIGNORE and exclude.is_file():
            self._global = parse_rules(exclude.read_text(errors="replace"), "")

    def rsync_args(self) -> list[str]:
        args = [f"--filter=dir-merge,- {self.merge_name}"]
        if self._global:
            args.append(f"--exclude-from={self.root / GIT_EXCLUDE}")
        return args

    def _rules_of(self, rel_dir: str) -> list[Rule]:
        if rel_dir not in self._per_dir:
            path = self.root / rel_dir / self.merge_name if rel_dir else self.root / self.merge_name
            try:
                self._per_dir[rel_dir] = parse_rules(path.read_text(errors="replace"), rel_dir)
            except OSError:
                self._per_dir[rel_dir] = []
        return self._per_dir[rel_dir]

    def excluded(self, rel: str, is_dir: bool) -> bool:
        """`rel` is relative to the root with `/` separators; its parents are not excluded."""
        parts = rel.split("/")[:-1]
        dirs = [""] + ["/".join(parts[: i + 1]) for i in range(len(parts))]
        rules = [*self._global, *(r for d in dirs for r in self._rules_of(d))]
        return any(rule.matches(rel, is_dir) for rule in rules)


def walk(root: Path) -> tuple[list[str], list[str], list[str]]:
    """(directories, files, symlinks) under root that a sync transfers, relative, sorted."""
    rules = IgnoreRules(root)
    dirs, files, links = [], [], []
    pending = [""]
    while pending:
        rel_dir = pending.pop()
        base = root / rel_dir if rel_dir else root
        for entry in sorted(base.iterdir(), key=lambda p: p.name):
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            is_dir = entry.is_dir() and not entry.is_symlink()
            if rules.excluded(rel, is_dir):
                continue
            if entry.is_symlink():
                links.append(rel)
            elif is_dir:
                dirs.append(rel)
                pending.append(rel)
            elif entry.is_file():
                files.append(rel)
    return sorted(dirs), sorted(files), sorted(links)
