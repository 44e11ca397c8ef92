"""Cost views of plans and of what clusters actually cost (`skyform cost`, `cost-report`).

Pure functions of their inputs (plans, a catalog, usage intervals, a clock value); nothing here
reads files or prints. Public API:

- `plan_cost(plan, catalog) -> PlanCost` — per cluster: offer, hourly, estimated hours and
  total, egress, spot saving versus the on-demand twin (estimate.py);
- `compare_plans(old, new) -> PlanComparison` — what changed in provenance, placement and cost
  between two plans (`cost diff`, `plan --check`) (compare.py);
- `check_plan(committed, committed_bytes, fresh) -> PlanCheck` (compare.py);
- `reprice(plan, catalog) -> Reprice` — the plan priced against another catalog (reprice.py);
- `usage_report(intervals, ...) -> UsageReport` — recorded prices × recorded uptime (usage.py);
- `policy_violations(plan, max_hourly=..., max_total=...)` (policy.py).
"""
