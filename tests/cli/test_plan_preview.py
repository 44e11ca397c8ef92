"""`plan --preview`: the engine's own preview per cloud cluster, shown beside the plan and
never part of it. The renderers against golden text; what `plan` does around them on this
machine without the engine (local clusters; a cloud cluster with no `pulumi` CLI). The real
engine's previews are tests/engine/test_plan_preview.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skyform.cli.render.plan_preview import json_data, markdown_lines, text_lines
from skyform.ops.preview import ClusterPreview, replaced
from skyform.plan.model import Action
from skyform.stacks.preview import EnginePreview, PropertyChange, ResourceStep

REPO = Path(__file__).resolve().parents[2]
HELLO = REPO / "examples" / "hello.yaml"
URN = "urn:pulumi:web::skyform::"
POD, SECRET, SERVICE = (f"kubernetes:core/v1:{k}" for k in ("Pod", "Secret", "Service"))


def step(op, type_, name, *properties) -> ResourceStep:
    return ResourceStep(
        op=op, type=type_, name=name, urn=f"{URN}{type_}::{name}", properties=list(properties)
    )


def preview(cluster, status, **fields) -> ClusterPreview:
    fields = {"infra": "kubernetes/lab", "action": Action.CREATE, **fields}
    return ClusterPreview(cluster=cluster, status=status, **fields)


PREVIEWS = [
    preview(
        "train",
        "previewed",
        steps=[step("create", POD, "node-0"), step("create", SECRET, "ssh-keys")],
    ),
    preview(
        "web",
        "incomplete",
        action=Action.UPDATE,
        reason='Preview failed: Pod "web-0" is invalid',
        unchanged=1,
        steps=[
            step(
                "replace",
                POD,
                "node-0",
                PropertyChange(path="spec.containers[0].ports[1]", kind="add", replaces=True),
                PropertyChange(path="metadata.labels.team", kind="update", old='"a"', new='"b"'),
            ),
            step(
                "update",
                SECRET,
                "ssh-keys",
                PropertyChange(
                    path="data.authorized_keys", kind="update", old="[secret]", new="[secret]"
                ),
                PropertyChange(path="metadata.labels.gone", kind="delete", old='"x"'),
            ),
            step("delete", SERVICE, "ssh-1"),
        ],
    ),
    preview("dev", "no-engine", infra="local", reason="no engine: local"),
    preview(
        "old",
        "not-run",
        infra="aws/us-east-1",
        action=Action.NOOP,
        reason="no changes: apply leaves its stack as it is",
    ),
    preview(
        "gpu",
        "unavailable",
        reason="cannot preview cluster gpu: the Pulumi CLI is not installed (no `pulumi` on PATH)",
    ),
]

TEXT = """\
Engine preview (what the engine would do to each cluster's resources now; shown only, never saved with the plan: apply asks the engine again):
  # cluster "train" (kubernetes/lab): 2 to create, 0 to update, 0 to replace, 0 to delete
    + kubernetes:core/v1:Pod node-0
    + kubernetes:core/v1:Secret ssh-keys
  # cluster "web" (kubernetes/lab): 0 to create, 1 to update, 1 to replace, 1 to delete (1 unchanged)
  -/+ kubernetes:core/v1:Pod node-0
          + spec.containers[0].ports[1]  # forces replacement
          ~ metadata.labels.team = "a" -> "b"
    ~ kubernetes:core/v1:Secret ssh-keys
          ~ data.authorized_keys = [secret]
          - metadata.labels.gone = "x" -> null
    - kubernetes:core/v1:Service ssh-1
    the engine's preview stopped: Preview failed: Pod "web-0" is invalid
  # cluster "dev" (local): (no engine: local)
  # cluster "old" (aws/us-east-1): no changes: apply leaves its stack as it is
  # cluster "gpu" (kubernetes/lab): no engine preview: cannot preview cluster gpu: the Pulumi CLI is not installed (no `pulumi` on PATH)
"""  # noqa: E501

MARKDOWN = """\
#### Engine preview

What the engine would do to each cluster's resources now; shown only, never saved with the plan: apply asks the engine again.

**`train`** (kubernetes/lab): 2 to create, 0 to update, 0 to replace, 0 to delete

```diff
+ kubernetes:core/v1:Pod node-0
+ kubernetes:core/v1:Secret ssh-keys
```

**`web`** (kubernetes/lab): 0 to create, 1 to update, 1 to replace, 1 to delete (1 unchanged)

⚠️ The engine's preview stopped: Preview failed: Pod "web-0" is invalid

```diff
-/+ kubernetes:core/v1:Pod node-0
        + spec.containers[0].ports[1]  # forces replacement
        ~ metadata.labels.team = "a" -> "b"
~ kubernetes:core/v1:Secret ssh-keys
        ~ data.authorized_keys = [secret]
        - metadata.labels.gone = "x" -> null
- kubernetes:core/v1:Service ssh-1
```

**`dev`** (local): (no engine: local)

**`old`** (aws/us-east-1): no changes: apply leaves its stack as it is

**`gpu`** (kubernetes/lab): no engine preview: cannot preview cluster gpu: the Pulumi CLI is not installed (no `pulumi` on PATH)
"""  # noqa: E501


def test_text_lists_resources_as_terraform_does_and_says_why_a_preview_is_missing():
    assert "\n".join(text_lines(PREVIEWS)) + "\n" == TEXT


def test_markdown_puts_each_clusters_steps_in_a_diff_block():
    assert "\n".join(markdown_lines(PREVIEWS)) == MARKDOWN


def test_json_keeps_every_field_and_no_value_but_the_engines():
    data = json_data(PREVIEWS)
    assert [d["status"] for d in data] == [
        "previewed",
        "incomplete",
        "no-engine",
        "not-run",
        "unavailable",
    ]
    web = data[1]
    assert web["action"] == "update" and web["unchanged"] == 1
    assert web["steps"][1] == {
        "op": "update",
        "type": SECRET,
        "name": "ssh-keys",
        "urn": f"{URN}{SECRET}::ssh-keys",
        "properties": [
            {
                "path": "data.authorized_keys",
                "kind": "update",
                "replaces": False,
                "old": "[secret]",
                "new": "[secret]",
            },
            {
                "path": "metadata.labels.gone",
                "kind": "delete",
                "replaces": False,
                "old": '"x"',
                "new": None,
            },
        ],
    }


def test_control_characters_from_the_engine_are_shown_not_acted_on():
    evil = preview(
        "web",
        "incomplete",
        infra="kubernetes/lab\u202e",
        reason="boom\x1b[1A\x1b[2K",
        steps=[
            step(
                "create",
                POD,
                "node-0\x1b[2K\rok",
                PropertyChange(path="metadata.labels.a\x9b", kind="add", new='"x\u2066"'),
            )
        ],
    )
    text = "\n".join(text_lines([evil]))
    assert "+ kubernetes:core/v1:Pod node-0\\x1b[2K\\rok" in text
    assert '+ metadata.labels.a\\x9b = "x\\u2066"' in text
    assert "(kubernetes/lab\\u202e)" in text and "stopped: boom\\x1b[1A\\x1b[2K" in text
    markdown = "\n".join(markdown_lines([evil]))
    for shown in (text, markdown):
        assert not any(c in shown for c in "\x1b\r\x9b\u202e\u2066")


def test_a_replacement_is_the_stacks_destroy_then_its_creation():
    deleted = EnginePreview(
        steps=[step("delete", POD, "node-0"), step("delete", SERVICE, "ssh-old")],
        failure="",
    )
    made = EnginePreview(
        steps=[step("create", POD, "node-0"), step("create", SECRET, "ssh-keys")],
        failure="Preview failed: x",
    )
    merged = replaced(deleted, made)
    assert [(s.op, s.name) for s in merged.steps] == [
        ("replace", "node-0"),
        ("create", "ssh-keys"),
        ("delete", "ssh-old"),
    ]
    assert merged.failure == "Preview failed: x"


# --- `plan --preview` on this machine ---------------------------------------------------


def test_local_clusters_have_no_engine_and_the_plan_file_is_the_same_bytes(cli, tmp_path):
    without, with_preview = tmp_path / "a.json", tmp_path / "b.json"
    assert cli("plan", HELLO, "-o", without).exit_code == 0
    result = cli("plan", HELLO, "-o", with_preview, "--preview", "--detailed-exitcode")
    assert result.exit_code == 2, result.output  # the plan has changes: as without --preview
    assert with_preview.read_bytes() == without.read_bytes()
    assert '  # cluster "hello" (local): (no engine: local)\n' in result.stdout
    assert result.stdout.index("Engine preview") < result.stdout.index("Saved the plan to")


def test_json_adds_the_preview_under_its_own_key_and_the_digest_ignores_it(cli, tmp_path):
    out = tmp_path / "plan.json"
    result = cli("plan", HELLO, "-o", out, "--preview", "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    preview = shown.pop("engine_preview")
    assert shown == json.loads(out.read_text())  # the rest is the plan file, digest and all
    assert preview == [
        {
            "cluster": "hello",
            "infra": "local",
            "action": "create",
            "status": "no-engine",
            "reason": "no engine: local",
            "steps": [],
            "unchanged": 0,
        }
    ]
    refused = cli("apply", _saved(tmp_path / "shown.json", result.stdout))
    assert refused.exit_code == 1 and "engine_preview" in refused.output  # not a plan file


def _saved(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_markdown_adds_the_section_before_the_plan_digest(cli):
    result = cli("plan", HELLO, "--preview", "--markdown")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "#### Engine preview" in out and "**`hello`** (local): (no engine: local)" in out
    assert out.index("#### Engine preview") < out.index("Plan digest:")


def test_without_the_pulumi_cli_the_preview_says_so_and_plan_writes_nothing(
    cli, tmp_path, monkeypatch, skyform_home
):
    task = tmp_path / "web.yaml"
    task.write_text("name: web\nresources: {infra: aws/us-east-1, cpus: 2}\nrun: echo hi\n")
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no `pulumi` anywhere
    result = cli("plan", task, "--preview")
    assert result.exit_code == 0, result.output
    (line,) = [li for li in result.stdout.splitlines() if "no engine preview" in li]
    assert line.startswith('  # cluster "web" (aws/us-east-1/') and line.endswith(
        "): no engine preview: cannot preview cluster web: the Pulumi CLI is not installed "
        "(no `pulumi` on PATH)"
    )
    # no key pair, no passphrase, no stack or work dir: a preview writes nothing
    assert sorted(p.name for p in skyform_home.rglob("*") if p.is_file()) == [], sorted(
        str(p.relative_to(skyform_home)) for p in skyform_home.rglob("*")
    )


@pytest.mark.parametrize("flag", [["--check", "x.json"]])
def test_check_and_preview_are_refused_together(cli, flag):
    result = cli("plan", HELLO, "--preview", *flag)
    assert result.exit_code == 1
    assert "--preview shows the engine's preview of a plan: pick one" in result.output
