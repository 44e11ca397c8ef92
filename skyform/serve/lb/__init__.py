"""The load balancer: a streaming HTTP reverse proxy over the READY replicas of a service.

aiohttp gives a streaming client and server in one asyncio library: responses (SSE, chunked
token streams) are relayed chunk by chunk as they arrive, never buffered.
"""
