"""Names and labels the clouds accept, made from skyform's cluster names and task labels.

The SDKs do not check these; the cloud APIs reject them at apply time, so they are made valid
here (and tested):
- GCP labels: keys 1-63 chars, start with a lowercase letter, [a-z0-9_-]; values 0-63 chars of
  [a-z0-9_-] (lowercase only).
- GCP resource names (instances, firewalls): [a-z]([-a-z0-9]*[a-z0-9])?, at most 63 chars.
- Kubernetes label values: at most 63 chars of [A-Za-z0-9_.-], starting and ending with an
  alphanumeric; names of pods, services, secrets: DNS-1123 labels ([a-z0-9-], at most 63).
- AWS tags: keys up to 128 chars, values up to 256; the `aws:` prefix is reserved.
"""

from __future__ import annotations

import re

from skyform.digests import sha256_hex
from skyform.errors import StackError

MAX_LABEL = 63
_GCP_INVALID = re.compile(r"[^a-z0-9_-]")
_K8S_INVALID = re.compile(r"[^A-Za-z0-9_.-]")
_DNS_INVALID = re.compile(r"[^a-z0-9-]+")
LABELS_HINT = "Rename the label in the task's `resources.labels`."


def _short_hash(text: str) -> str:
    return sha256_hex(text)[:8]


def gcp_label_key(key: str) -> str:
    cleaned = _GCP_INVALID.sub("_", key.lower())
    if not cleaned or not cleaned[0].isalpha():
        cleaned = "l" + cleaned
    return cleaned[:MAX_LABEL]


def gcp_label_value(value: str) -> str:
    return _GCP_INVALID.sub("_", value.lower())[:MAX_LABEL]


def k8s_label_value(value: str) -> str:
    cleaned = _K8S_INVALID.sub("_", value)[:MAX_LABEL]
    return cleaned.strip("_.-")  # must start and end with an alphanumeric (or be empty)


def k8s_label_key(key: str) -> str:
    """`[prefix/]name`: the prefix is a DNS subdomain, the name a label value (not empty)."""
    prefix, _, name = key.rpartition("/")
    name = k8s_label_value(name) or "label"
    if prefix:
        prefix = re.sub(r"[^a-z0-9.-]+", "-", prefix.lower()).strip(".-")[:253]
    return f"{prefix}/{name}" if prefix else name


def sanitized_labels(labels: dict[str, str], key_fn, value_fn, cloud: str) -> dict[str, str]:
    """Map every user label through the cloud's rules; two keys that collide are an error."""
    out: dict[str, str] = {}
    origin: dict[str, str] = {}
    for key in sorted(labels):
        new_key = key_fn(key)
        if new_key in out:
            raise StackError(
                f"labels {origin[new_key]!r} and {key!r} both become {new_key!r} on {cloud}, "
                "whose label keys allow only lowercase letters, digits, '_' and '-'",
                LABELS_HINT,
            )
        out[new_key] = value_fn(labels[key])
        origin[new_key] = key
    return out


def aws_tags(labels: dict[str, str]) -> dict[str, str]:
    for key in labels:
        if key.lower().startswith("aws:"):
            raise StackError(
                f"label {key!r}: the 'aws:' tag prefix is reserved by AWS", LABELS_HINT
            )
    return {key[:128]: value[:256] for key, value in labels.items()}


def dns_name(*parts: str, must_start_with_letter: bool = False) -> str:
    """A DNS-1123 label from parts ("c1", "0") -> "c1-0"; long names keep a hash suffix."""
    raw = "-".join(parts)
    name = _DNS_INVALID.sub("-", raw.lower()).strip("-") or "x"
    if must_start_with_letter and not name[0].isalpha():
        name = "s" + name
    if len(name) > MAX_LABEL or name != raw:
        # Shortened or rewritten: a hash of the original keeps different clusters apart.
        suffix = _short_hash(raw)
        name = f"{name[: MAX_LABEL - len(suffix) - 1].rstrip('-')}-{suffix}"
    return name


def gcp_name(*parts: str) -> str:
    return dns_name(*parts, must_start_with_letter=True)


def plan_label(plan_digest: str | None) -> str | None:
    """`sha256:<64 hex>` shortened to a label value every cloud accepts."""
    if not plan_digest:
        return None
    return gcp_label_value(plan_digest.replace(":", "_"))
