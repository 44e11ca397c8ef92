"""One skyform cluster on Kubernetes: N pods running sshd, each behind its own Service.

Input: `cluster`, a plain dict (an exported project reads it from its `cluster` config):
  name, context (null: the current context), namespace (null: the context's), num_nodes,
  pod_names, secret_name, image, cpus, memory ("16Gi"), gpu or null: {count, node_selector
  {label: value}} or {count, node_affinity {key: label, values: [...]}},
  ports [8080, ...], ssh_user, ssh_public_key, labels.
Resources: a Secret with the authorized key, then per node a Pod (requests = limits for CPU,
memory and `nvidia.com/gpu`; sshd as the entrypoint, installed on the fly if the image lacks
it) and a NodePort Service for SSH and the task's ports. SSH reaches a pod at its node's
address (`public_ip` = the pod's hostIP) on the service's node port. Where nodes are not
reachable from outside the cluster, connect through
`kubectl port-forward svc/<pod>-ssh LOCAL_PORT:22` instead.
Stack outputs: `nodes` (rank, id, public_ip, private_ip = pod IP, port, node_ports: each task
port -> the node port it is reached at, e.g. a service replica's), `ssh_user`.
"""

import pulumi
import pulumi_kubernetes as k8s

KEYS_DIR = "/etc/skyform/ssh"
SSHD_SCRIPT = """set -e
if ! command -v sshd >/dev/null 2>&1 && [ ! -x /usr/sbin/sshd ]; then
  if command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq openssh-server rsync
  elif command -v dnf >/dev/null 2>&1; then dnf install -y openssh-server rsync
  elif command -v yum >/dev/null 2>&1; then yum install -y openssh-server rsync
  elif command -v apk >/dev/null 2>&1; then apk add --no-cache openssh rsync bash
  fi
fi
mkdir -p /run/sshd /root/.ssh && chmod 700 /root/.ssh
install -m 600 KEYS_DIR/authorized_keys /root/.ssh/authorized_keys
ssh-keygen -A
exec "$(command -v sshd || echo /usr/sbin/sshd)" -D -e -o PermitRootLogin=prohibit-password \\
  -o PasswordAuthentication=no
""".replace("KEYS_DIR", KEYS_DIR)


def resources(cluster):
    amounts = {"cpu": cluster["cpus"], "memory": cluster["memory"]}
    if cluster.get("gpu"):
        amounts["nvidia.com/gpu"] = str(cluster["gpu"]["count"])
    # Extended resources (GPUs) must have limits equal to requests; doing the same for CPU and
    # memory gives the pod the Guaranteed QoS class, so it is the last to be evicted.
    return {"requests": dict(amounts), "limits": dict(amounts)}


def pod_spec(cluster, secret_name):
    gpu = cluster.get("gpu")
    container = {
        "name": "node",
        "image": cluster["image"],
        "image_pull_policy": "IfNotPresent",
        "command": ["/bin/sh", "-c", SSHD_SCRIPT],
        "ports": [{"container_port": 22, "name": "ssh"}]
        + [{"container_port": port} for port in cluster["ports"]],
        "resources": resources(cluster),
        "readiness_probe": {"tcp_socket": {"port": 22}, "period_seconds": 5},
        "volume_mounts": [
            {"name": "ssh-keys", "mount_path": KEYS_DIR, "read_only": True},
            {"name": "shm", "mount_path": "/dev/shm"},  # the default 64 MB breaks dataloaders
        ],
    }
    spec: dict = {
        "restart_policy": "Never",  # a node that dies stays dead: skyform recovers the job
        "containers": [container],
        "volumes": [
            {"name": "ssh-keys", "secret": {"secret_name": secret_name}},
            {"name": "shm", "empty_dir": {"medium": "Memory"}},
        ],
    }
    if gpu:
        if gpu.get("node_selector"):
            spec["node_selector"] = gpu["node_selector"]
        if gpu.get("node_affinity"):  # nodes whose GPU label has one of several values
            term = {"match_expressions": [dict(gpu["node_affinity"], operator="In")]}
            required = {"node_selector_terms": [term]}
            spec["affinity"] = {
                "node_affinity": {"required_during_scheduling_ignored_during_execution": required}
            }
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    return spec


def service_ports(cluster):
    ports = [{"name": "ssh", "port": 22, "target_port": 22, "protocol": "TCP"}]
    for port in cluster["ports"]:
        ports.append({"name": "p" + str(port), "port": port, "target_port": port})
    return ports


# One server-side-apply field manager for every object skyform makes (the provider would
# pick a random one per resource and run): an object a killed run already made is then
# taken over by the next one instead of refused as a field conflict (interrupted.py).
MANAGED = {"pulumi.com/patchFieldManager": "skyform"}


def metadata(name, labels):
    # Typed, not a dict: the SDK loads `meta.v1` lazily, and with a dict it did so only when
    # the engine serialized the object, after the program returned. Two stacks' programs in
    # one process (a service's replicas) then met it half loaded ("module
    # 'pulumi_kubernetes.meta.v1' has no attribute 'ObjectMetaArgs'"): it must load while
    # the program declares its resources (skyform runs programs one at a time).
    return k8s.meta.v1.ObjectMetaArgs(name=name, labels=labels, annotations=MANAGED)


def register(cluster):
    # kubeconfig "": the provider reads the kubeconfig of the machine it runs on (KUBECONFIG,
    # else ~/.kube/config) at every operation. Left out, the SDK records this machine's
    # KUBECONFIG path in the stack, and refresh and destroy read that path: gone on a
    # teammate's machine, or here once the file moved.
    provider = k8s.Provider(
        "kubernetes",
        kubeconfig="",
        context=cluster.get("context"),
        namespace=cluster.get("namespace"),
    )
    # Fixed names: a replacement must delete the old object before creating the new one.
    opts = pulumi.ResourceOptions(provider=provider, delete_before_replace=True)
    labels = cluster["labels"]
    secret = k8s.core.v1.Secret(
        "ssh-keys",
        metadata=metadata(cluster["secret_name"], labels),
        string_data={"authorized_keys": cluster["ssh_public_key"]},
        opts=opts,
    )
    nodes = []
    for rank in range(cluster["num_nodes"]):
        name = cluster["pod_names"][rank]
        pod_labels = dict(labels)
        pod_labels["skyform/rank"] = str(rank)
        pod = k8s.core.v1.Pod(
            "node-" + str(rank),
            metadata=metadata(name, pod_labels),
            spec=pod_spec(cluster, secret.metadata.name),
            # Big GPU images take a while to pull; the pod is ready when sshd listens.
            opts=pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create="20m"))
            ),
        )
        service = k8s.core.v1.Service(
            "ssh-" + str(rank),
            metadata=metadata(name + "-ssh", labels),
            spec={
                "type": "NodePort",
                "selector": {
                    "skyform/cluster": labels["skyform/cluster"],
                    "skyform/rank": str(rank),
                },
                "ports": service_ports(cluster),
            },
            opts=opts,
        )
        nodes.append(
            {
                "rank": rank,
                "id": pod.id,
                "public_ip": pod.status.host_ip,
                "private_ip": pod.status.pod_ip,
                "port": service.spec.ports[0].node_port,
                "node_ports": {
                    str(port): service.spec.ports[index + 1].node_port
                    for index, port in enumerate(cluster["ports"])
                },
            }
        )
    pulumi.export("nodes", nodes)
    pulumi.export("ssh_user", cluster["ssh_user"])
