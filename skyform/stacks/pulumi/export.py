"""`skyform export`: each cloud cluster of a plan as a plain Pulumi project.

DIR/<cluster>/ gets Pulumi.yaml, Pulumi.<cluster>.yaml (the program's inputs as the project's
`cluster` config object, `<project>:cluster`), __main__.py (the same program skyform runs
inline, copied from `<cloud>/program.py`), requirements.txt and a README. Project and stack
names are the ones skyform uses (`<project>/<cluster>`), so the exported program registers the
same resources with the same inputs. Rendered from skyform/templates/pulumi; imports no Pulumi.
local and ssh clusters have no Pulumi program: they are reported as skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

from skyform import __version__
from skyform.config import Config, confined
from skyform.infra import BY_NAME, PULUMI
from skyform.paths import output_dir, output_file, write_output
from skyform.plan.model import ClusterSpec, Plan
from skyform.stacks.pulumi.backend import pulumi_settings
from skyform.stacks.pulumi.cloud import program_path, pulumi_cloud
from skyform.stacks.pulumi.context import input_context
from skyform.stacks.pulumi.engine import placement
from skyform.stacks.pulumi.inputs import program_inputs

FILES = ("Pulumi.yaml", "Pulumi.{stack}.yaml", "__main__.py", "requirements.txt", "README.md")


@dataclass(frozen=True)
class ExportedProject:
    cluster: str
    cloud: str
    infra: str
    directory: Path
    files: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SkippedCluster:
    cluster: str
    infra: str
    reason: str


@dataclass(frozen=True)
class ExportResult:
    directory: Path
    projects: list[ExportedProject]
    skipped: list[SkippedCluster]


@cache
def _environment():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FunctionLoader(
            lambda name: (
                resources.files("skyform").joinpath("templates/pulumi").joinpath(name).read_text()
            )
        ),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def program_source(cloud: str) -> str:
    return program_path(cloud).read_text()


def render_project(
    spec: ClusterSpec, inputs: dict, *, project: str, plan_digest: str
) -> dict[str, str]:
    """File name -> text of one cluster's project (pure)."""
    import yaml

    cloud = spec.offer.cloud
    stack = spec.name
    values = {
        "project": project,
        "cluster": spec.name,
        "stack": stack,
        "cloud": cloud,
        "placement": placement(spec),
        "description": f"skyform cluster {spec.name}: {placement(spec)}",
        "version": __version__,
        "plan_digest": plan_digest,
        "provider_package": (BY_NAME[cloud].sdk_module or "").replace("_", "-"),
        "program_source": program_source(cloud).rstrip("\n"),
        "requirements": list(pulumi_cloud(cloud).requirements),
        "ssh_user": inputs["ssh_user"],
        "credentials": pulumi_cloud(cloud).export_credentials,
        "missing_project": cloud == "gcp" and not inputs.get("project"),
        "first_service": f"{inputs['pod_names'][0]}-ssh" if cloud == "kubernetes" else "",
        "config_yaml": yaml.safe_dump(
            {"config": {f"{project}:cluster": inputs}}, sort_keys=True, width=100
        ).rstrip("\n"),
    }
    env = _environment()
    return {
        name.format(stack=stack): env.get_template(
            "Pulumi.stack.yaml.j2" if "{stack}" in name else f"{name}.j2"
        ).render(**values)
        for name in FILES
    }


def export_plan(
    plan: Plan, plan_digest: str, out_dir: Path, *, config: Config, catalog=None
) -> ExportResult:
    """Render every cloud cluster of `plan` first, then write them (nothing on a bad input)."""
    out_dir = output_dir(out_dir, "the projects", create=False)  # checked, made at the end
    settings = pulumi_settings(config)
    rendered: list[tuple[ClusterSpec, Path, dict[str, str]]] = []
    skipped = []
    for change in plan.changes:
        spec = change.after
        if spec is None:
            infra = change.before.offer.infra if change.before else "?"
            skipped.append(
                SkippedCluster(change.cluster, infra, "the plan deletes it: nothing to export")
            )
            continue
        cloud = spec.offer.cloud
        if cloud not in PULUMI:
            skipped.append(
                SkippedCluster(
                    spec.name,
                    spec.offer.infra,
                    f"{cloud} clusters are not Pulumi stacks: nothing to export",
                )
            )
            continue
        ctx = input_context(
            cloud,
            config=config,
            catalog=catalog,
            plan_digest=plan_digest,
            context_name=spec.offer.context,
            require_project=False,
        )
        inputs = program_inputs(spec, ctx)
        files = render_project(spec, inputs, project=settings.project, plan_digest=plan_digest)
        # checked before anything is written: a name never reaches outside DIR
        rendered.append((spec, confined(out_dir, spec.name), files))
    for spec, directory, files in rendered:  # every target is checked before one is written
        output_dir(directory, f"the project of {spec.name}", create=False)
        for name in files if directory.is_dir() else ():
            output_file(directory / name, f"the project of {spec.name}")
    projects = []
    for spec, directory, files in rendered:
        output_dir(directory, f"the project of {spec.name}")
        for name, text in files.items():
            write_output(directory / name, text.encode(), f"the project of {spec.name}")
        projects.append(
            ExportedProject(spec.name, spec.offer.cloud, spec.offer.infra, directory, list(files))
        )
    return ExportResult(directory=out_dir, projects=projects, skipped=skipped)
