"""Who may ask the dashboard what: the checks every request passes (pure functions of the
request's headers, so they are the same on every route).

- Without a token (on 127.0.0.1) the Host header must name loopback too: a page on another
  site whose name resolves to 127.0.0.1 (DNS rebinding) is refused.
- On any other address (127.0.0.2 too) a token is required (the `?token=` link printed at
  start sets a cookie; `Authorization: Bearer` works for scripts); compared in constant time.
- A POST (an action) needs --allow-actions, an Origin that is this dashboard's own, and the
  page's CSRF token.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field
from urllib.parse import urlsplit

COOKIE = "skyform_dashboard"
LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}
TOKENLESS = {"127.0.0.1", "::1", "localhost"}  # the addresses that need no token


def is_loopback(host: str) -> bool:
    name = host.strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(host_header: str) -> str:
    """The name part of a Host header (`[::1]:8765` -> `::1`)."""
    return urlsplit(f"//{host_header}").hostname or ""


@dataclass(frozen=True)
class Guard:
    listen_host: str
    token: str | None  # None: loopback only, no token asked
    allow_actions: bool = False
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    def host_allowed(self, host_header: str | None) -> bool:
        if not host_header:
            return False
        return self.token is not None or is_loopback(host_name(host_header))

    def token_ok(self, offered: str | None) -> bool:
        if self.token is None:
            return True
        if not offered:
            return False
        return hmac.compare_digest(offered.encode(), self.token.encode())

    def same_origin(self, origin: str | None, host_header: str | None) -> bool:
        """An action's Origin must be this dashboard (scheme http, the Host it was sent to)."""
        if not origin or not host_header or origin == "null":
            return False
        parts = urlsplit(origin)
        return parts.scheme == "http" and parts.netloc.lower() == host_header.lower()

    def csrf_ok(self, offered: str | None) -> bool:
        return bool(offered) and hmac.compare_digest(str(offered).encode(), self.csrf.encode())


def bearer(authorization: str | None) -> str | None:
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return None
