"""skyform: plan and run compute jobs across clouds, declaratively."""

__version__ = "0.1.0"
