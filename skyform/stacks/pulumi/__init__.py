"""The Pulumi engine: one stack per cluster on aws, gcp and kubernetes (and `skyform export`).

Layout — only the modules marked (sdk) import Pulumi, and nothing outside this package may
import it at module level (an SDK import costs seconds):

- `inputs`, `naming`, `disks`, `images`: ClusterSpec -> the program's plain input dict (pure);
- `programs/{aws,gcp,kubernetes}.py` (sdk): standalone Pulumi programs over that dict, also
  copied verbatim into exported projects, so they import nothing from skyform;
- `workspace` (sdk): the only module importing `pulumi.automation`;
- `errors`: Pulumi/cloud failures -> skyform errors (one adapter);
- `events`: engine events -> one line per resource operation;
- `outputs`: stack outputs -> ClusterHandle, refreshed state -> ClusterState;
- `backend`: settings, passphrase, `stack_outputs(cluster)` read from a local backend;
- `engine`: PulumiEngine (the StackEngine); `export`: plain Pulumi projects from a plan.
"""
