"""Buckets at the edges: reading them at plan time, creating, uploading, mounting, deleting."""
