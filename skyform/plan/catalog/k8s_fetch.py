"""Reading a context's nodes through the Kubernetes API, with the official `kubernetes` client.

The client does what a kubeconfig may ask for (tokens, client certificates, exec plugins such
as `gke-gcloud-auth-plugin` or `aws eks get-token`, CA bundles, proxies); skyform asks it for
one thing, `GET /api/v1/nodes` (paged), and keeps `k8s_nodes.node_record` of each node.

The client takes a noticeable fraction of a second to import, so it is imported here, only when
a context's cached capacity is missing or older than its TTL (`skyform[kubernetes]` installs
it), and its generated `CoreV1Api` (another second: ~250 models) is not imported at all.
No retries: an unreachable context is reported at once, and `plan` moves on without it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from skyform.plan.catalog.k8s_nodes import node_record

PAGE = 500
INSTALL_HINT = "the kubernetes client is not installed: pip install 'skyform[kubernetes]'"


class KubeUnavailable(Exception):
    """A context whose nodes could not be read; the message says why, in a few words."""


def fetch_nodes(config_file: str, context: str, timeout: float) -> list[dict[str, Any]]:
    """The node records of `context` (see k8s_nodes.node_record); raises KubeUnavailable."""
    try:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException
    except ImportError:
        raise KubeUnavailable(INSTALL_HINT) from None
    settings = client.Configuration()
    settings.retries = 0
    try:
        api = config.new_client_from_config(
            config_file=config_file,
            context=context,
            persist_config=False,
            client_configuration=settings,
        )
    except (ConfigException, OSError, ValueError, TypeError) as exc:
        raise KubeUnavailable(f"its kubeconfig entry cannot be used: {_first_line(exc)}") from None
    records: list[dict[str, Any]] = []
    token = None
    try:
        with api:
            while True:
                page = _node_page(api, token, timeout)
                records += [node_record(item) for item in page.get("items") or []]
                token = (page.get("metadata") or {}).get("continue")
                if not token:
                    return records
    except KubeUnavailable:
        raise
    except (ValueError, AttributeError) as exc:  # not JSON, or not a node list
        raise KubeUnavailable(f"the API server's answer is not a node list ({exc})") from None
    except Exception as exc:  # urllib3/ssl/socket errors, exec plugins failing
        raise KubeUnavailable(f"unreachable ({_first_line(exc)})") from None


def _node_page(api: Any, token: str | None, timeout: float) -> dict[str, Any]:
    """One page of `GET /api/v1/nodes`, as JSON. Through the client's ApiClient (auth, TLS,
    token refresh) but not CoreV1Api, whose import builds some 250 models (about a second)."""
    query: list[tuple[str, Any]] = [("limit", PAGE)] + ([("continue", token)] if token else [])
    method, url, headers, _, _ = api.param_serialize(
        method="GET",
        resource_path="/api/v1/nodes",
        query_params=query,
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    response = api.call_api(method, url, header_params=headers, _request_timeout=(timeout, timeout))
    body = response.read()
    if response.status >= 400:
        raise KubeUnavailable(_api_error(response.status, response.reason))
    page = json.loads(body)
    if not isinstance(page, dict):
        raise ValueError("expected a JSON object")
    return page


def _api_error(status: int, reason: str | None) -> str:
    reason = reason or "error"
    if status in (401, 403):
        return (
            f"the API server refused to list nodes (HTTP {status} {reason}): the context's "
            "user needs `list nodes` permission"
        )
    return f"the API server answered HTTP {status} {reason}"


def _first_line(exc: BaseException) -> str:
    """A short, stable reason: it goes into plans, which must not change from run to run nor
    carry secrets (a kubeconfig error may quote the user entry it could not use)."""
    cause: BaseException = exc
    while isinstance(getattr(cause, "reason", None), BaseException):  # urllib3 MaxRetryError
        cause = cause.reason  # type: ignore[attr-defined]
    name = type(cause).__name__
    if "Timeout" in name:
        return "timed out"
    lines = str(cause).strip().splitlines()
    line = lines[0] if lines else name
    if "Errno" in line:  # "...: [Errno 111] Connection refused" -> "Connection refused"
        line = line[line.index("Errno") :].split("]", 1)[-1]
    line = re.sub(r"<[^<>]* at 0x[0-9a-fA-F]+>", "", line)  # object addresses
    line = re.sub(r"\{.*\}", "{…}", line)  # quoted kubeconfig entries
    return line.strip(" ,'\"()")[:200] or name
