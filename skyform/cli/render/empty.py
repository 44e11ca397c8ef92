"""What `status` prints when skyform has no state yet: plain text, no rich and no models,
so a fresh machine's `status` starts fast. Byte for byte what rich prints for this text."""

from __future__ import annotations

import sys

from skyform.cli.render.output import print_json

NO_CLUSTERS = "No existing clusters."


def render_no_clusters(*, as_json: bool) -> None:
    if as_json:
        print_json([])
    else:
        sys.stdout.write(NO_CLUSTERS + "\n")
