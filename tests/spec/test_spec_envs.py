"""envs / secrets: precedence of --env, --env-file and YAML; substitution where SkyPilot does it."""

from __future__ import annotations

from pathlib import Path

import pytest

from skyform.errors import SpecError
from skyform.spec import load_task_text
from skyform.spec.inputs import TaskInputs

TASK = """\
envs:
  MODEL: from-yaml
  SIZE: 7
  FLAG: true
  TOKEN: null
run: echo $MODEL
"""


@pytest.fixture(autouse=True)
def home_with_workdirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """SUBST's workdir `~/${SIZE}/code` must exist: validate checks local paths."""
    monkeypatch.setenv("HOME", str(tmp_path))
    for size in ("13b", "70b"):
        (tmp_path / size / "code").mkdir(parents=True)
    return tmp_path


def load(text: str = TASK, **kw):
    kw.setdefault("environ", {})
    return load_task_text(text, path_label="task.yaml", inputs=TaskInputs(**kw))


def test_yaml_values_are_strings_like_skypilot():
    task = load(envs=["TOKEN=t"]).tasks[0]
    assert task.envs == {"MODEL": "from-yaml", "SIZE": "7", "FLAG": "True", "TOKEN": "t"}


def test_precedence_env_over_env_file_over_yaml(tmp_path: Path):
    env_file = tmp_path / ".env"
    env_file.write_text("MODEL=from-file\nSIZE=13\nTOKEN=file-token\n")
    task = load(env_files=[env_file], envs=["MODEL=from-flag"]).tasks[0]
    assert task.envs["MODEL"] == "from-flag"
    assert task.envs["SIZE"] == "13"
    assert task.envs["TOKEN"] == "file-token"


def test_later_env_file_wins(tmp_path: Path):
    first, second = tmp_path / "a.env", tmp_path / "b.env"
    first.write_text("TOKEN=a\n")
    second.write_text("TOKEN=b\n")
    assert load(env_files=[first, second]).tasks[0].envs["TOKEN"] == "b"


def test_pinned_inputs_load_the_same_task_with_no_shell_and_no_file(tmp_path: Path):
    """What a managed job keeps for its controller: every value resolved at launch."""
    env_file = tmp_path / ".env"
    env_file.write_text("SIZE=13\nTOKEN=file-token\n")
    given = TaskInputs(
        envs=("TOKEN", "MODEL=from-flag"),
        env_files=(env_file,),
        secrets=("KEY",),
        environ={"TOKEN": "from-shell", "KEY": "s3cret"},
    )
    pinned = given.pinned()
    env_file.unlink()
    assert pinned.envs == ("SIZE=13", "TOKEN=file-token", "TOKEN=from-shell", "MODEL=from-flag")
    assert pinned.secrets == ("KEY=s3cret",)
    task = load_task_text(TASK, path_label="task.yaml", inputs=pinned).tasks[0]
    assert task.envs["TOKEN"] == "from-shell" and task.envs["SIZE"] == "13"


def test_bare_env_takes_value_from_process_environment():
    task = load(envs=["TOKEN"], environ={"TOKEN": "from-shell"}).tasks[0]
    assert task.envs["TOKEN"] == "from-shell"


def test_bare_env_missing_from_environment_is_an_error():
    with pytest.raises(SpecError) as caught:
        load(envs=["TOKEN"], environ={})
    assert "TOKEN is not set in this shell's environment" in caught.value.message
    assert "--env TOKEN=VALUE" in caught.value.hint


def test_override_with_invalid_name_does_not_echo_the_value():
    with pytest.raises(SpecError) as caught:
        load(secrets=["1X=hunter2"])
    assert "'1X': not a valid variable name" in caught.value.message
    assert "hunter2" not in str(caught.value) + (caught.value.hint or "")


def test_null_env_names_the_variable_and_the_flag():
    with pytest.raises(SpecError) as caught:
        load()
    err = caught.value
    assert (err.line, err.column, err.field) == (5, 3, "envs.TOKEN")
    assert "'TOKEN' has no value" in err.message
    assert "--env TOKEN=VALUE" in err.hint


def test_empty_string_is_a_value():
    assert load(envs=["TOKEN="]).tasks[0].envs["TOKEN"] == ""


def test_override_adds_variables_to_every_task_of_a_pipeline():
    text = "name: p\n---\nname: a\nrun: echo a\n---\nname: b\nrun: echo b\n"
    dag = load(text, envs=["EXTRA=1"], secrets=["KEY=s"])
    assert [t.envs for t in dag.tasks] == [{"EXTRA": "1"}, {"EXTRA": "1"}]
    assert [t.secret_values() for t in dag.tasks] == [{"KEY": "s"}, {"KEY": "s"}]


def test_secret_override_and_null_secret():
    text = "secrets:\n  API_KEY: null\nrun: echo\n"
    with pytest.raises(SpecError, match="secret 'API_KEY' has no value") as caught:
        load(text)
    assert "--secret API_KEY=VALUE" in caught.value.hint
    task = load(text, secrets=["API_KEY=k"]).tasks[0]
    assert task.secret_values() == {"API_KEY": "k"}
    # --env does not fill a secret (SkyPilot keeps the two apart).
    with pytest.raises(SpecError):
        load(text, envs=["API_KEY=k"])


def test_dotenv_syntax(tmp_path: Path):
    env_file = tmp_path / ".env"
    env_file.write_text(
        "# comment\n\n"
        "export A=1\n"
        "B = spaced   # trailing comment\n"
        "C='single # not a comment'\n"
        'D="double \\"quoted\\" line\\nnext"\n'
        "E=\n"
    )
    text = "run: echo\n"
    envs = load(text, env_files=[env_file]).tasks[0].envs
    assert envs == {
        "A": "1",
        "B": "spaced",
        "C": "single # not a comment",
        "D": 'double "quoted" line\nnext',
        "E": "",
    }


def test_dotenv_errors_name_file_and_line(tmp_path: Path):
    env_file = tmp_path / "bad.env"
    env_file.write_text("A=1\nthis is not an assignment\n")
    with pytest.raises(SpecError) as caught:
        load("run: echo\n", env_files=[env_file])
    assert caught.value.location == f"{env_file}:2:1"
    missing = tmp_path / "missing.env"
    with pytest.raises(SpecError, match="cannot read env file"):
        load("run: echo\n", env_files=[missing])


SUBST = """\
envs:
  BUCKET: my-bucket
  SIZE: 13b
  EMPTY: ""
secrets:
  SECRET_PATH: hidden
workdir: ~/${SIZE}/code
file_mounts:
  /checkpoint/${SIZE}: s3://$BUCKET/ckpt-${SIZE}
  /data:
    name: ${BUCKET}-2
  /unknown: s3://literal/${NOT_SET}/x-$ALSO_NOT_SET
  /defaults: s3://${NOT_SET:-fallback}/${EMPTY:-was-empty}/${BUCKET:-unused}
service:
  readiness_probe:
    path: /v1/$SIZE
  ports: 8080
volumes:
  /mnt/data: vol-$SIZE
setup: echo $BUCKET ${SIZE}
run: echo $BUCKET ${SIZE}
"""


def test_substitution_in_file_mounts_workdir_service_volumes():
    task = load(SUBST).tasks[0]
    assert task.workdir == "~/13b/code"
    mounts = task.file_mounts
    assert mounts["/checkpoint/13b"].source == "s3://my-bucket/ckpt-13b"
    assert mounts["/data"].name == "my-bucket-2"
    assert mounts["/checkpoint/13b"].bucket.prefix == "ckpt-13b"
    assert task.service is not None and task.service.readiness_probe.path == "/v1/13b"
    assert task.volumes == {"/mnt/data": "vol-13b"}


def test_unknown_names_stay_literal_and_defaults_apply():
    mounts = load(SUBST).tasks[0].file_mounts
    assert mounts["/unknown"].source == "s3://literal/${NOT_SET}/x-$ALSO_NOT_SET"
    assert mounts["/defaults"].source == "s3://fallback/was-empty/my-bucket"


def test_setup_and_run_are_not_substituted():
    task = load(SUBST).tasks[0]
    assert task.setup == "echo $BUCKET ${SIZE}"
    assert task.run == "echo $BUCKET ${SIZE}"


def test_override_flows_into_substitution():
    task = load(SUBST, envs=["SIZE=70b"]).tasks[0]
    assert "/checkpoint/70b" in task.file_mounts


def test_secret_substituted_into_file_mounts_is_flagged():
    text = "secrets:\n  B: hidden-bucket\nfile_mounts:\n  /d: s3://$B\nrun: echo\n"
    dag = load(text)
    assert dag.tasks[0].file_mounts["/d"].source == "s3://hidden-bucket"
    assert any("secret B is substituted into file_mounts" in w for w in dag.warnings)


def test_env_file_is_read_as_python_dotenv_reads_it(tmp_path: Path):
    """SkyPilot's --env-file is python-dotenv's dotenv_values; so is skyform's."""
    env_file = tmp_path / ".env"
    env_file.write_bytes(
        b'ESCAPED="a\\\\nb"\n'  # an escaped backslash then n: backslash-n, not a line break
        b'NEWLINE="a\\nb"\n'
        b'WINDOWS="c:\\\\dir\\\\"\n'  # a value ending in a backslash
        b"TRAILING=ends\\\n"
        b'CR="x\\ry"\r\n'
        b"CRLF=1\r\n"
        b"LITERAL='$HOME\\n'\n"
        b'MULTI="two\nlines"\n'
        b"export EXPORTED=yes # a comment\n"
    )
    envs = load("run: echo\n", env_files=[env_file]).tasks[0].envs
    assert envs["ESCAPED"] == "a\\nb"
    assert envs["NEWLINE"] == "a\nb"
    assert envs["WINDOWS"] == "c:\\dir\\"
    assert envs["TRAILING"] == "ends\\"
    assert envs["CR"] == "x\ry"
    assert envs["CRLF"] == "1"
    assert envs["LITERAL"] == "$HOME\\n"
    assert envs["MULTI"] == "two\nlines"
    assert envs["EXPORTED"] == "yes"


def test_env_file_key_without_value_is_an_error(tmp_path: Path):
    env_file = tmp_path / ".env"
    env_file.write_text("A=1\nBARE\n")
    with pytest.raises(SpecError, match="BARE has no value") as caught:
        load("run: echo\n", env_files=[env_file])
    assert caught.value.location == f"{env_file}:2:1"
