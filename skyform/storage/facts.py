"""Plan time: read every bucket a DAG may use (exists? region? size?) through the clients.

A bucket that cannot be read (no SDK, no credentials, store unreachable) is not an error at
plan time: its fact says why, the plan shows the note, and egress from it is not priced.
"""

from __future__ import annotations

from dataclasses import replace

from skyform.config import Config
from skyform.errors import StorageError
from skyform.plan.buckets import BucketFact, bucket_uses, key, stores_to_read
from skyform.spec import Dag
from skyform.state.buckets import get_bucket
from skyform.state.db import StateDB
from skyform.storage.client import BucketClient, client_for


def read_facts(dag: Dag, config: Config, db: StateDB | None) -> dict[str, BucketFact]:
    facts: dict[str, BucketFact] = {}
    clients: dict[str, BucketClient | StorageError] = {}
    for use in bucket_uses(dag):
        for store in stores_to_read(dag, use):
            uri = key(store, use.spec.name)
            if uri in facts:
                continue
            if store not in clients:
                try:
                    clients[store] = client_for(store, config.storage)
                except StorageError as exc:
                    clients[store] = exc
            client = clients[store]
            if isinstance(client, StorageError):
                facts[uri] = BucketFact(store, use.spec.name, None, note=client.message)
                continue
            fact = client.read(use.spec.name, use.spec.prefix)
            record = get_bucket(db, uri) if db is not None and fact.exists else None
            if record is not None:
                fact = replace(fact, created_by_skyform=True, uploaded=record.uploaded_digest)
            facts[uri] = fact
    return facts
