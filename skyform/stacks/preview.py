"""An engine's own preview of one cluster (`skyform plan --preview`): the resources it would
create, update, replace or delete, as `terraform plan` lists them, with the properties that
change. Values are shown only as the engine reported them, a secret as `[secret]`.
"""

from __future__ import annotations

from typing import Literal

from skyform.frozen import Frozen as _Model

StepOp = Literal["create", "update", "replace", "delete"]
STEP_OPS: tuple[StepOp, ...] = ("create", "update", "replace", "delete")
ChangeKind = Literal["add", "delete", "update"]
SECRET = "[secret]"


class PropertyChange(_Model):
    """One changed property, named by the engine's path (`metadata.labels["team"]`)."""

    path: str
    kind: ChangeKind
    replaces: bool = False  # this change forces the resource to be replaced
    old: str | None = None  # the value as JSON text, or "[secret]"; None: not shown
    new: str | None = None


class ResourceStep(_Model):
    op: StepOp
    type: str  # kubernetes:core/v1:Pod
    name: str  # the resource's name in its program (the URN's last part)
    urn: str
    properties: list[PropertyChange] = []


class EnginePreview(_Model):
    """What the engine said, in its order of resources (sorted by type and name)."""

    steps: list[ResourceStep] = []
    unchanged: int = 0  # resources it would leave as they are
    failure: str = ""  # the engine's error, when its preview stopped after these steps

    def count(self, op: StepOp) -> int:
        return sum(1 for s in self.steps if s.op == op)
