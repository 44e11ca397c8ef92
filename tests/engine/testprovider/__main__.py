"""`python -m testprovider aws|gcp <engine address>`: what the `pulumi-resource-aws` and
`pulumi-resource-gcp` shims on PATH run (see plugins.py)."""

import sys

from testprovider.server import serve

if __name__ == "__main__":
    serve(sys.argv.pop(1))
