"""An `envs:` entry that looks like a secret and has a value is written into the plan and
the PR comment: `plan` and `launch` warn and point to `secrets:` (issue 26)."""

from __future__ import annotations

import pytest

TASK = """\
name: w
resources: {infra: local}
envs:
  HF_TOKEN: hf_abc
  WANDB_API_KEY: k
  OPENAI_APIKEY: k
  DB_PASSWORD: p
  MY_SECRET: s
  MAX_TOKENS: 512
  TOKENIZERS_PARALLELISM: "false"
  EMPTY_KEY: ""
secrets:
  GITHUB_TOKEN: null
run: echo
"""
WARNED = ("HF_TOKEN", "WANDB_API_KEY", "OPENAI_APIKEY", "DB_PASSWORD", "MY_SECRET")
QUIET = ("MAX_TOKENS", "TOKENIZERS_PARALLELISM", "EMPTY_KEY", "GITHUB_TOKEN")


@pytest.mark.parametrize("verb", [["plan"], ["launch", "--dryrun"]], ids=" ".join)
def test_secret_looking_envs_with_a_value_are_warned_about(cli, tmp_path, verb):
    task = tmp_path / "w.yaml"
    task.write_text(TASK)
    result = cli(*verb, task, "--env", "AWS_SECRET_ACCESS_KEY=abc", "--secret", "GITHUB_TOKEN=t")
    assert result.exit_code == 0, result.output
    for line, name in enumerate(WARNED, start=4):
        assert f"w.yaml:{line}: envs.{name} looks like a secret: its value is written into " in (
            result.stderr
        )
    assert "Declare it under `secrets:` instead" in result.stderr
    assert "--env AWS_SECRET_ACCESS_KEY looks like a secret" in result.stderr
    assert "Pass it with --secret AWS_SECRET_ACCESS_KEY=... instead" in result.stderr
    for name in QUIET:
        assert f"{name} looks like" not in result.stderr
    assert result.stderr.count("looks like a secret") == len(WARNED) + 1
