"""Where callers get the state store: `with open_state() as db: ...`.

`StateDB` is the type every store has (the SQL implementation behind the StateStore
contract of store.py); which database it talks to follows the state URL.
"""

from __future__ import annotations

from skyform.paths import state_path
from skyform.state.sql import SqlStateStore
from skyform.state.store import open_state, state_exists

StateDB = SqlStateStore

__all__ = ["StateDB", "open_state", "state_exists", "state_path"]
