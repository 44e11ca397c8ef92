"""`skyform check`'s GCP row: application-default credentials and the project."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from skyform.config import Config
from skyform.stacks.health import InfraStatus, missing_sdk_hint


def check_gcp(env: Mapping[str, str], user_home: Path, config: Config | None = None) -> InfraStatus:
    adc = env.get("GOOGLE_APPLICATION_CREDENTIALS")
    default_adc = user_home / ".config" / "gcloud" / "application_default_credentials.json"
    if adc and Path(adc).is_file():
        found = f"GOOGLE_APPLICATION_CREDENTIALS={adc}"
    elif default_adc.is_file():
        found = "gcloud application-default credentials"
    else:
        return InfraStatus(
            "gcp",
            False,
            "no credentials found",
            "run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS",
        )
    project = env.get("GOOGLE_CLOUD_PROJECT") or env.get("CLOUDSDK_CORE_PROJECT")
    detail = f"credentials: {found}" + (f", project {project}" if project else "")
    return InfraStatus("gcp", True, detail, missing_sdk_hint("gcp"))
