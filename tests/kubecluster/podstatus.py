"""The pod statuses a kubelet would report, as the node agent patches them (raw API dicts)."""

from __future__ import annotations

import datetime


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def conditions(ready: bool) -> list[dict]:
    stamp = now()
    names = ("PodScheduled", "Initialized", "PodReadyToStartContainers")
    found = [{"type": n, "status": "True", "lastTransitionTime": stamp} for n in names]
    state = "True" if ready else "False"
    for name in ("ContainersReady", "Ready"):
        found.append({"type": name, "status": state, "lastTransitionTime": stamp})
    return found


def _container_status(pod: dict, state: dict, ready: bool, **extra) -> dict:
    container = pod["spec"]["containers"][0]
    return {
        "name": container["name"],
        "image": container.get("image", ""),
        "imageID": "",
        "ready": ready,
        "restartCount": 0,
        "state": state,
        **extra,
    }


def running_status(pod: dict, address: str, started: str) -> dict:
    """Running and Ready at `address`, which is both podIP and hostIP (a pod is a node)."""
    container = _container_status(
        pod,
        {"running": {"startedAt": started}},
        True,
        started=True,
        containerID=f"skyform-test://{pod['metadata']['uid']}",
    )
    return {
        "status": {
            "phase": "Running",
            "conditions": conditions(True),
            "hostIP": address,
            "hostIPs": [{"ip": address}],
            "podIP": address,
            "podIPs": [{"ip": address}],
            "startTime": started,
            "containerStatuses": [container],
        }
    }


def exited_status(pod: dict, started: str, code: int) -> dict:
    """The pod's command ended: Succeeded or Failed (restartPolicy Never: no restart)."""
    terminated = {
        "exitCode": code,
        "reason": "Completed" if code == 0 else "Error",
        "startedAt": started,
        "finishedAt": now(),
    }
    container = _container_status(pod, {"terminated": terminated}, False, started=False)
    return {
        "status": {
            "phase": "Succeeded" if code == 0 else "Failed",
            "conditions": conditions(False),
            "containerStatuses": [container],
        }
    }


def refused_status(pod: dict, message: str) -> dict:
    """The agent cannot run this pod (an image without a command, an unknown volume)."""
    waiting = {"reason": "CreateContainerError", "message": message}
    return {"status": {"containerStatuses": [_container_status(pod, {"waiting": waiting}, False)]}}
