"""The README's list of SkyPilot verbs skyform does not have yet is the one the CLI keeps:
it once named `serve` and `storage` long after both had landed."""

from __future__ import annotations

import re
from pathlib import Path

from skyform.cli.commands.not_yet import SKYPILOT_ONLY

README = Path(__file__).resolve().parents[2] / "README.md"


def _listed() -> list[str]:
    text = " ".join(README.read_text().split())
    found = re.search(r"SkyPilot verbs skyform does not have yet \(([^)]*)\)", text)
    assert found, "the README's list of verbs skyform does not have is gone"
    return re.findall(r"`([a-z-]+)`", found.group(1))


def test_every_verb_the_readme_says_is_missing_is_missing(cli):
    for verb in _listed():
        result = cli(verb)
        assert result.exit_code == 1, verb
        assert f"skyform has no `{verb}` yet" in result.output, verb


def test_the_readme_names_every_missing_verb():
    singular = {v for v in SKYPILOT_ONLY if v + "s" not in SKYPILOT_ONLY}
    assert singular <= set(_listed())
