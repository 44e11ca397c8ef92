"""The Pulumi engine: one stack per cluster on aws, gcp and kubernetes (and `skyform export`).

Layout — only the modules marked (sdk) import Pulumi, and nothing outside this package may
import it at module level (an SDK import costs seconds):

- `<cloud>/` (one folder per cloud the infra table gives this engine): `__init__.py` (its
  `CLOUD`: outputs, images, credential hints), `inputs.py`, `credentials.py` (pure), and
  `program.py` (sdk): the standalone Pulumi program, copied verbatim into exported
  projects, so it imports nothing from skyform; `cloud.py` finds a folder by name;
- `inputs`, `naming`, `disks`, `images`: what every cloud's inputs share (pure);
- `workspace` (sdk): the only module importing `pulumi.automation`;
- `errors`: Pulumi/cloud failures -> skyform errors (one adapter);
- `events`: engine events -> one line per resource operation;
- `outputs`: stack outputs -> ClusterHandle, refreshed state -> ClusterState;
- `backend`: settings, passphrase, `stack_outputs(cluster)` read from a local backend;
- `engine`: PulumiEngine (the StackEngine); `health`: its check rows and `nodes_gone`;
  `export`: plain Pulumi projects from a plan.
"""
