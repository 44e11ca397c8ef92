"""The node agent of the test cluster: what kube-scheduler, the kubelets, the endpoints
controller and kube-proxy would do, for the pods skyform makes. Every `POLL` seconds it:

- binds each pending pod to a node that fits it (scheduling.py), or says why none does
  (condition PodScheduled=False, reason Unschedulable, in the scheduler's words);
- starts each bound pod: a network namespace on the cluster's bridge (podnet.py) and the
  pod's command in a sandbox (sandbox.py) with its Secret and emptyDir volumes; once its
  readiness probe (tcpSocket or httpGet; none: started) passes, reports it Running and Ready
  with the pod's address as podIP and hostIP (each pod is its own node);
- reports a pod whose command ended Failed (or Succeeded), as restartPolicy Never does;
- finishes deletions: a pod with a deletionTimestamp has its processes killed and its
  namespace removed, then is deleted with grace period 0; a Foreground deletion's finalizer
  is lifted once the object's dependents are gone (collector.py);
- keeps Endpoints and the node ports of Services (services.py).
"""

from __future__ import annotations

import base64
import contextlib
import socket
import threading
import time
import traceback
import urllib.request
from decimal import Decimal
from pathlib import Path

from kubecluster.collector import KINDS, collect
from kubecluster.podnet import PodNetwork
from kubecluster.podstatus import exited_status, now, refused_status, running_status
from kubecluster.rest import ApiError, Rest
from kubecluster.sandbox import PodRefused, PodSpec, Sandbox, Volume
from kubecluster.scheduling import choose_node, pod_requests
from kubecluster.services import NodePorts, sync_endpoints

POLL = 0.2  # while something happens (a pod starts, a deletion is finished)
POLL_IDLE = 0.5  # after a round with nothing to do: an idle cluster costs ~5% of a core


def pod_path(pod: dict, sub: str = "") -> str:
    meta = pod["metadata"]
    return f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}{sub}"


class RunningPod:
    def __init__(self, sandbox: Sandbox, netns: str, address: str, started: str) -> None:
        self.sandbox, self.netns, self.address, self.started = sandbox, netns, address, started
        self.reported = ""  # the last phase reported: "", "Running", "Failed", "Succeeded"


class NodeAgent:
    def __init__(self, rest: Rest, network: PodNetwork, run_dir: Path) -> None:
        self.rest, self.network, self.run = rest, network, run_dir
        self.pods: dict[str, RunningPod] = {}  # by pod uid
        self.node_ports = NodePorts()
        self.errors: list[str] = []
        self.log: list[str] = []  # what the agent did, for failure messages
        self._actions = 0  # how many things it did: a round that did any polls again soon
        self._refused: dict[str, str] = {}  # pod uid -> the message already reported
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="kube-node-agent")

    # --- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.node_ports.close()
        for uid in list(self.pods):
            self._remove(uid)

    def _loop(self) -> None:
        while not self._stop.is_set():
            done = self._actions
            try:
                self.tick()
            except Exception:  # keep serving; tests read `errors`
                self.errors.append(traceback.format_exc())
                del self.errors[:-20]
            starting = any(p.reported == "" for p in self.pods.values())
            self._stop.wait(POLL if starting or self._actions != done else POLL_IDLE)

    def note(self, text: str) -> None:
        self._actions += 1
        self.log.append(f"{time.strftime('%H:%M:%S')} {text}")
        del self.log[:-200]

    # --- one round ----------------------------------------------------------------------

    def tick(self) -> None:
        nodes = self.rest.get("/api/v1/nodes")["items"]
        pods = self.rest.get("/api/v1/pods")["items"]
        mine = {n["metadata"]["name"] for n in nodes}
        used = self._requests_by_node(pods)
        seen = set()
        for pod in pods:
            uid = pod["metadata"]["uid"]
            seen.add(uid)
            if pod["metadata"].get("deletionTimestamp"):
                self._finish_deletion(pod)
            elif not pod["spec"].get("nodeName"):
                self._schedule(pod, nodes, used)
            elif pod["spec"]["nodeName"] in mine:
                self._run(pod)
        for uid in set(self.pods) - seen:  # deleted with grace 0 by someone else
            self._remove(uid)
        # Read again, with the statuses just reported.
        objects = {kind: self.rest.get(f"/api/v1/{kind}")["items"] for kind in KINDS}
        for released in collect(self.rest, objects):
            self.note(f"{released}: foreground deletion finished")
        pods, services = objects["pods"], objects["services"]
        sync_endpoints(self.rest, services, pods, objects["endpoints"])
        running = {p.address: p.netns for p in self.pods.values() if p.reported == "Running"}
        self.node_ports.sync(services, pods, running)

    @staticmethod
    def _requests_by_node(pods: list[dict]) -> dict[str, dict[str, Decimal]]:
        used: dict[str, dict[str, Decimal]] = {}
        for pod in pods:
            node = pod["spec"].get("nodeName")
            if node and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                totals = used.setdefault(node, {})
                for name, amount in pod_requests(pod).items():
                    totals[name] = totals.get(name, Decimal(0)) + amount
        return used

    def _schedule(self, pod: dict, nodes: list[dict], used: dict[str, dict[str, Decimal]]):
        """Bind `pod`; `used` (requests per node) counts it there for the next pods."""
        node, why = choose_node(pod, nodes, used)
        meta = pod["metadata"]
        if node is None:
            if self._refused.get(meta["uid"]) != why:
                self._refused[meta["uid"]] = why
                condition = {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": why,
                    "lastTransitionTime": now(),
                }
                self._patch_status(pod, {"status": {"conditions": [condition]}})
                self.note(f"pod {meta['name']} unschedulable: {why}")
            return
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        with contextlib.suppress(ApiError):  # deleted or bound meanwhile
            self.rest.post(pod_path(pod, "/binding"), binding)
            self.note(f"pod {meta['name']} bound to {node}")
            totals = used.setdefault(node, {})
            for name, amount in pod_requests(pod).items():
                totals[name] = totals.get(name, Decimal(0)) + amount

    def _run(self, pod: dict) -> None:
        uid = pod["metadata"]["uid"]
        running = self.pods.get(uid)
        if running is None:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                return  # its processes are gone for good (restartPolicy Never)
            try:
                running = self._start(pod)
            except PodRefused as exc:
                self._refuse(pod, str(exc))
                return
            if running is None:
                return  # waiting for a volume's object
        code = running.sandbox.exit_code()
        if code is not None:
            if running.reported in ("", "Running"):
                if not running.sandbox.started():  # the sandbox itself failed: say why
                    self.note(f"pod {pod['metadata']['name']}: {running.sandbox.log_tail()}")
                self._report_exit(pod, running, code)
            return
        if running.reported == "" and not running.sandbox.started():
            return  # still making its mounts
        if running.reported == "" and self._probe_passes(pod, running.address):
            self._report_running(pod, running)

    # --- starting and reporting -----------------------------------------------------------

    def _start(self, pod: dict) -> RunningPod | None:
        meta, spec = pod["metadata"], pod["spec"]
        containers = spec.get("containers") or []
        if len(containers) != 1 or spec.get("initContainers"):
            raise PodRefused("the test node agent runs pods of exactly one container")
        container = containers[0]
        argv = list(container.get("command") or []) + list(container.get("args") or [])
        if not container.get("command"):
            raise PodRefused("the test node agent runs no images: the container needs a command")
        pod_dir = self.run / "pods" / f"{meta['namespace']}_{meta['name']}_{meta['uid'][:8]}"
        volumes = self._volumes(pod, container, pod_dir)
        if volumes is None:
            return None
        env = {e["name"]: e.get("value", "") for e in container.get("env") or [] if "name" in e}
        sandbox_spec = PodSpec(
            uid=meta["uid"],
            name=meta["name"],
            argv=argv,
            env=env,
            volumes=volumes,
            working_dir=container.get("workingDir"),
        )
        netns, address = self.network.add_pod(meta["uid"][:8])
        sandbox = Sandbox(sandbox_spec, netns, address, pod_dir)
        try:
            sandbox.start()
        except BaseException:
            sandbox.remove()
            self.network.remove_pod(netns, address)
            raise
        running = RunningPod(sandbox, netns, address, now())
        self.pods[meta["uid"]] = running
        self.note(f"pod {meta['name']} started at {address} ({netns})")
        return running

    def _volumes(self, pod: dict, container: dict, pod_dir: Path) -> list[Volume] | None:
        """The container's volume mounts made real; None while a Secret is missing."""
        declared = {v["name"]: v for v in pod["spec"].get("volumes") or []}
        found: list[Volume] = []
        for mount in container.get("volumeMounts") or []:
            volume = declared.get(mount["name"], {})
            path, read_only = mount["mountPath"], bool(mount.get("readOnly"))
            if "secret" in volume or "configMap" in volume:
                kind = "secrets" if "secret" in volume else "configmaps"
                ref = volume.get("secret", {}).get("secretName") or volume.get("configMap", {}).get(
                    "name"
                )
                ns = pod["metadata"]["namespace"]
                try:
                    obj = self.rest.get(f"/api/v1/namespaces/{ns}/{kind}/{ref}")
                except ApiError as exc:
                    if exc.status == 404:
                        self.note(f"pod {pod['metadata']['name']} waits for {kind} {ref}")
                        return None
                    raise
                target = pod_dir / "volumes" / mount["name"]
                target.mkdir(parents=True, exist_ok=True)
                for key, value in (obj.get("data") or {}).items():
                    raw = base64.b64decode(value) if kind == "secrets" else value.encode()
                    (target / key).write_bytes(raw)
                    (target / key).chmod(0o644)  # the volume's defaultMode
                found.append(Volume(path, target, read_only=True))
            elif "emptyDir" in volume:
                if volume["emptyDir"].get("medium") == "Memory":
                    found.append(Volume(path, None))
                else:
                    target = pod_dir / "volumes" / mount["name"]
                    target.mkdir(parents=True, exist_ok=True)
                    found.append(Volume(path, target, read_only))
            else:
                raise PodRefused(
                    f"volume {mount['name']}: the test node agent supports secret, "
                    "configMap and emptyDir volumes"
                )
        return found

    def _probe_passes(self, pod: dict, address: str) -> bool:
        probe = pod["spec"]["containers"][0].get("readinessProbe")
        if not probe:
            return True
        port = (probe.get("tcpSocket") or probe.get("httpGet") or {}).get("port")
        if isinstance(port, str):
            for declared in pod["spec"]["containers"][0].get("ports") or []:
                if declared.get("name") == port:
                    port = declared["containerPort"]
        if not isinstance(port, int):
            return True  # an exec probe: this agent cannot run it inside the pod; started
        if "httpGet" in probe:
            url = f"http://{address}:{port}{probe['httpGet'].get('path', '/')}"
            try:
                with urllib.request.urlopen(url, timeout=0.5) as answer:
                    return 200 <= answer.status < 400
            except OSError:
                return False
        try:
            with socket.create_connection((address, port), timeout=0.5):
                return True
        except OSError:
            return False

    def _report_running(self, pod: dict, running: RunningPod) -> None:
        if self._patch_status(pod, running_status(pod, running.address, running.started)):
            running.reported = "Running"
            self.note(f"pod {pod['metadata']['name']} Running and Ready")

    def _report_exit(self, pod: dict, running: RunningPod, code: int) -> None:
        status = exited_status(pod, running.started, code)
        if self._patch_status(pod, status):
            running.reported = status["status"]["phase"]
            self.note(f"pod {pod['metadata']['name']} {running.reported} (exit {code})")

    def _refuse(self, pod: dict, message: str) -> None:
        uid = pod["metadata"]["uid"]
        if self._refused.get(uid) == message:
            return
        self._refused[uid] = message
        self._patch_status(pod, refused_status(pod, message))
        self.note(f"pod {pod['metadata']['name']} refused: {message}")

    def _patch_status(self, pod: dict, body: dict) -> bool:
        try:
            self.rest.merge_patch(pod_path(pod, "/status"), body)
            return True
        except ApiError as exc:
            if exc.status != 404:
                raise
            return False

    # --- ending -------------------------------------------------------------------------

    def _finish_deletion(self, pod: dict) -> None:
        self._remove(pod["metadata"]["uid"])
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
        with contextlib.suppress(ApiError):  # already gone
            self.rest.delete(pod_path(pod), body)
            self.note(f"pod {pod['metadata']['name']} deleted")

    def _remove(self, uid: str) -> None:
        running = self.pods.pop(uid, None)
        self._refused.pop(uid, None)
        if running is None:
            return
        running.sandbox.remove()
        self.node_ports.close_netns(running.netns)
        self.network.remove_pod(running.netns, running.address)

    # --- what tests use -----------------------------------------------------------------

    def running_pod(self, namespace: str, name: str) -> RunningPod | None:
        for running in list(self.pods.values()):
            if running.sandbox.dir.name.startswith(f"{namespace}_{name}_"):
                return running
        return None
