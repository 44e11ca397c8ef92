"""`plan` fetches SkyPilot's catalog when the copy in use is old, as SkyPilot does.

SkyPilot reads its AWS and GCP tables with `pull_frequency_hours=7` (sky/catalog/
aws_catalog.py): a copy older than that is fetched again, and a failed fetch keeps the old
copy and counts as an attempt (it touches the file), so an offline machine tries once per
period. skyform does the same with `catalog refresh`'s code (all files or none, validated,
renamed into place): the bundled catalog (a subset, with no date) and a refreshed copy whose
`fetched_at` is older than PULL_HOURS are due; the last attempt is recorded in
SKYFORM_HOME/catalog-fetch.json either way.

An offline plan pays at most PROBE_SECONDS, once per period: the first request (headers of
`aws/vms.csv`) runs in a thread that is waited for that long — name resolution included,
which a socket timeout does not bound. Only a server that answers gets the full download.
`SKYFORM_CATALOG_AUTO_FETCH=0` turns it off; the URL is the one the copy was refreshed
from, else SKYFORM_CATALOG_URL, else SkyPilot's.

Only `plan` (and what plans: launch) fetches: `apply` of a saved plan never changes the
catalog it checks the plan against.
"""

from __future__ import annotations

import calendar
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from skyform.errors import CatalogError
from skyform.paths import ensure_dir, write_atomic
from skyform.plan.catalog.load import MANIFEST, catalog_home

PULL_HOURS = 7  # SkyPilot's _PULL_FREQUENCY_HOURS for aws and gcp
PROBE_SECONDS = 2.0
ATTEMPT_FILE = "catalog-fetch.json"
SWITCH = "SKYFORM_CATALOG_AUTO_FETCH"
URL_VARIABLE = "SKYFORM_CATALOG_URL"


@dataclass(frozen=True)
class FetchOutcome:
    """What an attempt did: `fetched` True with the new copy in place, else `reason`."""

    url: str
    fetched: bool
    reason: str = ""

    def note(self) -> str:
        if self.fetched:
            return f"fetched SkyPilot's price catalog from {self.url} (the copy in use was due)"
        return (
            f"could not fetch a newer price catalog from {self.url} ({self.reason}); planned "
            f"on the one in use, next try in {PULL_HOURS} h (`skyform catalog refresh` now)"
        )


def fetch_if_due(
    *, now: Callable[[], float] = time.time, probe_seconds: float = PROBE_SECONDS
) -> FetchOutcome | None:
    """Fetch the catalog when the copy in use is due (None: it is not, or fetching is off)."""
    if os.environ.get(SWITCH, "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    moment = now()
    manifest = _manifest()
    if not _due(manifest, moment):
        return None
    url = _url(manifest)
    _record(moment, url, "")  # an attempt counts as one, whatever happens next
    reason = _probe(url, probe_seconds)
    if reason is None:
        from skyform.plan.catalog.refresh import refresh_catalog

        try:
            refresh_catalog(url, now=now)
        except CatalogError as err:
            reason = err.message
    if reason is not None:
        _record(moment, url, reason)
        return FetchOutcome(url, False, reason)
    return FetchOutcome(url, True)


def _manifest() -> dict:
    try:
        found = json.loads((catalog_home() / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _due(manifest: dict, moment: float) -> bool:
    period = PULL_HOURS * 3600
    fetched = _seconds(manifest.get("fetched_at"))
    if fetched is not None and moment - fetched < period:
        return False
    try:
        tried = json.loads(_attempt_path().read_text()).get("tried_at")
    except (OSError, ValueError, AttributeError):
        tried = None
    return not (isinstance(tried, int | float) and 0 <= moment - tried < period)


def _seconds(stamp: object) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return float(calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


def _url(manifest: dict) -> str:
    from skyform.plan.catalog.refresh import DEFAULT_BASE_URL

    recorded = manifest.get("url")
    if isinstance(recorded, str) and recorded:
        return recorded
    return os.environ.get(URL_VARIABLE) or DEFAULT_BASE_URL


def _attempt_path() -> Path:
    return catalog_home().parent / ATTEMPT_FILE


def _record(moment: float, url: str, error: str) -> None:
    path = _attempt_path()
    ensure_dir(path.parent)
    body = {"tried_at": moment, "url": url, "error": error}
    write_atomic(path, json.dumps(body, sort_keys=True) + "\n", mode=0o600)


def _probe(url: str, seconds: float) -> str | None:
    """Why the catalog server did not answer within `seconds` (None: it did, with 200)."""
    result: list[str | None] = []

    def ask() -> None:
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(f"{url.rstrip('/')}/aws/vms.csv", timeout=seconds):
                result.append(None)
        except urllib.error.HTTPError as exc:
            result.append(f"HTTP {exc.code} {exc.reason}")
        except (urllib.error.URLError, OSError, ValueError) as exc:
            result.append(str(getattr(exc, "reason", exc)))

    thread = threading.Thread(target=ask, name="catalog-probe", daemon=True)
    thread.start()
    thread.join(seconds)
    if not result:
        return f"no answer within {seconds:g} s"
    return result[0]
