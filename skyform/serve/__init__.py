"""SkyServe, the skyform way: a service is a plan of replicas behind a real load balancer.

lb/ is the HTTP reverse proxy (aiohttp); the pure controller pieces (replica states, probe
timing, autoscaler, spot placer, update manager) are functions of their inputs.
"""
