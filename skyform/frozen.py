"""The two pydantic bases every model derives from (a leaf: pydantic only).

- `Frozen`: values skyform makes or reads from a user (plans, task files, config, costs):
  immutable, and an unknown field is an error that names it.
- `Stored`: records read back from state.db: immutable, and unknown fields (written by a
  newer skyform) are ignored, see state/records.py.
Both defer building their schema to first use, so importing a model module stays cheap.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")


class Stored(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="ignore")
