"""The journal in the state store: events (what happened, for `logs`, stale-plan reasons and
the recovery timeline) and usage intervals (what the cost report multiplies). Neither bumps
the serial: history never makes a reviewed plan stale."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from skyform.state.sqlcore import SqlCore

if TYPE_CHECKING:  # the models load with the first record read (status reads none of these)
    from skyform.state.models import ClusterRecord, Event, UsageInterval


class JournalMixin(SqlCore):
    # -- events ------------------------------------------------------------------------------

    def add_event(
        self,
        kind: str,
        message: str,
        *,
        cluster: str | None = None,
        job_id: int | None = None,
        data: dict | None = None,
    ) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO events (ts, kind, cluster, job_id, message, data) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (time.time(), kind, cluster, job_id, message, json.dumps(data or {})),
            )

    def events(self, *, cluster: str | None = None, since: float | None = None) -> list[Event]:
        from skyform.state.models import Event

        sql = "SELECT * FROM events WHERE 1=1"
        args: list[str | float] = []
        if cluster is not None:
            sql += " AND cluster=?"
            args.append(cluster)
        if since is not None:
            sql += " AND ts>=?"
            args.append(since)
        rows = self.execute(sql + " ORDER BY id", args).fetchall()
        return [
            Event(
                id=r["id"],
                ts=r["ts"],
                kind=r["kind"],
                cluster=r["cluster"],
                job_id=r["job_id"],
                message=r["message"],
                data=self._event_data(r["id"], r["data"]),
            )
            for r in rows
        ]

    def _event_data(self, event_id: int, text: str) -> dict:
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise self.damaged(
                f"table events, the row id={event_id}: column data is not a JSON object"
            )
        return data

    # -- usage intervals (cost report) -------------------------------------------------------

    def open_usage(
        self,
        record: ClusterRecord,
        *,
        managed_job_id: int | None = None,
        reason: str = "",
        started_at: float | None = None,
    ) -> int:
        with self.transaction() as conn:
            row = conn.execute(
                "INSERT INTO usage (cluster, offer, num_nodes, hourly_price, started_at, "
                "managed_job_id, reason) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    record.name,
                    record.spec.offer.model_dump_json(),
                    record.spec.num_nodes,
                    record.hourly_price,
                    started_at or time.time(),
                    managed_job_id,
                    reason,
                ),
            ).fetchone()
            return int(row["id"])

    def close_usage(self, cluster: str, *, ended_at: float | None = None) -> None:
        with self.transaction() as conn:
            conn.execute(
                "UPDATE usage SET ended_at=? WHERE cluster=? AND ended_at IS NULL",
                (ended_at or time.time(), cluster),
            )

    def usage(self, *, since: float | None = None) -> list[UsageInterval]:
        from skyform.plan.model import PlacedOffer
        from skyform.state.models import UsageInterval
        from skyform.state.records import load_record

        sql = "SELECT * FROM usage"
        args: tuple[float, ...] = ()
        if since is not None:
            sql, args = sql + " WHERE ended_at IS NULL OR ended_at>=?", (since,)
        rows = self.execute(sql + " ORDER BY id", args).fetchall()
        return [
            UsageInterval(
                id=r["id"],
                cluster=r["cluster"],
                offer=load_record(
                    PlacedOffer, r["offer"], what=f"usage interval {r['id']}", where=self.where
                ),
                num_nodes=r["num_nodes"],
                hourly_price=r["hourly_price"],
                started_at=r["started_at"],
                ended_at=r["ended_at"],
                managed_job_id=r["managed_job_id"],
                reason=r["reason"] or "",
            )
            for r in rows
        ]
