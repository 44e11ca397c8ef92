"""Run a Pulumi program under the SDK's mock runtime and record what it registers.

The mock runtime is global to the process, so every run resets it: a new root stack, new
mocks, `preview=False` (with preview=True, `.apply` callbacks on unknown values are skipped
and a test would check nothing). Inputs arrive as the engine would receive them: camelCase
keys, numbers as floats, secrets wrapped (see `unsecret`).
"""

from __future__ import annotations

import importlib
import json
import runpy
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

warnings.filterwarnings("ignore", category=DeprecationWarning)

import pulumi  # noqa: E402
from pulumi.runtime import settings  # noqa: E402

SECRET_SIG = "4dabf18193072939515e22adb298388d"
PROJECT = "skyform"


@dataclass
class Registered:
    type: str
    name: str
    inputs: dict
    provider: str  # the provider resource's name ("" for default providers)


@dataclass
class Run:
    resources: list[Registered] = field(default_factory=list)
    calls: list[tuple[str, dict]] = field(default_factory=list)
    outputs: dict = field(default_factory=dict)

    def of_type(self, type_: str) -> list[Registered]:
        return [r for r in self.resources if r.type == type_]

    def named(self, name: str) -> Registered:
        (found,) = [r for r in self.resources if r.name == name]
        return found

    def comparable(self) -> list[tuple[str, str, str, str]]:
        """Everything registered, in a form two runs can be compared on."""
        return sorted(
            (r.type, r.name, json.dumps(r.inputs, sort_keys=True), r.provider)
            for r in self.resources
        )


def unsecret(value: Any) -> Any:
    """Unwrap the mock runtime's secret envelopes, recursively."""
    if isinstance(value, dict):
        if value.get(SECRET_SIG) == "1b47061264138c4ac30d75fd1eb44270":
            return unsecret(value["value"])
        return {k: unsecret(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unsecret(v) for v in value]
    return value


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and SECRET_SIG in value


class _Recorder(pulumi.runtime.Mocks):
    """Answers like a cloud would, with addresses derived from the resource name."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        provider = args.provider.split("::")[-2] if args.provider else ""
        self.run.resources.append(Registered(args.typ, args.name, dict(args.inputs), provider))
        outputs = dict(args.inputs)
        rank = int(args.name.rsplit("-", 1)[-1]) if args.name[-1:].isdigit() else 0
        if args.typ == "aws:ec2/instance:Instance":
            outputs.update(
                publicIp=f"54.0.0.{rank + 1}",
                privateIp=f"172.31.0.{rank + 1}",
                instanceState="running",
            )
            return [f"i-{rank:017d}", outputs]
        if args.typ == "gcp:compute/instance:Instance":
            outputs["networkInterfaces"] = [
                {
                    "networkIp": f"10.128.0.{rank + 1}",
                    "accessConfigs": [{"natIp": f"34.0.0.{rank + 1}"}],
                }
            ]
            outputs["currentStatus"] = "RUNNING"
            return [f"projects/p/zones/z/instances/{args.inputs.get('name')}", outputs]
        if args.typ == "kubernetes:core/v1:Pod":
            outputs["status"] = {
                "hostIP": f"192.168.1.{rank + 1}",
                "podIP": f"10.244.0.{rank + 1}",
                "phase": "Running",
            }
            outputs["metadata"] = {**args.inputs.get("metadata", {}), "uid": f"uid-{rank}"}
            return [f"default/{args.inputs['metadata']['name']}", outputs]
        if args.typ == "kubernetes:core/v1:Service":
            spec = dict(args.inputs["spec"])
            spec["ports"] = [
                dict(p, nodePort=30000 + 22 * (rank + 1) + i) for i, p in enumerate(spec["ports"])
            ]
            outputs["spec"] = spec
        return [f"{args.name}-id", outputs]

    def call(self, args: pulumi.runtime.MockCallArgs):
        self.run.calls.append((args.token, dict(args.args)))
        if args.token == "aws:ec2/getSubnet:getSubnet":
            return {
                "id": "subnet-0abc",
                "vpcId": "vpc-0def",
                "availabilityZone": "us-east-1d",
                "availabilityZoneId": "use1-az4",
            }
        if args.token == "aws:ec2/getInstance:getInstance":
            # an instance read again after `start`: running, with a new public address
            rank = int(str(args.args["instanceId"])[2:])
            return {
                "id": args.args["instanceId"],
                "publicIp": f"3.0.0.{rank + 1}",
                "privateIp": f"172.31.0.{rank + 1}",
                "instanceState": "running",
            }
        return {}


def program(cloud: str, inputs: dict):
    """The inline program the engine runs for `inputs`."""
    module = importlib.import_module(f"skyform.stacks.pulumi.{cloud}.program")
    return lambda: module.register(inputs)


def run_program(
    program, *, stack: str = "c1", config: dict[str, str] | None = None, project: str = PROJECT
) -> Run:
    """Run `program()` under fresh mocks; return what it registered and exported."""
    run = Run()
    settings.set_root_resource(None)
    pulumi.runtime.set_all_config(dict(config or {}))
    pulumi.runtime.set_mocks(_Recorder(run), project=project, stack=stack, preview=False)
    root = settings.get_root_resource()

    @pulumi.runtime.test
    def go():
        program()
        return pulumi.Output.all(**root.outputs).apply(run.outputs.update)

    go()
    return run


class _NoSkyform:
    """Import hook that makes `import skyform` fail, for running exported programs."""

    def find_spec(self, name, path=None, target=None):
        if name == "skyform" or name.startswith("skyform."):
            raise ImportError(f"exported programs must not import {name}")
        return None


def run_exported(project_dir: Path, stack: str) -> Run:
    """Run an exported project's __main__.py as `pulumi up` would, with its stack config."""
    import yaml

    project = yaml.safe_load((project_dir / "Pulumi.yaml").read_text())["name"]
    doc = yaml.safe_load((project_dir / f"Pulumi.{stack}.yaml").read_text())
    # The CLI hands structured config values to the program as JSON strings.
    config = {
        k: v if isinstance(v, str) else json.dumps(v) for k, v in (doc.get("config") or {}).items()
    }
    blocker = _NoSkyform()

    def program():
        sys.meta_path.insert(0, blocker)
        try:
            runpy.run_path(str(project_dir / "__main__.py"), run_name="__main__")
        finally:
            sys.meta_path.remove(blocker)

    return run_program(program, stack=stack, config=config, project=project)
