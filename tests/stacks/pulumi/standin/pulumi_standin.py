"""A recording stand-in for the `pulumi` CLI, for testing skyform's Automation API adapter.

Installed on PATH as `pulumi` by the `standin` fixture. Every call appends its argv, working
directory and the Pulumi environment variables to $STANDIN_LOG (JSON lines) and answers the
way the SDK parses the real CLI: `version`, `stack select/init/rm`, `stack output --json`,
`stack history --json`, `stack export`, and `preview`/`up`/`refresh`/`destroy`, which stream
engine events to `--event-log` (a file, or a gRPC endpoint `tcp://...` for CLIs newer than
3.205, as the SDK chooses from `version`). It never runs the program behind `--client`.

Behaviour comes from $STANDIN_SCENARIO (JSON): `version`, `outputs` (what `up` leaves as stack
outputs), `resources` (what `up` creates: [{type, name, outputs}]), `refresh` (resources after
a refresh), `fail` ({command: {stdout, stderr, code, created}}). The scenario is read at
every call, so a test can change it between calls. Stacks persist in $STANDIN_STATE between calls.
"""

import json
import os
import sys
import time
from pathlib import Path

PROJECT_VAR = "STANDIN_PROJECT"


def load(var, default):
    path = os.environ.get(var)
    if path and Path(path).exists():
        return json.loads(Path(path).read_text())
    return default


def save_state(state):
    Path(os.environ["STANDIN_STATE"]).write_text(json.dumps(state))


def option(args, name):
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def urn(stack, type_, name):
    project = os.environ.get(PROJECT_VAR, "skyform")
    return f"urn:pulumi:{stack}::{project}::{type_}::{name}"


def stack_resource(stack, outputs):
    project = os.environ.get(PROJECT_VAR, "skyform")
    return {
        "urn": urn(stack, "pulumi:pulumi:Stack", f"{project}-{stack}"),
        "type": "pulumi:pulumi:Stack",
        "outputs": outputs,
    }


def as_deployment_resource(stack, r):
    return {"urn": urn(stack, r["type"], r["name"]), "type": r["type"], "outputs": r["outputs"]}


class Events:
    """Writes engine events where the SDK listens (file or gRPC)."""

    def __init__(self, target):
        self.target = target
        self.events = []
        self.sequence = 0

    def add(self, **event):
        self.sequence += 1
        event.update(sequence=self.sequence, timestamp=int(time.time()) + self.sequence)
        self.events.append(event)

    def step(self, stack, op, r, *, planning=False):
        meta = {"op": op, "urn": urn(stack, r["type"], r["name"]), "type": r["type"]}
        self.add(resourcePreEvent={"metadata": meta, "planning": planning})
        if not planning:
            self.add(resOutputsEvent={"metadata": meta})

    def close(self):
        self.add(cancelEvent={})
        if not self.target:
            return
        lines = [json.dumps(e) for e in self.events]
        if self.target.startswith("tcp://"):
            import grpc
            from pulumi.runtime.proto import events_pb2, events_pb2_grpc

            with grpc.insecure_channel(self.target[len("tcp://") :]) as channel:
                stub = events_pb2_grpc.EventsStub(channel)
                stub.StreamEvents(iter([events_pb2.EventRequest(event=line) for line in lines]))
        else:
            with open(self.target, "a", encoding="utf-8") as fh:
                fh.write("".join(line + "\n" for line in lines))


def fail(spec, events):
    events.add(diagnosticEvent={"message": spec.get("stderr", ""), "severity": "error"})
    events.close()
    sys.stdout.write(spec.get("stdout", ""))
    sys.stderr.write(spec.get("stderr", ""))
    return int(spec.get("code", 255))


def main(argv):
    args = [a for a in argv if a != "--non-interactive"]
    log = {"argv": args, "cwd": os.getcwd()}
    log["env"] = {k: v for k, v in os.environ.items() if k.startswith("PULUMI_")}
    with open(os.environ["STANDIN_LOG"], "a", encoding="utf-8") as fh:
        fh.write(json.dumps(log) + "\n")
    scenario = load("STANDIN_SCENARIO", {})
    state = load("STANDIN_STATE", {"stacks": {}})
    stacks = state["stacks"]
    stack = option(args, "--stack")
    failure = scenario.get("fail", {}).get(args[0] if args else "")

    if args == ["version"]:
        print("v" + scenario.get("version", "3.272.0"))
        return 0
    if args[:2] == ["stack", "select"]:
        if stack not in stacks:
            sys.stderr.write(f"error: no stack named '{stack}' found\n")
            return 6  # the real CLI's code for a missing stack (v3.276.0)
        return 0
    if args[:2] == ["stack", "init"]:
        stacks[args[2]] = {"outputs": {}, "resources": []}
        save_state(state)
        print(f"Created stack '{args[2]}'")
        return 0
    if args[:2] == ["stack", "rm"]:
        stacks.pop(args[-1], None)
        save_state(state)
        return 0
    if args[:2] == ["stack", "output"]:
        print(json.dumps(stacks[stack]["outputs"]))
        return 0
    if args[:2] == ["stack", "history"]:
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
        entry = {
            "kind": "update",
            "startTime": now,
            "endTime": now,
            "message": "",
            "environment": {},
            "config": {},
            "result": "succeeded",
            "version": 1,
        }
        print(json.dumps([entry]))
        return 0
    if args[:2] == ["stack", "export"]:
        current = stacks[stack]
        resources = [stack_resource(stack, current["outputs"])] + [
            as_deployment_resource(stack, r) for r in current["resources"]
        ]
        print(json.dumps({"version": 3, "deployment": {"resources": resources}}))
        return 0

    events = Events(option(args, "--event-log"))
    events.add(preludeEvent={"config": {}})
    command = args[0]
    current = stacks.get(stack, {"outputs": {}, "resources": []})
    if command == "preview":
        if failure:
            return fail(failure, events)
        wanted = scenario.get("resources", [])
        existing = {r["name"] for r in current["resources"]}
        changes = {}
        for r in wanted:
            op = "same" if r["name"] in existing else "create"
            changes[op] = changes.get(op, 0) + 1
            events.step(stack, op, r, planning=True)
        events.add(summaryEvent={"resourceChanges": changes, "durationSeconds": 1})
        events.close()
        print("Previewing update")
        return 0
    if command == "up":
        if failure:
            current["resources"] = failure.get("created", [])
            save_state(state)
            for r in current["resources"]:
                events.step(stack, "create", r)
            return fail(failure, events)
        for r in scenario.get("resources", []):
            events.step(stack, "create", r)
        current["resources"] = scenario.get("resources", [])
        current["outputs"] = scenario.get("outputs", {})
        events.add(summaryEvent={"resourceChanges": {"create": len(current["resources"])}})
        events.close()
        save_state(state)
        return 0
    if command == "refresh":
        if failure:
            return fail(failure, events)
        if "refresh" in scenario:
            current["resources"] = scenario["refresh"]
        for r in current["resources"]:
            events.step(stack, "refresh", r)
        events.close()
        save_state(state)
        return 0
    if command == "destroy":
        if failure:
            return fail(failure, events)
        for r in current["resources"]:
            events.step(stack, "delete", r)
        current["resources"], current["outputs"] = [], {}
        events.close()
        save_state(state)
        return 0
    sys.stderr.write(f"stand-in pulumi: unexpected command {args}\n")
    return 2


def locked_main(argv):
    """One call at a time (a service launches replicas concurrently): the state file is
    read, changed and written whole."""
    import fcntl

    with open(os.environ["STANDIN_STATE"] + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return main(argv)


if __name__ == "__main__":
    sys.exit(locked_main(sys.argv[1:]))
