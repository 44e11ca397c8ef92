"""What `skyform check` looks at: which infra this machine can use right now.

Local facts are read (environment, credential files, kubeconfig, PATH); ssh pool hosts are
logged in to, as apply will, and the ones whose size config.yaml leaves out are probed
(ops/check_ssh.py); the one API call is Kubernetes' node list for the contexts skyform plans on,
which is what `plan` needs from a cluster (and refreshes its capacity cache).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from skyform.config import Config, SSHPool, load_config


@dataclass(frozen=True)
class InfraStatus:
    name: str
    usable: bool
    detail: str
    hint: str | None = None
    items: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _sdk_installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _extra_hint(extra: str, module: str) -> str | None:
    if _sdk_installed(module):
        return None
    return f"the Pulumi provider SDK is not installed: pip install 'skyform[{extra}]'"


def check_local(config: Config) -> InfraStatus:
    cpus = config.local.cpus or os.cpu_count() or 1
    detail = f"this machine: {cpus:g} vCPUs"
    return InfraStatus("local", True, detail)


def check_ssh_pool(name: str, pool: SSHPool) -> InfraStatus:
    """Log in to every host (user, key, host key, key exchange: what `apply` will need) and
    probe the ones whose size config.yaml leaves out; cache what was measured."""
    from skyform.ops.check_ssh import login_host, recording_kex
    from skyform.plan.catalog.hostfacts import write_facts

    with recording_kex(), ThreadPoolExecutor(max_workers=min(16, len(pool.hosts))) as ex:
        results = list(ex.map(lambda host: login_host(name, pool, host), pool.hosts))
    probed = {r.host_id: r.facts for r in results if r.facts is not None}
    if probed:
        write_facts(probed)
    ok = sum(r.ok for r in results)
    hints = [r.hint for r in results if r.hint]
    return InfraStatus(
        f"ssh/{name}",
        ok > 0,
        f"{ok}/{len(results)} hosts log in",
        hints[0] if hints else None,
        [r.line for r in results],
    )


def check_aws(env: dict[str, str], user_home: Path) -> InfraStatus:
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        found = "AWS_ACCESS_KEY_ID in the environment"
    elif env.get("AWS_PROFILE"):
        found = f"AWS_PROFILE={env['AWS_PROFILE']}"
    elif (user_home / ".aws" / "credentials").is_file():
        found = "~/.aws/credentials"
    elif (user_home / ".aws" / "config").is_file():
        found = "~/.aws/config"
    else:
        return InfraStatus(
            "aws",
            False,
            "no credentials found",
            "run `aws configure` or set AWS_ACCESS_KEY_ID / AWS_PROFILE",
        )
    return InfraStatus("aws", True, f"credentials: {found}", _extra_hint("aws", "pulumi_aws"))


def check_gcp(env: dict[str, str], user_home: Path) -> InfraStatus:
    adc = env.get("GOOGLE_APPLICATION_CREDENTIALS")
    default_adc = user_home / ".config" / "gcloud" / "application_default_credentials.json"
    if adc and Path(adc).is_file():
        found = f"GOOGLE_APPLICATION_CREDENTIALS={adc}"
    elif default_adc.is_file():
        found = "gcloud application-default credentials"
    else:
        return InfraStatus(
            "gcp",
            False,
            "no credentials found",
            "run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS",
        )
    project = env.get("GOOGLE_CLOUD_PROJECT") or env.get("CLOUDSDK_CORE_PROJECT")
    detail = f"credentials: {found}" + (f", project {project}" if project else "")
    return InfraStatus("gcp", True, detail, _extra_hint("gcp", "pulumi_gcp"))


def check_kubernetes(env: dict[str, str], config: Config) -> InfraStatus:
    """The kubeconfig's contexts, and what the ones skyform plans on have now: their nodes are
    read again (like `sky check`), which also refreshes the capacity cache `plan` uses."""
    from skyform.plan.catalog import load_catalog
    from skyform.plan.catalog.load import kubernetes_capacity

    offers = load_catalog(config).kubernetes
    offers.capacity = capacity = kubernetes_capacity(config, env)
    kubeconfig = capacity.kubeconfig()
    if not kubeconfig.contexts:
        return InfraStatus(
            "kubernetes",
            False,
            kubeconfig.missing(),
            "point KUBECONFIG at a kubeconfig, or create ~/.kube/config",
        )
    selection = capacity.select(None)
    planned = offers.planned(None, refresh=True)
    items = []
    for name in sorted(kubeconfig.contexts):
        ctx = planned.get(name)
        if ctx is None:
            items.append(f"{name}: not planned on (see kubernetes.allowed_contexts)")
        else:
            items.append(f"{name}: {ctx.summary()}")
            items += [f"  {note}" for note in ctx.notes]
    usable = [name for name, ctx in sorted(planned.items()) if ctx.usable]
    detail = (
        f"{len(kubeconfig.contexts)} context(s), current: {kubeconfig.current or 'none'}; "
        f"planning on: {', '.join(usable) or 'none'}"
    )
    problems = list(selection.notes)
    if any(not ctx.usable for ctx in planned.values()):
        problems.append(
            "plans leave out a context whose nodes cannot be read: fix its kubeconfig entry or "
            "credentials (`kubectl --context NAME get nodes` must work), or leave it out of "
            "kubernetes.allowed_contexts"
        )
    hint = "; ".join(problems) or _extra_hint("kubernetes", "pulumi_kubernetes")
    return InfraStatus("kubernetes", bool(usable), detail, hint, items)


def check_pulumi_cli() -> InfraStatus:
    exe = shutil.which("pulumi")
    if exe is None:
        return InfraStatus(
            "pulumi",
            False,
            "pulumi CLI not on PATH (needed to apply aws/gcp/kubernetes stacks)",
            "install it: curl -fsSL https://get.pulumi.com | sh",
        )
    try:
        out = subprocess.run(
            [exe, "version"], capture_output=True, text=True, timeout=10, check=False
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        out = "version unknown"
    return InfraStatus("pulumi", True, f"{exe} ({out or 'version unknown'})")


def check_all(config: Config | None = None, env: dict[str, str] | None = None) -> list[InfraStatus]:
    config = config or load_config()
    env = dict(os.environ if env is None else env)
    user_home = Path(env.get("HOME") or Path.home())
    results = [check_local(config)]
    results += [check_ssh_pool(name, pool) for name, pool in sorted(config.ssh_pools.items())]
    results += [check_aws(env, user_home), check_gcp(env, user_home)]
    results += [check_kubernetes(env, config), check_pulumi_cli()]
    return results
