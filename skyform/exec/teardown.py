"""Leaving nodes as they were: stop skyform's jobs and remove what skyform put there.

Used when a cluster goes away. On ssh-pool hosts (the user's own machines) this matters: the
hosts outlive the cluster. A node that does not answer is skipped and reported — it may be
the node that was just preempted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from skyform.errors import NodeUnreachable
from skyform.exec.connect import Timeouts, open_runner
from skyform.exec.jobs import NODE_BASE, WORKDIR
from skyform.state.models import NodeHandle

QUICK = Timeouts(connect=5.0, banner=5.0, auth=5.0, channel=5.0, command=30.0)

# Kill the process group of every job that has not recorded a result, then remove skyform's
# directories. The job leader started the group with setsid, so -PID reaches its children.
TEARDOWN = f"""
base="$HOME/{NODE_BASE}"
live=""
for dir in "$base"/jobs/*/; do
  [ -f "$dir/pid" ] && [ ! -f "$dir/result" ] || continue
  read -r pid _ < "$dir/pid" || continue
  kill -TERM -- "-$pid" 2>/dev/null && live="$live $pid"
done
if [ -n "$live" ]; then
  sleep 1
  for pid in $live; do kill -KILL -- "-$pid" 2>/dev/null; done
fi
rm -rf "$base" "$HOME/{WORKDIR}"
echo "stopped:$(echo $live | wc -w)"
"""


def teardown_node(node: NodeHandle) -> str:
    runner = open_runner(node, timeouts=QUICK)
    try:
        result = runner.run(TEARDOWN)
    finally:
        runner.close()
    stopped = result.stdout.strip().rpartition("stopped:")[2] or "0"
    return f"stopped {stopped} job process group(s), removed ~/{NODE_BASE} and ~/{WORKDIR}"


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
