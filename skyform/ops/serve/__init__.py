"""The use cases behind `serve plan/up/update/status/plans/logs/down` (no printing here).

The service itself — its controller, replica manager, autoscaler and load balancer — is the
subsystem under `skyform/serve/`; these modules plan a service file, start or reach its
controller, and read what it records.
"""
