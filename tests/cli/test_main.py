"""The CLI shell: version, help, exit codes at the one boundary, and start-up weight."""

from __future__ import annotations

from helpers import heavy_modules, modules_loaded_by

from skyform import __version__


def test_version(cli):
    result = cli("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"skyform {__version__}"


def test_help_lists_commands(cli):
    result = cli("--help")
    assert result.exit_code == 0
    assert "check" in result.stdout


def test_unknown_option_is_exit_1_not_2(cli):
    # 2 is reserved for "plan has changes" (--detailed-exitcode); usage errors are 1.
    result = cli("check", "--no-such-flag")
    assert result.exit_code == 1
    assert "No such option" in result.stderr


def test_user_error_has_message_and_hint_but_no_traceback(cli, skyform_home):
    (skyform_home / "config.yaml").write_text("ssh_pools:\n  lab:\n    hosts: []\n")
    result = cli("check")
    assert result.exit_code == 1
    assert "config.yaml: ssh_pools.lab.hosts" in result.stderr
    assert "non-empty list" in result.stderr
    assert "Traceback" not in result.output


def test_debug_env_shows_traceback(cli, skyform_home, monkeypatch):
    (skyform_home / "config.yaml").write_text("- not a mapping\n")
    monkeypatch.setenv("SKYFORM_DEBUG", "1")
    result = cli("check")
    assert result.exit_code == 1
    assert "Traceback" in result.stderr


def test_help_imports_no_heavy_sdk():
    assert not heavy_modules(modules_loaded_by(["--help"]))


def test_unexpected_exception_is_one_line_unless_debugging(cli, monkeypatch):
    import skyform.cli.commands.check as check_cmd

    def boom(*_a, **_k):
        raise RuntimeError("kaboom")

    monkeypatch.setattr("skyform.ops.check.check_all", boom)
    result = cli("check")
    assert result.exit_code == 1
    assert "internal error: RuntimeError: kaboom" in result.stderr
    assert "SKYFORM_DEBUG=1" in result.stderr and "Traceback" not in result.stderr
    assert check_cmd  # the command module is what `check` runs


def test_known_hosts_forget(cli, skyform_home):
    (skyform_home / "known_hosts").write_text(
        "[10.0.0.5]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOzMfAkC6jdvJb2fLrn0tYhH1o+dZPm6\n"
    )
    assert (
        "Forgot 1 key(s) for 10.0.0.5:2222." in cli("known-hosts", "forget", "10.0.0.5:2222").stdout
    )
    assert "No key recorded" in cli("known-hosts", "forget", "10.0.0.5:2222").stdout
    bad = cli("known-hosts", "forget", "host:notaport")
    assert bad.exit_code == 1 and "expected HOST:PORT" in bad.stderr
