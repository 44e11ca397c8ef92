"""The managed-job recovery strategies (SkyPilot's names): the one list of them. The task
file (`job_recovery`), `jobs launch --recovery`, the stored job and the policy read it."""

from __future__ import annotations

from enum import Enum


class Strategy(str, Enum):
    FAILOVER = "FAILOVER"
    EAGER_NEXT_REGION = "EAGER_NEXT_REGION"

    @classmethod
    def parse(cls, text: str | None) -> Strategy:
        if not text:
            return cls.EAGER_NEXT_REGION  # SkyPilot's default
        key = text.strip().upper().replace("-", "_")
        try:
            return cls(key)
        except ValueError:
            names = ", ".join(s.value for s in cls)
            raise ValueError(f"unknown recovery strategy {text!r} (known: {names})") from None


NAMES: tuple[str, ...] = tuple(sorted(s.value for s in Strategy))
FLAG_NAMES: tuple[str, ...] = tuple(n.lower() for n in NAMES)  # `--recovery failover`
