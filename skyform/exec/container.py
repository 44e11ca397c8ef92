"""A cluster's container on one node (`image_id: docker:IMAGE`), as SkyPilot keeps one.

Before setup or a run, every node gets the cluster's container running: a runtime that
answers (docker or podman, as the login user or through passwordless sudo — root's podman
when the user's rootless podman has no subordinate ids; on a cloud VM after its init has
installed one), the registry login when the task gives one, the image pulled, and one
long-lived container (`skyform-<cluster>`) with the host network, FUSE, the node's NVIDIA
GPUs when the task asks for them, and the node user's home plus every mount destination
bind-mounted at the same path, so the workdir (`~/skyform_workdir`), file mounts and bucket
mounts are where the task expects them. The job runner then starts setup and run inside it
(`<runtime> exec`, runner.sh.j2), and `skyform ssh` enters it (`enter_command`).

A container whose image or mapped paths differ from what the job needs is replaced; the
setups recorded for the old one are dropped with it, so setup runs again in the new one.
The registry password goes on stdin, never on a command line, in a plan or a log.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from skyform.errors import ExecError
from skyform.exec.node_jobs import NODE_BASE, cluster_prefix
from skyform.exec.runner import NodeRunner

# SkyPilot's names for a private registry's login (task envs; the password as a secret)
USERNAME_ENV = "SKYPILOT_DOCKER_USERNAME"
PASSWORD_ENV = "SKYPILOT_DOCKER_PASSWORD"
SERVER_ENV = "SKYPILOT_DOCKER_SERVER"
RUNTIME_WAIT = 900  # seconds a cloud node's init may still be installing the runtime


@dataclass(frozen=True)
class RegistryLogin:
    username: str
    server: str
    password: str  # may be empty: the node's own credentials pull (SkyPilot does the same)

    def __repr__(self) -> str:  # never the password
        return f"RegistryLogin(username={self.username!r}, server={self.server!r})"


@dataclass(frozen=True)
class ContainerRequest:
    """What one cluster's container must be on every node."""

    cluster: str
    image: str
    binds: tuple[str, ...] = ()  # absolute node paths mapped in (besides the home)
    login: RegistryLogin | None = None
    gpus: bool = False  # the task asks for NVIDIA GPUs: every one of the node's is passed in

    @property
    def name(self) -> str:
        return container_name(self.cluster)

    @property
    def full_image(self) -> str:
        """The image with the registry's name in front when a login names one (SkyPilot)."""
        if self.login is None or self.image.startswith(f"{self.login.server}/"):
            return self.image
        return f"{self.login.server}/{self.image}"

    def digest(self) -> str:
        """What the running container is compared with: image, mapped paths, GPUs."""
        gpus = ["gpus"] if self.gpus else []  # (no line without: digests stay as they were)
        text = "\n".join([self.full_image, *sorted(set(self.binds)), *gpus])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def container_name(cluster: str) -> str:
    return f"skyform-{cluster_prefix(cluster)}"


def registry_login(
    envs: Mapping[str, str], secrets: Mapping[str, str] | None
) -> RegistryLogin | None:
    """SkyPilot's SKYPILOT_DOCKER_* values (a secret wins over an env of the same name)."""
    values = {**envs, **(secrets or {})}
    server = values.get(SERVER_ENV, "").strip()
    if not server:
        return None
    return RegistryLogin(values.get(USERNAME_ENV, ""), server, values.get(PASSWORD_ENV, ""))


def mount_binds(destinations: Iterable[str]) -> tuple[str, ...]:
    """Absolute mount destinations (others are under the home, which is mapped whole)."""
    return tuple(sorted({d.rstrip("/") or "/" for d in destinations if d.startswith("/")}))


# bash, run as the login user: $1 name, $2 image, $3 digest, $4 wait, $5 login user,
# $6 server, $7 cluster prefix, $8 "gpus" or "", then bind paths; the password (if any) on
# stdin. GPUs go in as each runtime takes NVIDIA's: docker `--gpus all` (NVIDIA's container
# toolkit), podman the CDI device `nvidia.com/gpu=all` (the host's `nvidia-ctk cdi generate`).
START = r"""
set -u
name=$1 image=$2 want=$3 wait=$4 user=$5 server=$6 prefix=$7 gpus=$8
shift 8
base="$HOME/__BASE__"
say() { printf '%s\n' "$*"; }
find_runtime() {
  local c ids single=""
  for c in docker podman "sudo -n docker" "sudo -n podman"; do
    command -v "${c##* }" >/dev/null 2>&1 || continue
    if [ "$c" = podman ] && [ "$(id -u)" != 0 ]; then
      # rootless needs the user's subordinate ids (/etc/subuid); without them it maps one
      # id only, and images owned by others fail: rootful podman through sudo first then
      ids=$($c info --format '{{len .Host.IDMappings.UIDMap}}' 2>/dev/null) || continue
      [ "${ids:-0}" -lt 2 ] && { single=$c; continue; }
    elif ! $c info >/dev/null 2>&1; then
      continue
    fi
    rt=$c
    return 0
  done
  [ -n "$single" ] && rt=$single
}
rt=""
if ! find_runtime; then
  # a cloud node's init may still be installing one
  if command -v cloud-init >/dev/null 2>&1; then
    timeout "$wait" cloud-init status --wait >/dev/null 2>&1
  fi
  if ! find_runtime; then
    say "error no container runtime answers on this node" \
      "(tried docker and podman, as $(id -un) and with sudo -n)"
    exit 0
  fi
fi
pw=""
[ -n "$server" ] && IFS= read -r pw
if [ -n "$server" ] && [ -n "$pw" ]; then
  if ! out=$(printf '%s' "$pw" | $rt login --username "$user" --password-stdin "$server" 2>&1); then
    say "error login to $server failed: $(printf '%s' "$out" | tail -n 1)"
    exit 0
  fi
fi
mkdir -p "$base" && printf '%s %s\n' "$rt" "$name" >"$base/container"
shown='{{index .Config.Labels "skyform.config"}} {{.State.Running}}'
state=$($rt inspect -f "$shown" "$name" 2>/dev/null)
case "$state" in
"$want true") say "ready $rt"; exit 0 ;;
"$want false")
  if out=$($rt start "$name" 2>&1); then
    say "started $rt"
  else
    say "error $rt start $name: $(printf '%s' "$out" | tail -n 1)"
  fi
  exit 0
  ;;
esac
if [ -n "$state" ]; then
  $rt kill "$name" >/dev/null 2>&1 # SIGKILL: bash as PID 1 ignores the TERM of rm -f
  $rt rm -f "$name" >/dev/null 2>&1
fi
rm -rf "$base/jobs/$prefix-setup-"* # a new container: the setups done went with the old one
if ! $rt image inspect "$image" >/dev/null 2>&1; then
  if ! out=$($rt pull "$image" 2>&1); then
    say "error $rt pull $image failed: $(printf '%s' "$out" | tail -n 1)"
    exit 0
  fi
fi
args=(-d -i --name "$name" --label "skyform.config=$want" --net=host --cap-add SYS_ADMIN)
[ -e /dev/fuse ] && args+=(--device /dev/fuse)
case "${rt##* }:$gpus" in
docker:gpus) args+=(--gpus all) ;;
podman:gpus) args+=(--device nvidia.com/gpu=all) ;;
esac
args+=(-v "$HOME:$HOME")
for b in "$@"; do
  case "$b" in "$HOME" | "$HOME"/* | *:*) continue ;; esac # (-v splits at colons)
  [ -e "$b" ] && args+=(-v "$b:$b")
done
if out=$($rt run "${args[@]}" --entrypoint /bin/bash "$image" 2>&1); then
  say "created $rt"
else
  say "error $rt run $image failed: $(printf '%s' "$out" | tail -n 1)"
fi
""".replace("__BASE__", NODE_BASE)


def start_command(request: ContainerRequest, wait: int = RUNTIME_WAIT) -> str:
    login = request.login
    args = [
        request.name,
        request.full_image,
        request.digest(),
        str(wait),
        login.username if login else "",
        login.server if login else "",
        cluster_prefix(request.cluster),
        "gpus" if request.gpus else "",
        *request.binds,
    ]
    return "bash -c " + shlex.quote(START) + " skyform-container " + shlex.join(args)


@dataclass(frozen=True)
class NodeContainer:
    runtime: str  # "docker", "podman", "sudo -n podman" ...
    name: str
    how: str  # ready (already running) | started | created

    @property
    def runner_arg(self) -> str:
        """What the job runner is given: the runtime's words, then the container's name."""
        return f"{self.runtime} {self.name}"


def ensure_container(
    runner: NodeRunner, request: ContainerRequest, wait: int = RUNTIME_WAIT
) -> NodeContainer:
    """Have the cluster's container running on this node (one round trip)."""
    password = request.login.password if request.login else ""
    result = runner.run(
        start_command(request, wait),
        stdin=(password + "\n") if request.login else None,
        timeout=wait + runner.timeouts.command + 600,  # an image pull takes minutes
    )
    lines = [ln for ln in result.stdout.splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    how, _, rest = last.partition(" ")
    if result.ok and how in ("ready", "started", "created") and rest:
        return NodeContainer(rest, request.name, how)
    why = rest if how == "error" else (result.stderr.strip() or last or f"exit {result.exit_code}")
    raise ExecError(
        f"{runner.label}: cannot start container {request.name} ({request.image}): {why}",
        hint="`image_id: docker:...` needs docker or podman on the node and the image "
        "reachable from it (private registry: SKYPILOT_DOCKER_SERVER, _USERNAME and "
        "--secret SKYPILOT_DOCKER_PASSWORD)",
    )


# bash on the node, as the login user: `skyform ssh` into the cluster's container (as
# `docker exec -it`), in the home (mapped at the same path) with HOME set as jobs see it.
# $1 container name, $2 the cluster, $3 "tty" or "", then the command (none: a login
# shell). The runtime is the one that started this user's last container (the words before
# its name in $base/container): a node user's runtime is the same for every cluster.
ENTER = r"""
name=$1 cluster=$2 tty=$3
shift 3
again="\`skyform exec $cluster true\` starts it again, with the cluster's setup"
words=()
[ -s "$HOME/__BASE__/container" ] && read -r -a words <"$HOME/__BASE__/container"
if [ "${#words[@]}" -lt 2 ]; then
  echo "skyform: no container was started on this node yet ($again)" >&2
  exit 255
fi
rt=("${words[@]:0:${#words[@]}-1}")
if [ "$("${rt[@]}" inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" != true ]; then
  echo "skyform: the cluster's container $name is not running on this node ($again)" >&2
  exit 255
fi
flags=(-i -w "$HOME" -e "HOME=$HOME")
[ "$tty" = tty ] && flags+=(-t)
if [ $# -gt 0 ]; then
  exec "${rt[@]}" exec "${flags[@]}" "$name" /bin/bash -c "$1"
fi
exec "${rt[@]}" exec "${flags[@]}" "$name" /bin/bash -l
""".replace("__BASE__", NODE_BASE)


def enter_command(cluster: str, command: str, *, tty: bool) -> str:
    """The node's shell command that runs `command` (or a login shell) inside the cluster's
    container; exit 255 with a reason on stderr when that container is not running."""
    args = [container_name(cluster), cluster, "tty" if tty else "", *([command] if command else [])]
    return "bash -c " + shlex.quote(ENTER) + " skyform-ssh " + shlex.join(args)
