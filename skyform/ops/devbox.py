"""`launch -c NAME [--gpus ...]` with no task file: SkyPilot's dev box, a cluster without a job
(`sky launch -c dev --gpus A100`), to `ssh` into and `exec` on.

A plan is made from a task file and apply checks that file again (a plan whose file changed
is stale), so the dev box gets one: SKYFORM_HOME/devboxes/NAME.yaml, written by skyform
(0600) and naming only the cluster. The resource flags shape it, as they shape any task, and
are recorded in the plan as flags. The same file each time makes the cluster the same
owner's: `launch -c dev --gpus A100` again is "No changes", another --gpus a change.
"""

from __future__ import annotations

import json
from pathlib import Path

from skyform.paths import ensure_dir, home, write_atomic
from skyform.plan.naming import require_cluster_name

FOLDER = "devboxes"


def dev_box_task(cluster: str) -> Path:
    """The task file of dev box `cluster` (written when missing or not skyform's text)."""
    engine = require_cluster_name(cluster)  # `my_dev` is shown as typed, its file my-dev's
    path = ensure_dir(home() / FOLDER) / f"{engine}.yaml"
    text = (
        f"# `skyform launch -c {cluster}` with no task file: a cluster without a job.\n"
        f"name: {json.dumps(cluster)}\n"
    )
    try:
        same = path.is_file() and not path.is_symlink() and path.read_text() == text
    except (OSError, UnicodeDecodeError):
        same = False
    if not same:
        write_atomic(path, text, 0o600)
    return path
