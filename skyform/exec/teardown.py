"""Leaving nodes as they were: stop skyform's jobs and remove what skyform put there.

Used when a cluster goes away. On ssh-pool hosts (the user's own machines) this matters: the
hosts outlive the cluster. A node that does not answer is skipped and reported — it may be
the node that was just preempted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from skyform.errors import NodeUnreachable
from skyform.exec.connect import open_runner
from skyform.exec.node_jobs import NODE_BASE, WORKDIR
from skyform.exec.runner import Timeouts
from skyform.state.models import NodeHandle
from skyform.storage.nodes import UNMOUNT_ALL

QUICK = Timeouts(connect=5.0, banner=5.0, auth=5.0, channel=5.0, command=30.0)

# Kill the process group of every job that has not recorded a result. The job leader started
# the group with setsid, so -PID reaches its children.
STOP_JOBS = f"""
base="$HOME/{NODE_BASE}"
live=""
# the autostop agent too (its process group: its sleep goes with it)
if [ -s "$base/autostop/agent.pid" ] && read -r apid < "$base/autostop/agent.pid" &&
  tr '\\0' ' ' < "/proc/$apid/cmdline" 2>/dev/null | grep -q "agent.sh loop"; then
  kill -TERM -- "-$apid" 2>/dev/null
fi
for dir in "$base"/jobs/*/; do
  [ -f "$dir/pid" ] && [ ! -f "$dir/result" ] || continue
  # a job in a container: its process group there (the runtime's exec client is no parent)
  if [ -s "$dir/box" ] && [ -s "$dir/inner" ] && read -r box < "$dir/box" &&
    read -r inner < "$dir/inner"; then
    ${{box% *}} exec "${{box##* }}" /bin/bash -c 'kill -TERM -- "-$1"' - "$inner" >/dev/null 2>&1
  fi
  read -r pid _ < "$dir/pid" || continue
  kill -TERM -- "-$pid" 2>/dev/null && live="$live $pid"
done
if [ -n "$live" ]; then
  sleep 1
  for pid in $live; do kill -KILL -- "-$pid" 2>/dev/null; done
fi
"""
# The cluster's container (exec/container.py), before the mounts it maps are unmounted.
REMOVE_CONTAINER = """
if [ -s "$base/container" ] && read -r box < "$base/container"; then
  ${box% *} kill "${box##* }" >/dev/null 2>&1 # SIGKILL: bash as PID 1 ignores TERM
  ${box% *} rm -f "${box##* }" >/dev/null 2>&1
fi
"""
TEARDOWN = (
    STOP_JOBS
    + REMOVE_CONTAINER
    + UNMOUNT_ALL
    + f"""
rm -rf "$HOME/{NODE_BASE}" "$HOME/{WORKDIR}"
echo "stopped:$(echo $live | wc -w)"
"""
)
KILL_JOBS = (
    STOP_JOBS.replace("kill -TERM", "kill -KILL").replace("sleep 1", ":")
    + """
echo "stopped:$(echo $live | wc -w)"
"""
)


def _run_script(node: NodeHandle, script: str) -> str:
    runner = open_runner(node, timeouts=QUICK)
    try:
        result = runner.run(script)
    finally:
        runner.close()
    return result.stdout.strip().rpartition("stopped:")[2] or "0"


def teardown_node(node: NodeHandle) -> str:
    stopped = _run_script(node, TEARDOWN)
    return f"stopped {stopped} job process group(s), removed ~/{NODE_BASE} and ~/{WORKDIR}"


def kill_jobs(node: NodeHandle) -> str:
    """SIGKILL every running skyform job on the node, no grace: what a reclaim does to them."""
    return f"killed {_run_script(node, KILL_JOBS)} job process group(s)"


def teardown_nodes(
    nodes: Sequence[NodeHandle], *, on_event: Callable[[str], None] = lambda _m: None
) -> None:
    if not nodes:
        return

    def one(node: NodeHandle) -> str:
        try:
            return f"node {node.rank}: {teardown_node(node)}"
        except NodeUnreachable as err:
            return f"node {node.rank}: not reachable, skipped ({err.message})"

    with ThreadPoolExecutor(max_workers=min(32, len(nodes))) as pool:
        for message in pool.map(one, nodes):
            on_event(message)
