"""`resources:` -> ResourceChoices: ordered groups of concrete alternatives.

- `any_of: [...]` is one group of N; `ordered: [...]` is N groups of one. Each entry is a
  partial resources mapping laid over the outer one (labels are merged, not replaced).
- An accelerator set (`{A100: 1, V100: 1}`) expands within its group; an ordered
  accelerator list (`[L4, H100]`) becomes ordered groups.
- The combinations SkyPilot rejects are errors here too: any_of with ordered, several
  accelerators with ordered, an accelerator list with any_of, infra mixed with cloud.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from skyform.spec.accelerators import Accel, AccelProblem, parse_accelerators
from skyform.spec.errors import BadValue, Where
from skyform.spec.infra import legacy_infra, parse_infra
from skyform.spec.models import Autostop, JobRecovery, ResourceChoices, ResourceRequest
from skyform.spec.raw import (
    IGNORED_RESOURCE_KEYS,
    RawAutostop,
    RawJobRecovery,
    RawResources,
    RawTopResources,
)
from skyform.spec.values import (
    DISK_TIERS,
    NETWORK_TIERS,
    autostop_from,
    exit_codes,
    parse_cpus,
    parse_disk_size,
    parse_image_id,
    parse_max_hourly_cost,
    parse_memory,
    parse_ports,
    parse_tier,
    recovery_strategy,
    wait_for,
)
from skyform.spec.yamlpos import Path

# key -> (value, where it was written); entries of any_of/ordered keep their own paths.
Entry = dict[str, tuple[Any, Path]]
ROOT: Path = ("resources",)


def parse_resources(raw: Any, where: Where, note: Callable[[str], None]) -> ResourceChoices:
    if raw is None:
        return ResourceChoices(groups=((ResourceRequest(),),))
    where.validate(RawTopResources, raw, ROOT)
    base = _entry(raw, ROOT, where)
    any_of = base.pop("any_of", None)
    ordered = base.pop("ordered", None)
    if any_of is not None and ordered is not None:
        where.fail(
            ordered[1],
            "cannot use both 'any_of' and 'ordered' in resources",
            "Use any_of for 'pick the best of these' or ordered for 'try these in order'.",
            at_key=True,
        )
    accel = _accelerators(base, where)
    many = accel is not None and len(accel.items) > 1
    if ordered is not None and many:
        where.fail(
            base["accelerators"][1],
            "cannot give several accelerators together with 'ordered'",
            "Put one accelerator in each 'ordered' entry instead.",
        )
    if any_of is not None and accel is not None and many and accel.kind == "ordered":
        where.fail(
            base["accelerators"][1],
            "an ordered accelerator list cannot be combined with 'any_of'",
            "Use a set ({A100: 1, V100: 1}) or move the accelerators into the any_of entries.",
        )
    _note_ignored(base, where, note)

    if any_of:
        group: list[ResourceRequest] = []
        for entry in _entries(any_of, where, note):
            group += _expand(_overlay(base, entry), where)
        groups: tuple[tuple[ResourceRequest, ...], ...] = (_dedupe(group),)
    elif ordered:
        groups = tuple(
            _dedupe(_expand(_overlay(base, entry), where))
            for entry in _entries(ordered, where, note)
        )
    elif accel is not None and accel.kind == "ordered":
        groups = tuple((_request(base, item, where),) for item in accel.items)
    else:
        groups = (_dedupe(_expand(base, where)),)
    return ResourceChoices(groups=groups)


def _entry(raw: dict[str, Any], path: Path, where: Where) -> Entry:
    entry = {key: (value, (*path, key)) for key, value in raw.items() if value is not None}
    if "gpus" in entry:
        if "accelerators" in entry:
            where.fail(
                entry["gpus"][1],
                "'gpus' is an alias of 'accelerators'; give only one of them",
                at_key=True,
            )
        entry["accelerators"] = entry.pop("gpus")
    return entry


def _entries(items: tuple[Any, Path], where: Where, note: Callable[[str], None]) -> list[Entry]:
    values, path = items
    out = []
    for i, raw in enumerate(values):
        item_path = (*path, i)
        where.validate(RawResources, raw, item_path)
        entry = _entry(raw, item_path, where)
        accel = entry.get("accelerators")
        if accel is not None and (
            isinstance(accel[0], list) or (isinstance(accel[0], dict) and len(accel[0]) > 1)
        ):
            where.fail(
                accel[1],
                f"an entry of '{path[-1]}' takes one accelerator",
                "Write e.g. 'accelerators: A100:1'; list alternatives as separate entries.",
            )
        _note_ignored(entry, where, note)
        out.append(entry)
    return out


def _overlay(base: Entry, entry: Entry) -> Entry:
    merged = {**base, **entry}
    if "labels" in base and "labels" in entry:
        merged["labels"] = ({**base["labels"][0], **entry["labels"][0]}, entry["labels"][1])
    return merged


def _accelerators(entry: Entry, where: Where):
    if "accelerators" not in entry:
        return None
    value, path = entry["accelerators"]
    try:
        return parse_accelerators(value, path)
    except AccelProblem as exc:
        raise where.problem(exc.path, exc) from None


def _expand(entry: Entry, where: Where) -> list[ResourceRequest]:
    accel = _accelerators(entry, where)
    if accel is None:
        return [_request(entry, None, where)]
    return [_request(entry, item, where) for item in accel.items]


def _dedupe(requests: list[ResourceRequest]) -> tuple[ResourceRequest, ...]:
    return tuple(dict.fromkeys(requests))


def _note_ignored(entry: Entry, where: Where, note: Callable[[str], None]) -> None:
    for key in IGNORED_RESOURCE_KEYS:
        if key in entry:
            line = where.line(entry[key][1])
            note(f"{where.label}:{line}: resources.{key} is accepted but not used by skyform")


def _request(entry: Entry, accel: Accel | None, where: Where) -> ResourceRequest:
    def value(key: str) -> Any:
        return entry[key][0] if key in entry else None

    def check(key: str, parse: Callable[[Any], Any]) -> Any:
        if key not in entry:
            return None
        raw, path = entry[key]
        try:
            return parse(raw)
        except BadValue as exc:
            raise where.problem(path, exc) from None

    fields: dict[str, Any] = {}
    infra = _infra(entry, where)
    fields.update(cloud=infra.cloud, region=infra.region, zone=infra.zone, context=infra.context)
    if accel is not None:
        fields.update(accelerator=accel.name, accelerator_count=accel.count)
        if fields["cloud"] is None and accel.name.startswith("tpu"):
            fields["cloud"] = "gcp"  # as in SkyPilot: TPUs live on GCP
    fields["cpus"] = check("cpus", parse_cpus)
    fields["memory"] = check("memory", parse_memory)
    fields["instance_type"] = value("instance_type")
    fields["use_spot"] = bool(value("use_spot"))
    if "disk_size" in entry:
        fields["disk_size"] = check("disk_size", parse_disk_size)
    fields["disk_tier"] = check("disk_tier", lambda v: parse_tier(v, "disk_tier", DISK_TIERS))
    fields["network_tier"] = check(
        "network_tier", lambda v: parse_tier(v, "network_tier", NETWORK_TIERS)
    )
    fields["ports"] = check("ports", parse_ports) or ()
    fields["image_id"] = check("image_id", parse_image_id)
    fields["labels"] = value("labels") or {}
    fields["max_hourly_cost"] = check("max_hourly_cost", parse_max_hourly_cost)
    fields["job_recovery"] = _job_recovery(entry, where)
    fields["autostop"] = _autostop(entry, where)
    return ResourceRequest(**fields)


def _infra(entry: Entry, where: Where):
    legacy = [k for k in ("cloud", "region", "zone") if k in entry]
    try:
        if "infra" in entry:
            if legacy:
                where.fail(
                    entry[legacy[0]][1],
                    f"'{legacy[0]}' cannot be combined with 'infra'",
                    "Write everything in infra: 'cloud/region/zone' (e.g. 'aws/us-east-1').",
                    at_key=True,
                )
            return parse_infra(entry["infra"][0])
        return legacy_infra(
            *(entry[k][0] if k in entry else None for k in ("cloud", "region", "zone"))
        )
    except BadValue as exc:
        path = entry["infra"][1] if "infra" in entry else entry[legacy[0]][1]
        raise where.problem(path, exc) from None


def _job_recovery(entry: Entry, where: Where) -> JobRecovery | None:
    if "job_recovery" in entry and "spot_recovery" in entry:
        where.fail(
            entry["spot_recovery"][1],
            "give either 'job_recovery' or its old name 'spot_recovery', not both",
            at_key=True,
        )
    key = "job_recovery" if "job_recovery" in entry else "spot_recovery"
    if key not in entry:
        return None
    raw, path = entry[key]
    if isinstance(raw, str):
        return JobRecovery(strategy=_located(recovery_strategy, raw, path, where))
    if not isinstance(raw, dict):
        where.fail(
            path,
            f"{key} must be a strategy name or a mapping",
            "Write e.g. 'job_recovery: FAILOVER' or "
            "'job_recovery: {strategy: EAGER_NEXT_REGION, max_restarts_on_errors: 3}'.",
        )
    spec = where.validate(RawJobRecovery, raw, path)
    codes = spec.recover_on_exit_codes
    return JobRecovery(
        strategy=_located(recovery_strategy, spec.strategy, (*path, "strategy"), where),
        max_restarts_on_errors=spec.max_restarts_on_errors or 0,
        recover_on_exit_codes=_located(exit_codes, codes, (*path, "recover_on_exit_codes"), where)
        or (),
    )


def _autostop(entry: Entry, where: Where) -> Autostop | None:
    if "autostop" not in entry:
        return None
    raw, path = entry["autostop"]
    if not isinstance(raw, dict):
        return _located(autostop_from, raw, path, where)
    spec = where.validate(RawAutostop, raw, path)
    return Autostop(
        enabled=True,
        idle_minutes=spec.idle_minutes if spec.idle_minutes is not None else 5,
        down=bool(spec.down),
        wait_for=_located(wait_for, spec.wait_for, (*path, "wait_for"), where),
        hook=spec.hook,
        hook_timeout=spec.hook_timeout,
    )


def _located(parse: Callable[[Any], Any], value: Any, path: Path, where: Where) -> Any:
    """parse(value), or None for None; a BadValue becomes an error located at `path`."""
    if value is None:
        return None
    try:
        return parse(value)
    except BadValue as exc:
        raise where.problem(path, exc) from None
