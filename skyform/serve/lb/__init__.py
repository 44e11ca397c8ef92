"""The load balancer: a streaming HTTP reverse proxy over the READY replicas of a service.

Its data path is its own lean HTTP/1.1 (http1.py, frontend.py, upstream.py) on uvloop, in
one process per core (workers.py): responses (SSE, chunked token streams) are relayed chunk
by chunk as they arrive, never buffered. The control port (/metrics, /-/replicas) is aiohttp.
"""
