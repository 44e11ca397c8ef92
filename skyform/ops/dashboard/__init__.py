"""`skyform dashboard`: a read-only web UI over the state store (clusters, jobs, managed jobs,
services, plans and their revisions, cost), served by aiohttp with jinja2 pages rendered on
the server, inline SVG charts and one small script; nothing is built at install time.

reads.py: bounded, set-based queries over the store; services_data.py: everything the pages
show of services (the one place to rewire when services move into the store); plan_view.py,
cost_view.py, charts.py: pure view models; guard.py: who may ask (token, Host, Origin,
CSRF); server.py: the routes; actions.py: cancel, down, autostop (with --allow-actions).
"""
