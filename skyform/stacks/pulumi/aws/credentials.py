"""`skyform check`'s AWS row: are credentials configured on this machine."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from skyform.config import Config
from skyform.stacks.health import InfraStatus, missing_sdk_hint


def check_aws(env: Mapping[str, str], user_home: Path, config: Config | None = None) -> InfraStatus:
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        found = "AWS_ACCESS_KEY_ID in the environment"
    elif env.get("AWS_PROFILE"):
        found = f"AWS_PROFILE={env['AWS_PROFILE']}"
    elif (user_home / ".aws" / "credentials").is_file():
        found = "~/.aws/credentials"
    elif (user_home / ".aws" / "config").is_file():
        found = "~/.aws/config"
    else:
        return InfraStatus(
            "aws",
            False,
            "no credentials found",
            "run `aws configure` or set AWS_ACCESS_KEY_ID / AWS_PROFILE",
        )
    return InfraStatus("aws", True, f"credentials: {found}", missing_sdk_hint("aws"))
