"""A resource provider of the project's own for the `engine` tests: `aws` and `gcp` as the
real engine sees them, recording what it is asked (see server.py and cloud.py)."""
