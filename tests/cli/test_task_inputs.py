"""What a task needs from this machine is checked at validate and plan time, and task files
are read once, bounded, the same way by every verb (issue 11, items 8 and 9)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

VERBS = ("validate", "plan")
STDIN = "reading a task file from standard input is not supported"


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    """Relative paths start at the current directory (SkyPilot's rule): the task's folder."""
    monkeypatch.chdir(tmp_path)


def _write(tmp_path: Path, text: str, name: str = "task.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _refused(cli, verb: str, task: Path, skyform_home: Path, *extra: str):
    """Run `verb task -o plan.json` (plan) / `validate task`: exit 1, nothing written."""
    out = task.parent / "plan.json"
    args = (verb, task, *(("-o", out) if verb == "plan" else ()), *extra)
    result = cli(*args)
    assert result.exit_code == 1, result.output
    assert not out.exists()
    assert not (skyform_home / "state.db").exists()
    assert "internal error" not in result.stderr
    return result


# -- item 8: late failures become plan-time errors ----------------------------------------


@pytest.mark.parametrize("verb", VERBS)
def test_missing_workdir_is_an_error_at_its_line(cli, tmp_path, skyform_home, verb):
    task = _write(tmp_path, "name: t\nworkdir: ./nope\nresources: {infra: local}\nrun: ls\n")
    result = _refused(cli, verb, task, skyform_home)
    assert f"Error: {task}:2:10: workdir: workdir './nope' does not exist" in result.stderr
    assert f"relative paths start at the current directory, as in SkyPilot: {tmp_path}" in (
        result.stderr
    )


@pytest.mark.parametrize("verb", VERBS)
def test_workdir_that_is_a_file_is_an_error(cli, tmp_path, skyform_home, verb):
    (tmp_path / "train.py").write_text("print(1)\n")
    task = _write(tmp_path, "workdir: train.py\nresources: {infra: local}\nrun: ls\n")
    result = _refused(cli, verb, task, skyform_home)
    assert "workdir 'train.py' is not a directory" in result.stderr


def test_relative_workdir_starts_at_the_current_directory(cli, tmp_path, monkeypatch):
    (tmp_path / "proj" / "code").mkdir(parents=True)
    task = _write(tmp_path / "proj", "workdir: proj/code\nresources: {infra: local}\nrun: ls\n")
    # run from tmp_path (the autouse fixture), not the task's folder: as `sky launch` does
    assert cli("validate", task).exit_code == 0
    assert cli("plan", task).exit_code == 0
    monkeypatch.chdir(tmp_path / "proj")
    assert cli("validate", task).exit_code == 1  # proj/proj/code does not exist


@pytest.mark.parametrize("verb", VERBS)
def test_missing_file_mount_source_is_an_error(cli, tmp_path, skyform_home, verb):
    task = _write(
        tmp_path,
        "resources: {infra: local}\nfile_mounts:\n  ~/data: ./data\n  ~/ckpt: s3://bucket/ckpt\n"
        "run: ls\n",
    )
    result = _refused(cli, verb, task, skyform_home)
    assert f"{task}:3:11: file_mounts['~/data']: file mount source './data' does not exist" in (
        result.stderr
    )
    (tmp_path / "data").mkdir()  # the bucket URI is not a local path: not checked here
    assert cli("validate", task).exit_code == 0


@pytest.mark.parametrize("dst", ["/data/../etc", "../up", "~/a/../../b", "~bob/x"])
@pytest.mark.parametrize("verb", VERBS)
def test_invalid_mount_destination_is_an_error(cli, tmp_path, skyform_home, verb, dst):
    (tmp_path / "data").mkdir()
    text = f"resources: {{infra: local}}\nfile_mounts:\n  {dst}: ./data\nrun: ls\n"
    task = _write(tmp_path, text)
    result = _refused(cli, verb, task, skyform_home)
    assert f"{task}:3:3: file_mounts[{dst!r}]: file mount destination" in result.stderr


@pytest.mark.parametrize("key", ["envs", "secrets"])
@pytest.mark.parametrize("verb", VERBS)
def test_nul_in_an_env_value_is_an_error(cli, tmp_path, skyform_home, verb, key):
    task = _write(tmp_path, f'resources: {{infra: local}}\n{key}:\n  K: "hidden\\0x"\nrun: ls\n')
    result = _refused(cli, verb, task, skyform_home)
    assert f"{task}:3:6: {key}.K: the value of" in result.stderr
    assert "contains a NUL byte" in result.stderr and "hidden" not in result.stderr


def test_nul_in_an_env_file_value_is_an_error(cli, tmp_path, skyform_home):
    task = _write(tmp_path, "resources: {infra: local}\nrun: ls\n")
    env_file = tmp_path / "x.env"
    env_file.write_bytes(b"A=1\nB=sec\x00ret\n")
    result = _refused(cli, "plan", task, skyform_home, "--env-file", str(env_file))
    assert f"{env_file}:2: the value of B contains a NUL byte" in result.stderr
    assert "sec" not in result.stderr.replace("secret", "")


# -- item 9: input files -------------------------------------------------------------------


@pytest.mark.parametrize("verb", VERBS)
def test_dev_zero_is_refused_at_the_cap(cli, skyform_home, verb):
    started = time.monotonic()
    result = cli(verb, "/dev/zero")
    assert result.exit_code == 1
    assert "/dev/zero: file is larger than 4 MB" in result.stderr
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("verb", VERBS)
def test_fifo_without_writer_fails_instead_of_hanging(cli, tmp_path, monkeypatch, verb):
    monkeypatch.setenv("SKYFORM_INPUT_WAIT", "0.5")
    fifo = tmp_path / "task.yaml"
    os.mkfifo(fifo)
    result = cli(verb, fifo)
    assert result.exit_code == 1
    assert "nothing arrived within 0.5 s (a pipe or FIFO with no writer?)" in result.stderr


def test_fifo_with_a_writer_is_a_task_source(cli, tmp_path):
    fifo = tmp_path / "task.yaml"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "w") as fh:
            fh.write("name: piped\nresources: {infra: local}\nrun: echo hi\n")

    writer = threading.Thread(target=write)
    writer.start()
    result = cli("validate", fifo)
    writer.join()
    assert result.exit_code == 0, result.output
    assert "piped" in result.stdout


LOOP_VERBS = [
    ("validate", "{task}"),
    ("plan", "{task}"),
    ("plan", "{task}", "-o", "{out}"),  # crashed: the -o check resolved the loop
    ("plan", "{task}", "--json"),
    ("plan", "{task}", "--check", "{out}"),
    ("launch", "{task}", "-y"),
    ("apply", "{task}", "-y"),
    ("jobs", "launch", "{task}", "-y"),
    ("serve", "plan", "{task}"),
    ("serve", "up", "{task}", "-y"),
]


@pytest.mark.parametrize("args", LOOP_VERBS, ids=lambda a: " ".join(a[:3]))
def test_symlink_loop_is_the_same_clear_error_in_every_verb(cli, tmp_path, args):
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(tmp_path / "back.yaml")
    (tmp_path / "back.yaml").symlink_to(loop)
    out = tmp_path / "plan.json"
    result = cli(*(a.format(task=loop, out=out) for a in args))
    assert result.exit_code == 1, result.output
    assert f"Error: {loop}: a symbolic link loop (a link that leads back to itself)" in (
        result.stderr
    )
    assert "internal error" not in result.output
    assert not out.exists()


def test_exec_of_a_task_file_that_is_a_symlink_loop_is_refused_not_run(cli, tmp_path):
    """`exec C loop.yaml` once ran `loop.yaml` as a command on the cluster."""
    task = _write(tmp_path, "name: c\nresources: {infra: local}\nrun: echo hi\n")
    assert cli("launch", task, "-y").exit_code == 0
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    result = cli("exec", "c", loop)
    assert result.exit_code == 1, result.output
    assert f"Error: {loop}: a symbolic link loop" in result.stderr
    assert "command not found" not in result.output
    assert cli("down", "-y", "c").exit_code == 0


@pytest.mark.parametrize(
    "args",
    [
        ("validate", "-"),
        ("validate", "/dev/stdin"),
        ("plan", "-"),
        ("plan", "/dev/stdin", "-o", "p.json"),
        ("apply", "-", "-y"),
        ("launch", "-", "-y"),
        ("jobs", "launch", "-", "-y"),
        ("exec", "c", "-"),
    ],
    ids=lambda a: " ".join(a),
)
def test_stdin_is_refused_by_every_verb_with_one_message(cli, skyform_home, args):
    result = cli(*args)
    assert result.exit_code == 1
    assert STDIN in result.stderr
    assert "Save it to a file first" in result.stderr
    assert not (skyform_home / "state.db").exists()


def test_show_of_a_task_file_does_not_suggest_overwriting_it(cli, tmp_path):
    task = _write(tmp_path, "resources: {infra: local}\nrun: ls\n")
    result = cli("show", task)
    assert result.exit_code == 1
    assert "is a task file; show prints a saved plan" in result.stderr
    assert f"skyform plan {task} -o plan.json" in result.stderr
    assert f"-o {task}" not in result.stderr


def test_plan_refuses_to_overwrite_its_own_task_file(cli, tmp_path):
    text = "resources: {infra: local}\nrun: ls\n"
    task = _write(tmp_path, text)
    for out in (task, tmp_path / "." / "task.yaml"):
        result = cli("plan", task, "-o", out)
        assert result.exit_code == 1
        assert "is the task file itself" in result.stderr
    link = tmp_path / "hard.yaml"
    os.link(task, link)
    assert cli("plan", task, "-o", link).exit_code == 1
    assert task.read_text() == text


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "-inf"])
@pytest.mark.parametrize("flag", ["--max-hourly-cost", "--max-total-cost"])
def test_cost_limits_must_be_finite_and_not_negative(cli, tmp_path, flag, value):
    task = _write(tmp_path, "resources: {infra: local}\nrun: ls\n")
    result = cli("plan", task, "-o", tmp_path / "p.json", flag, value)
    assert result.exit_code == 1
    assert not (tmp_path / "p.json").exists()


def test_nan_cost_limit_names_the_flag(cli, tmp_path):
    task = _write(tmp_path, "resources: {infra: local}\nrun: ls\n")
    result = cli("plan", task, "--max-hourly-cost", "nan")
    assert "--max-hourly-cost nan: a cost limit must be a finite number of USD" in result.stderr


def test_user_text_is_printed_as_written_never_as_markup(cli, tmp_path):
    passwd = _write(tmp_path, "root:x:0:0:root:/root:/bin/bash\n", name="passwd")
    result = cli("validate", passwd)
    assert result.exit_code == 1
    assert "root:x:0:0" in result.stderr and "❌" not in result.stderr


def test_hints_quote_paths_for_the_shell(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    task = _write(tmp_path, "resources: {infra: local}\nrun: ls\n", name="my task.yaml")
    result = cli("plan", task, "-o", "my plan.json")
    assert result.exit_code == 0
    assert "run: skyform apply 'my plan.json'" in result.stdout


def test_absolute_mount_destination_on_local_is_refused_at_plan_time(cli, tmp_path, skyform_home):
    (tmp_path / "data").mkdir()
    task = _write(tmp_path, "resources: {infra: local}\nfile_mounts:\n  /data: ./data\nrun: ls\n")
    assert cli("validate", task).exit_code == 0  # fine on ssh or cloud nodes
    result = _refused(cli, "plan", task, skyform_home)
    assert f"{task}:1: file_mounts['/data']: file mount destination '/data'" in result.stderr
    assert "Write ~/data" in result.stderr


@pytest.mark.parametrize("verb", ["apply", "launch"])
def test_fifo_without_writer_does_not_hang_verbs_that_take_a_plan_or_a_task(
    cli, tmp_path, monkeypatch, skyform_home, verb
):
    monkeypatch.setenv("SKYFORM_INPUT_WAIT", "0.5")
    fifo = tmp_path / "task"
    os.mkfifo(fifo)
    result = cli(verb, fifo, "-y")
    assert result.exit_code == 1
    assert "nothing arrived within 0.5 s" in result.stderr
    assert not (skyform_home / "state.db").exists()
