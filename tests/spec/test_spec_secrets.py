"""Secrets never leave the model in clear text; the digest is stable and sees their names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from skyform.spec import load_task, load_task_text, task_digest
from skyform.spec.inputs import TaskInputs

SECRET = "s3cr3t-value-9f1c"
TASK = f"""\
name: t
envs:
  A: "1"
  B: "2"
secrets:
  API_KEY: {SECRET}
resources:
  accelerators: {{A100: 1, V100: 1}}
run: echo $API_KEY
"""


def load(text: str = TASK, **kw):
    kw.setdefault("environ", {})
    return load_task_text(text, path_label="t.yaml", inputs=TaskInputs(**kw))


def test_secret_is_held_but_redacted_everywhere():
    dag = load()
    task = dag.tasks[0]
    assert task.secret_values() == {"API_KEY": SECRET}
    assert SECRET not in repr(task) and SECRET not in repr(dag) and SECRET not in str(dag)
    assert SECRET not in dag.model_dump_json()
    assert task.model_dump(mode="json")["secrets"] == {"API_KEY": "<redacted>"}
    assert SECRET not in json.dumps(dag.model_dump(mode="json"))


def test_cli_never_prints_the_secret(cli, tmp_path: Path):
    path = tmp_path / "t.yaml"
    path.write_text(TASK)
    human = cli("validate", path)
    as_json = cli("validate", path, "--json")
    flag = cli("validate", path, "--secret", "API_KEY=from-the-flag-77")
    for result in (human, as_json, flag):
        assert result.exit_code == 0
        assert SECRET not in result.output and "from-the-flag-77" not in result.output
    assert "API_KEY: <redacted>" in human.stdout
    assert json.loads(as_json.stdout)["dag"]["tasks"][0]["secrets"] == {"API_KEY": "<redacted>"}


def test_digest_sees_the_secret_name_but_nothing_of_its_value():
    """A digest over the value could be tested offline against guesses by anyone who holds
    the plan: only the secret's name counts."""
    base = task_digest(load())
    assert task_digest(load(secrets=["API_KEY=another"])) == base
    assert task_digest(load(TASK.replace("API_KEY", "API_TOKEN"))) != base
    assert SECRET not in base and len(base) == 64
    int(base, 16)


def test_digest_ignores_dict_order_file_path_and_comments(tmp_path: Path):
    reordered = TASK.replace('  A: "1"\n  B: "2"\n', '  B: "2"\n  A: "1"\n').replace(
        "{A100: 1, V100: 1}", "{V100: 1, A100: 1}"
    )
    assert reordered != TASK
    (tmp_path / "one").mkdir()
    first = tmp_path / "one" / "task.yaml"
    second = tmp_path / "elsewhere.yml"
    first.write_text(TASK)
    second.write_text("# a comment\n\n" + reordered)
    digests = {
        task_digest(load_task(first, TaskInputs(environ={}))),
        task_digest(load_task(second, TaskInputs(environ={}))),
        task_digest(
            load_task(tmp_path / "one" / ".." / "one" / "task.yaml", TaskInputs(environ={}))
        ),
    }
    assert len(digests) == 1


def test_digest_sees_what_matters():
    base = task_digest(load())
    assert task_digest(load(TASK.replace("echo $API_KEY", "echo hi"))) != base
    assert task_digest(load(TASK.replace("A100: 1", "A100: 2"))) != base
    assert task_digest(load(envs=["A=3"])) != base


def test_ordered_groups_keep_their_order_in_the_digest():
    first = load("resources:\n  accelerators: [L4, H100]\nrun: echo\n")
    second = load("resources:\n  accelerators: [H100, L4]\nrun: echo\n")
    assert task_digest(first) != task_digest(second)


def test_digest_is_the_same_in_another_process_with_another_hash_seed(tmp_path: Path):
    path = tmp_path / "t.yaml"
    path.write_text(TASK)
    code = (
        "import sys; from skyform.spec import load_task, task_digest; "
        "from skyform.spec.inputs import TaskInputs; "
        "print(task_digest(load_task(sys.argv[1], TaskInputs(environ={}))))"
    )
    digests = set()
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", code, str(path)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        digests.add(out.stdout.strip())
    digests.add(task_digest(load_task(path, TaskInputs(environ={}))))
    assert len(digests) == 1
