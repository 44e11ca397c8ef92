"""`skyform serve plan` (and the plan `serve up`/`update` show): the I/O around the pure
service plan (task file, config, catalog), and the `--env`/`--secret` values the controller
is given."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from skyform.serve.plan import Offering, ServicePlan, plan_service, service_name
from skyform.serve.planning import catalog_offerings, replace_resources
from skyform.spec.inputs import NO_INPUTS, TaskInputs
from skyform.spec.models import ResourceChoices, TaskSpec
from skyform.spec.service_models import ReplicaPolicy


@dataclass(frozen=True)
class ServicePlanResult:
    plan: ServicePlan
    task: TaskSpec
    warnings: list[str] = field(default_factory=list)

    @property
    def replica_policy(self) -> ReplicaPolicy:
        """The service's replica policy (a task without `service:` has no plan)."""
        assert self.task.service is not None, "plan_service refuses a task without service:"
        return self.task.service.replica_policy


def plan_service_file(
    task_file: Path, *, name: str | None = None, inputs: TaskInputs = NO_INPUTS
) -> ServicePlanResult:
    from skyform.config import load_config
    from skyform.errors import SpecError
    from skyform.plan.catalog import load_catalog
    from skyform.plan.optimizer import default_clouds
    from skyform.spec import load_task

    dag = load_task(task_file, inputs)
    if len(dag.tasks) != 1:
        raise SpecError(
            f"a service is one task; this file has {len(dag.tasks)}",
            "Put the service in a file of its own.",
            path=str(task_file),
        )
    task = dag.tasks[0]
    catalog = load_catalog(load_config())
    clouds = default_clouds(catalog, None)

    def offers_for(resources: ResourceChoices) -> Sequence[Offering]:
        from skyform.plan.optimizer import no_offers_error

        replica = replace_resources(task, resources)
        found = catalog_offerings(replica, catalog, clouds)
        if not found:
            raise no_offers_error(replica, 0, catalog, clouds, ())
        return found

    warnings = list(dag.warnings)
    if catalog.source.warning:
        warnings.append(catalog.source.warning)
    fallback = Path(task_file).stem
    plan = plan_service(task, service_name(name, task, fallback), os.fspath(task_file), offers_for)
    return ServicePlanResult(plan=plan, task=task, warnings=warnings)


def envs_and_secrets(
    env: list[str], env_file: list[Path], secret: list[str]
) -> tuple[dict[str, str], dict[str, str]]:
    """`K=V` values resolved here (the controller has no shell environment)."""
    from skyform.spec.envs import parse_overrides, read_env_file

    envs = dict(pair for path in env_file for pair in read_env_file(path))
    envs.update(parse_overrides(env, flag="--env", environ=os.environ))
    secrets = dict(parse_overrides(secret, flag="--secret", environ=os.environ))
    return envs, secrets
