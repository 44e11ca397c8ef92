"""Readiness probes: the request a probe sends, and sending it.

SkyPilot's contract (notes §1.5): GET the path, or POST it with the JSON `post_data`; the
probe's headers; `timeout_seconds` per request; only HTTP 200 passes (a 204, a redirect,
a timeout or a refused connection fail). Always plain HTTP to the replica.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from skyform.spec.service_models import ReadinessProbe


@dataclass(frozen=True)
class ProbeRequest:
    method: str
    url: str
    timeout_seconds: float
    json_body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


def probe_request(spec: ReadinessProbe, endpoint: str) -> ProbeRequest:
    """`endpoint` is `http://host:port` of the replica's service port."""
    return ProbeRequest(
        method=spec.method,
        url=endpoint.rstrip("/") + spec.path,
        timeout_seconds=spec.timeout_seconds,
        json_body=spec.post_data,
        headers=dict(spec.headers),
    )


async def probe(session: Any, request: ProbeRequest) -> bool:
    """One probe on an aiohttp ClientSession; True only for HTTP 200."""
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=request.timeout_seconds)
    try:
        async with session.request(
            request.method,
            request.url,
            json=request.json_body,
            headers=request.headers,
            timeout=timeout,
            allow_redirects=False,
        ) as resp:
            return bool(resp.status == 200)
    except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
        return False
