"""Standalone Pulumi programs, one per cloud: `register(cluster: dict)`.

Each file imports only `pulumi` and its provider SDK — never skyform — because `skyform export`
copies it verbatim into a project's `__main__.py`. Keep them readable for that team.
"""
