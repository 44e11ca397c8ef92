"""Bucket file mounts: SkyPilot's Storage forms and rules, as typed BucketSpecs.

Forms (sky/task.py, sky/data/storage.py): `dst: s3://bucket[/prefix]` (COPY of an existing
bucket) and `dst: {name, source, store, persistent, mode, type, config}`. The name/source
matrix, the bucket naming rules and the mode/config pairing are SkyPilot's; one deliberate
difference: MOUNT and MOUNT_CACHED take a sub-path of a bucket (SkyPilot #9660 refuses it).
Stores: s3, gcs and S3-compatible ones (r2, or any endpoint configured in config.yaml
`storage:`). Local sources are checked here (exist, are directories) like SkyPilot does.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any

from skyform.spec.errors import Where, describe
from skyform.spec.localpaths import absolute, base_of, missing_hint
from skyform.spec.models import BucketSpec, FileMount
from skyform.spec.raw import RawStorage

STORES = ("s3", "gcs", "r2")  # what skyform mounts and syncs (rclone speaks all three)
OTHER_STORES = ("azure", "ibm", "oci", "nebius", "coreweave", "vastdata", "hf")
SCHEMES = {"s3": "s3", "gs": "gcs", "r2": "r2"}
OTHER_SCHEMES = {
    "https": "azure",
    "cos": "ibm",
    "oci": "oci",
    "nebius": "nebius",
    "cw": "coreweave",
}
MODES = ("MOUNT", "COPY", "MOUNT_CACHED")
PRESETS: dict[str, dict[str, Any]] = {  # storage.py:327-376
    "MODEL_CHECKPOINT_RO": {
        "vfs_read_chunk_streams": 16,
        "vfs_read_chunk_size": "32M",
        "read_only": True,
    },
    "MODEL_CHECKPOINT_RW": {
        "vfs_read_chunk_streams": 16,
        "vfs_read_chunk_size": "32M",
        "transfers": 8,
    },
    "DATASET_RO": {"vfs_read_chunk_streams": 0, "vfs_read_chunk_size": "8M", "read_only": True},
    "DATASET_RW": {"vfs_read_chunk_streams": 0, "vfs_read_chunk_size": "8M", "transfers": 16},
}
SIZE = re.compile(r"^\d+(\.\d+)?[bBkKMGTP]?$")  # rclone SizeSuffix
DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|ms|s|m|h|d|w|M|y))+$|^\d+(\.\d+)?$")
CACHED_KEYS = {  # key -> kind: "int", "size", "duration", "bool"
    "transfers": "int",
    "buffer_size": "size",
    "vfs_cache_max_size": "size",
    "vfs_cache_max_age": "duration",
    "vfs_read_ahead": "size",
    "vfs_read_chunk_size": "size",
    "vfs_read_chunk_streams": "int",
    "vfs_write_back": "duration",
    "read_only": "bool",
}
S3_NAME = re.compile(r"^[a-z0-9][-a-z0-9.]*[a-z0-9]$")
GCS_NAME = re.compile(r"^[a-z0-9][-a-z0-9_.]*[a-z0-9]$")
NAME_HINT = "Bucket names are 3-63 lower-case letters, digits, '-' and '.', e.g. 'my-ckpt'."


def bucket_name_problem(name: str, store: str | None) -> str | None:
    """Why `name` is not a valid bucket name for `store` (storage.py:2012-2068), or None."""
    if store == "gcs":
        if not 3 <= len(name) <= 222 or not GCS_NAME.fullmatch(name):
            return f"invalid GCS bucket name '{name}'"
        if name.startswith("goog") or "google" in name:
            return f"GCS bucket names may not start with 'goog' or contain 'google': '{name}'"
        return None
    if not 3 <= len(name) <= 63:
        return f"bucket name '{name}' must be 3 to 63 characters long"
    if not S3_NAME.fullmatch(name):
        return f"invalid bucket name '{name}'"
    if ".." in name:
        return f"bucket name '{name}' contains '..'"
    try:
        ipaddress.ip_address(name)
        return f"bucket name '{name}' is shaped like an IP address"
    except ValueError:
        pass
    if name.startswith("xn--") or name.endswith(("-s3alias", "--ol-s3")):
        return f"bucket name '{name}' uses a prefix or suffix S3 reserves"
    return None


def parse_uri(uri: str, path: tuple, where: Where) -> tuple[str, str, str]:
    """`s3://bucket/a/b` -> (store, bucket, prefix). Unsupported or malformed: a located error."""
    scheme, _, rest = uri.partition("://")
    scheme = scheme.lower()
    if scheme in OTHER_SCHEMES:
        where.fail(
            path,
            f"skyform does not support {OTHER_SCHEMES[scheme]} buckets ({uri})",
            "skyform mounts s3://, gs:// and r2:// buckets (and S3-compatible stores set in "
            "config.yaml `storage.endpoint`).",
            unsupported=True,
        )
    if scheme not in SCHEMES:
        where.fail(path, f"unknown bucket URI scheme '{scheme}://' in {uri}", _scheme_hint())
    store = SCHEMES[scheme]
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        where.fail(path, f"bucket URI {uri} names no bucket", "Write e.g. 's3://my-bucket/data'.")
    problem = bucket_name_problem(bucket, store)
    if problem:
        where.fail(path, problem, NAME_HINT)
    return store, bucket, prefix.strip("/")


def _scheme_hint() -> str:
    return "Use s3://bucket[/prefix], gs://bucket[/prefix] or r2://bucket[/prefix]."


def is_bucket_uri(value: str) -> bool:
    return re.match(r"^[a-z][a-z0-9+.-]*://", value, re.IGNORECASE) is not None


def uri_mount(uri: str, path: tuple, where: Where) -> FileMount:
    """`dst: s3://bucket/prefix`: a read-only COPY of an existing bucket (SkyPilot's form b)."""
    store, bucket, prefix = parse_uri(uri, path, where)
    spec = BucketSpec(name=bucket, store=store, prefix=prefix, mode="COPY", must_exist=True)
    return FileMount(source=uri, store=store, mode="COPY", bucket=spec)


def storage_mount(value: dict[str, Any], path: tuple, where: Where) -> FileMount:
    """The dict form, with SkyPilot's name/source matrix (storage.py:1214-1310)."""
    for key, item in value.items():
        if item is None:
            where.fail(
                (*path, key),
                f"'{key}' is empty",
                "Fill in a value (e.g. your bucket name) or remove the key.",
            )
    spec = where.validate(RawStorage, value, path)
    if spec.name is None and spec.source is None:
        where.fail(
            path,
            "a storage file mount needs 'source' or 'name'",
            "Give a bucket name ('name: my-bucket') or a source ('source: s3://bucket').",
        )
    store = spec.store.lower() if spec.store is not None else None
    if store == "volume":
        where.fail(
            (*path, "store"),
            "store: volume (a Kubernetes volume) is not supported",
            "Mount a bucket instead, or use a shared filesystem path.",
            unsupported=True,
        )
    if store in OTHER_STORES:
        where.fail(
            (*path, "store"),
            f"skyform does not support {store} buckets",
            f"Choose one of: {', '.join(STORES)}.",
            unsupported=True,
        )
    if store is not None and store not in STORES:
        where.fail(
            (*path, "store"),
            f"unknown store '{spec.store}'",
            f"Choose one of: {', '.join(STORES)}.",
        )
    mode = spec.mode.upper() if spec.mode is not None else "MOUNT"
    if mode not in MODES:
        where.fail(
            (*path, "mode"), f"unknown mode '{spec.mode}'", f"Choose one of: {', '.join(MODES)}."
        )
    if spec.name is not None and is_bucket_uri(spec.name):
        where.fail(
            (*path, "name"),
            f"name '{spec.name}' is a URI; name takes the bare bucket name",
            f"Write 'name: {spec.name.split('://', 1)[1].split('/')[0]}', or move the URI to "
            "'source:' to use that existing bucket.",
        )
    sources = [spec.source] if isinstance(spec.source, str) else list(spec.source or [])
    if isinstance(spec.source, list) and not sources:
        where.fail((*path, "source"), "source list is empty")
    uri = sources[0] if len(sources) == 1 and is_bucket_uri(sources[0]) else None
    if uri is None and any(is_bucket_uri(s) for s in sources):
        where.fail(
            (*path, "source"),
            "a source list holds local paths only",
            "Mount each bucket as its own file mount.",
        )
    rclone = _mode_options(spec.type, spec.config, mode, path, where)
    read_only = bool(rclone.pop("read_only", False))
    flags = tuple(f"--{k.replace('_', '-')}={v}" for k, v in sorted(rclone.items()))
    persistent = True if spec.persistent is None else spec.persistent
    common: dict[str, Any] = dict(
        mode=mode, persistent=persistent, read_only=read_only, rclone_flags=flags
    )
    if uri is not None:
        if spec.name is not None:
            where.fail(
                (*path, "name"),
                "storage name should not be specified if the source is a remote URI",
                f"Drop 'name:' to use {uri} as it is, or drop 'source:' to make a bucket "
                f"named {spec.name}.",
            )
        uri_store, bucket, prefix = parse_uri(uri, (*path, "source"), where)
        if store is not None and store != uri_store:
            where.fail(
                (*path, "store"),
                f"source {uri} is a {uri_store} bucket but store is {store}",
                f"Drop 'store:' or write 'store: {uri_store}'; skyform does not copy buckets "
                "between clouds.",
            )
        bucket_spec = BucketSpec(
            name=bucket, store=uri_store, prefix=prefix, must_exist=True, **common
        )
        return FileMount(source=uri, store=uri_store, mode=mode, bucket=bucket_spec)
    if spec.name is None:
        where.fail(
            (*path, "source"),
            "a local source needs 'name:', the bucket to upload it into",
            "Add e.g. 'name: my-data-bucket'.",
        )
    problem = bucket_name_problem(spec.name, store)
    if problem:
        where.fail((*path, "name"), problem, NAME_HINT)
    uploads = _local_sources(sources, (*path, "source"), where)
    bucket_spec = BucketSpec(name=spec.name, store=store, uploads=uploads, **common)
    return FileMount(
        source=uploads if isinstance(spec.source, list) else next(iter(uploads), spec.source),
        name=spec.name,
        store=store,
        mode=mode,
        persistent=spec.persistent,
        bucket=bucket_spec,
    )


def _local_sources(sources: list[str], path: tuple, where: Where) -> tuple[str, ...]:
    """Each must exist; a single source must be a directory (a file is written as a list);
    list entries need distinct basenames, since each lands at <bucket>/<basename>."""
    base = base_of(where)
    seen: dict[str, str] = {}
    for source in sources:
        if source.endswith("/") and source != "/":
            where.fail(path, f"source '{source}' ends with '/'", f"Write '{source.rstrip('/')}'.")
        local = Path(source).expanduser()
        local = local if local.is_absolute() else base / local
        if not local.exists():
            where.fail(
                path,
                f"local source {source} does not exist ({local})",
                missing_hint(source, where)
                or f"Local paths are relative to where skyform runs ({base}), as in SkyPilot.",
            )
        if len(sources) == 1 and not local.is_dir():
            where.fail(
                path,
                f"local source {source} is a file; a single source must be a directory",
                f"Write 'source: [{source}]' to upload one file.",
            )
        name = local.name
        if name in seen:
            where.fail(path, f"sources {seen[name]} and {source} have the same name '{name}'")
        seen[name] = source
    return tuple(absolute(source, where) for source in sources)


def _mode_options(
    preset: str | None, config: dict[str, Any] | None, mode: str, path: tuple, where: Where
) -> dict[str, Any]:
    """`type:` and `config:` (storage.py:953-972, 379-473): the MOUNT_CACHED rclone options."""
    options: dict[str, Any] = {}
    if preset is not None:
        if mode != "MOUNT_CACHED":
            where.fail((*path, "type"), f"type is for mode MOUNT_CACHED, not {mode}")
        if preset.upper() not in PRESETS:
            where.fail(
                (*path, "type"),
                f"unknown type '{preset}'",
                f"Choose one of: {', '.join(PRESETS)}.",
            )
        options.update(PRESETS[preset.upper()])
    for key, value in (config or {}).items():
        at = (*path, "config", key)
        if key not in ("mount", "mount_cached"):
            where.fail(
                at, f"unknown key '{key}'", "config takes 'mount' or 'mount_cached'.", at_key=True
            )
        wanted = "MOUNT" if key == "mount" else "MOUNT_CACHED"
        if mode != wanted:
            where.fail(at, f"config.{key} is for mode {wanted}, not {mode}")
        if not isinstance(value, dict):
            where.fail(at, f"expected a mapping, got {describe(value)}")
        allowed = {"read_only": "bool"} if key == "mount" else CACHED_KEYS
        for option, item in value.items():
            options[option] = _option(option, item, allowed, (*at, option), where)
    return options


def _option(key: str, value: Any, allowed: dict[str, str], at: tuple, where: Where) -> Any:
    kind = allowed.get(key)
    if kind is None:
        where.fail(
            at,
            f"unknown key '{key}'",
            f"Allowed keys: {', '.join(sorted(allowed))}.",
            at_key=True,
        )
    if kind == "bool":
        if not isinstance(value, bool):
            where.fail(at, f"expected true or false, got {describe(value)}")
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            where.fail(at, f"expected a whole number of at least 0, got {describe(value)}")
        return value
    text = str(value)
    pattern, example = (SIZE, "64M") if kind == "size" else (DURATION, "5s")
    if not pattern.fullmatch(text):
        where.fail(at, f"invalid {kind} '{text}'", f"Write e.g. '{example}'.")
    return text
