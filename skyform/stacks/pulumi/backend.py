"""Where skyform's Pulumi stacks live, and reading their outputs without the Pulumi CLI.

- Backend: config.yaml `pulumi.backend_url`, else $PULUMI_BACKEND_URL, else — in team mode,
  when the state URL is PostgreSQL — the same database through Pulumi's `postgres://` DIY
  backend (CLI v3.176+: its table `pulumi_state`, made on first use), else
  `file://$SKYFORM_HOME/pulumi` (state on this machine, no account needed).
- Project: config `pulumi.project` (default `skyform`); one stack per cluster, named after the
  cluster: `<project>/<cluster>`.
- Secrets: the passphrase provider. The passphrase is SKYFORM_PASSPHRASE when set (a team
  shares it, as it shares the stacks; the team's backend takes no other), else generated
  once into SKYFORM_HOME/secrets/pulumi-passphrase (0600); it reaches the CLI only through
  PULUMI_CONFIG_PASSPHRASE in its environment; skyform never logs or prints it.
- Work dirs: SKYFORM_HOME/pulumi-work/<project>/<cluster> keep Pulumi.yaml and the stack's
  Pulumi.<cluster>.yaml (with a passphrase backend, the stack's encryption salt is there).
  Another home starts with an empty one: the engine reads the salt from the stack itself.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse, urlsplit

from skyform.config import Config, confined, ensure_dir, home, load_config
from skyform.errors import ConfigError, StackError

PASSPHRASE_FILE = ("secrets", "pulumi-passphrase")
PASSPHRASE_ENV = "SKYFORM_PASSPHRASE"
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")  # what Pulumi accepts for project and stack names


@dataclass(frozen=True)
class PulumiBackend:
    project: str
    backend_url: str
    home: Path
    team: bool = False  # the state database's backend: every teammate's stacks are there

    def stack_name(self, cluster: str) -> str:
        if not _NAME.match(cluster):
            raise StackError(
                f"cluster name {cluster!r} cannot name a Pulumi stack "
                "(letters, digits, '_', '.', '-'; at most 100)",
                "Name the cluster differently (task `name:` or --cluster) and plan again.",
            )
        return cluster

    def qualified(self, cluster: str) -> str:
        """`<project>/<cluster>`, as skyform records and prints it."""
        return f"{self.project}/{self.stack_name(cluster)}"

    def work_dir(self, cluster: str) -> Path:
        return confined(self.home / "pulumi-work", self.project, self.stack_name(cluster))

    @property
    def passphrase_path(self) -> Path:
        return self.home.joinpath(*PASSPHRASE_FILE)

    def cli_env(self) -> dict[str, str]:
        """Environment for every Pulumi CLI call. Holds the passphrase: never log it."""
        backend_dir = local_backend_dir(self.backend_url)
        if backend_dir is not None:
            ensure_dir(backend_dir)
        return {
            "PULUMI_BACKEND_URL": self.backend_url,
            "PULUMI_CONFIG_PASSPHRASE": self.passphrase(),
            "PULUMI_SKIP_UPDATE_CHECK": "true",
        }

    def passphrase(self) -> str:
        """SKYFORM_PASSPHRASE, else this home's own. Stacks in the team's state database
        take only the team's: one encrypted with a passphrase of a single home could be
        brought down from no other (the README promises the team's)."""
        shared = os.environ.get(PASSPHRASE_ENV)
        if shared:
            return shared
        if self.team:
            from skyform.state.postgres import redact

            raise StackError(
                f"{PASSPHRASE_ENV} is not set: the clusters' Pulumi stacks are kept in the "
                f"team's state database ({redact(self.backend_url)}), encrypted with the "
                "team's passphrase, so that any teammate can manage them",
                f"Set {PASSPHRASE_ENV} to the team's passphrase (the one that seals cluster "
                "keys in the store) and run this again. A stack made with this home's own "
                f"passphrase: {PASSPHRASE_ENV}=$(cat {self.passphrase_path}). Or keep the "
                "stacks elsewhere: pulumi.backend_url in config.yaml.",
                nothing_made=True,
            )
        return ensure_passphrase(self.passphrase_path)


def pulumi_settings(config: Config | None = None, env: Mapping[str, str] | None = None):
    env = os.environ if env is None else env
    config = config or load_config()
    project = config.pulumi.project
    if not _NAME.match(project):
        raise ConfigError(
            f"config.yaml: pulumi.project {project!r} is not a valid Pulumi project name",
            "Use letters, digits, '_', '.' and '-' only.",
        )
    root = home()
    chosen = config.pulumi.backend_url or env.get("PULUMI_BACKEND_URL")
    shared = None if chosen else team_backend(config, env)
    url = chosen or shared or (root / "pulumi").as_uri()
    return PulumiBackend(project=project, backend_url=url, home=root, team=shared is not None)


def team_backend(config: Config, env: Mapping[str, str]) -> str | None:
    """The state store's PostgreSQL as Pulumi's DIY backend URL (None: the state is SQLite).

    Pulumi registers only the scheme `postgres`. Its driver (lib/pq) requires TLS unless the
    URL or PGSSLMODE says otherwise, where libpq (psycopg: the state store) prefers TLS and
    falls back to a plain connection: without an sslmode of the user's, the backend URL
    gets libpq's `prefer`, so the CLI reaches the database the way the store does (a server
    without TLS refused the CLI with "SSL is not enabled on the server")."""
    url = env.get("SKYFORM_STATE_URL") or config.state.url or ""
    scheme, sep, rest = url.partition("://")
    if not (sep and scheme in ("postgresql", "postgres")):
        return None
    backend = "postgres://" + rest
    if env.get("PGSSLMODE") or "sslmode" in parse_qs(urlsplit(backend).query):
        return backend
    return backend + ("&" if "?" in backend else "?") + "sslmode=prefer"


def ensure_passphrase(path: Path) -> str:
    """The stacks' passphrase, generated on first use (0600, never overwritten)."""
    if not path.exists():
        ensure_dir(path.parent)
        # Written aside, then linked into place: the file appears with its content, so
        # another thread or process making the first stack at the same time (a service's
        # replicas) never reads it empty. A link fails where one exists: the first one wins.
        made = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        fd = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_urlsafe(32) + "\n")
            os.link(made, path)
        except FileExistsError:
            pass  # another skyform process made it first
        finally:
            made.unlink(missing_ok=True)
    text = path.read_text().strip()
    if not text:
        raise StackError(
            f"{path} is empty",
            "Restore it from a backup: the stacks under it cannot be decrypted without it.",
        )
    return text


def local_backend_dir(url: str) -> Path | None:
    """The directory of a `file://` backend; None for other backends."""
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return None
    raw = unquote(parsed.netloc + parsed.path)
    return Path(os.path.expanduser(raw)).resolve()


def stack_state_file(settings: PulumiBackend, cluster: str) -> Path | None:
    """The checkpoint file of a cluster's stack in a local backend, if there is one."""
    root = local_backend_dir(settings.backend_url)
    if root is None:
        return None
    stacks = root / ".pulumi" / "stacks"
    for base in (stacks / settings.project / cluster, stacks / cluster):  # project / legacy layout
        for suffix in (".json", ".json.gz"):
            candidate = base.with_name(base.name + suffix)
            if candidate.is_file():
                return candidate
    return None


def read_checkpoint(path: Path) -> dict | None:
    try:
        raw = path.read_bytes()
        if path.suffix == ".gz":
            raw = gzip.decompress(raw)
        data = json.loads(raw)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def checkpoint_resources(data: dict) -> list[dict]:
    latest = (data.get("checkpoint") or {}).get("latest") or {}
    return [r for r in latest.get("resources") or [] if isinstance(r, dict)]


def stack_outputs(cluster: str, config: Config | None = None) -> dict | None:
    """A cluster's stack outputs (`nodes`, `ssh_user`) as last written to a local backend.

    Reads the backend's checkpoint file directly: no Pulumi CLI or SDK, cheap enough for
    `skyform plan`. None when the backend is not a local directory, the stack does not exist
    or has never been updated, or its file cannot be read. Secret outputs stay encrypted.
    """
    try:
        settings = pulumi_settings(config)
        path = stack_state_file(settings, cluster)
    except (ConfigError, StackError):
        return None
    data = read_checkpoint(path) if path else None
    if data is None:
        return None
    for resource in checkpoint_resources(data):
        if resource.get("type") == "pulumi:pulumi:Stack":
            outputs = resource.get("outputs")
            return dict(outputs) if isinstance(outputs, dict) else {}
    return None


def stack_has_nodes(cluster: str, config: Config | None = None) -> bool | None:
    """Whether the cluster's stack still holds its nodes, read from a local backend: True,
    False (the stack, or every instance in it, is gone — e.g. destroyed outside skyform),
    or None when that cannot be told without the CLI (a remote backend)."""
    try:
        settings = pulumi_settings(config)
    except (ConfigError, StackError):
        return None
    if local_backend_dir(settings.backend_url) is None:
        return None
    path = stack_state_file(settings, cluster)
    data = read_checkpoint(path) if path else None
    if data is None:
        return False
    from skyform.infra import PULUMI
    from skyform.stacks.pulumi.cloud import pulumi_cloud

    kinds = {str(r.get("type", "")) for r in checkpoint_resources(data)}
    return bool(kinds & {pulumi_cloud(cloud).node_type for cloud in PULUMI})


def stack_holds_resources(cluster: str, config: Config | None = None) -> bool | None:
    """Whether the cluster's stack holds anything a cloud bills or keeps (more than the stack
    and its providers), read from a local backend without the CLI or SDK; None when that
    cannot be told (a remote backend)."""
    try:
        settings = pulumi_settings(config)
    except (ConfigError, StackError):
        return None
    if local_backend_dir(settings.backend_url) is None:
        return None
    path = stack_state_file(settings, cluster)
    if path is None:
        return False  # no stack was ever made
    data = read_checkpoint(path)
    if data is None:
        return None
    return any(
        not str(r.get("type", "")).startswith(("pulumi:pulumi:Stack", "pulumi:providers:"))
        for r in checkpoint_resources(data)
    )
