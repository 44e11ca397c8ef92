"""The SFTP/copy fallbacks pick exactly the files rsync's ignore filters pick."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from skyform.exec.ignore import IgnoreRules, walk

FILES = [
    "a.py",
    "a.log",
    "build/out.o",
    "build.txt",
    "docs/build/index.html",
    "docs/readme.md",
    "docs/tmp/x.md",
    "src/main.py",
    "src/cache/blob",
    "src/deep/cache/blob",
    "src/deep/keep.txt",
    "src/gen_1.c",
    "src/gen_22.c",
    "node_modules/pkg/index.js",
    "sub/node_modules/pkg/index.js",
    "logs/2024/app.log",
    "logs/2024/app.txt",
    "weird [brackets].txt",
    "secrets.env",
    "nested/deeper/secret.key",
    "x/y/z/target.bin",
]

GITIGNORE = {
    ".gitignore": "# comment\n*.log\n/build/\nnode_modules\nsrc/cache/\n\n",
    "src/.gitignore": "gen_?.c\ndeep/cache\n/deep/keep.txt\n",
    "docs/.gitignore": "tmp/\nbuild\n",
    "nested/.gitignore": "**/*.key\n",
    ".git/info/exclude": "secrets.env\ny/z/\n",
}


def _make(root: Path, ignore_files: dict[str, str]) -> None:
    for rel in FILES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    for rel, text in ignore_files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _rsync_picks(root: Path, tmp_path: Path) -> set[str]:
    dest = tmp_path / "dest"
    argv = ["rsync", "-a", *IgnoreRules(root).rsync_args(), f"{root}/", f"{dest}/"]
    subprocess.run(argv, check=True, capture_output=True)
    return {p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()}


@pytest.mark.skipif(not shutil.which("rsync"), reason="rsync not installed")
@pytest.mark.parametrize(
    "ignore_files",
    [
        GITIGNORE,
        {**GITIGNORE, ".skyignore": "docs/\n*.c\n/a.py\nlogs/**/*.txt\n"},
        {".skyignore": "x/***\n[a]*.py\n*brackets*\n"},
        {},
    ],
    ids=["gitignore", "skyignore-wins", "skyignore-wildcards", "nothing"],
)
def test_fallback_walk_matches_rsync(tmp_path, ignore_files):
    root = tmp_path / "src"
    _make(root, ignore_files)
    _, files, _ = walk(root)
    assert set(files) == _rsync_picks(root, tmp_path)


def test_gitignore_rules_leave_out_what_they_name(tmp_path):
    root = tmp_path / "src"
    _make(root, GITIGNORE)
    _, files, _ = walk(root)
    for gone in ("a.log", "build/out.o", "src/cache/blob", "sub/node_modules/pkg/index.js"):
        assert gone not in files
    for kept in ("a.py", "build.txt", "src/main.py", "src/gen_22.c", "docs/readme.md"):
        assert kept in files
