"""One skyform cluster on GCP: N Compute Engine VMs reachable over SSH.

Input: `cluster`, a plain dict (an exported project reads it from its `cluster` config):
  name, project (or null: GOOGLE_PROJECT / GOOGLE_CLOUD_PROJECT), region, zone, machine_type,
  num_nodes, instance_names, firewall_names {ssh, internal}, network_tag, image, spot, gpu,
  accelerator {type, count} (N1 only) or null, disk {size_gb, type, iops}, ports ["8080",
  "9000-9010"], ssh_user, ssh_public_key, labels; optional `power` ("stopped" | "running",
  from `skyform stop` / `start`): the VMs' desired status (TERMINATED keeps the disk);
  optional `init_script`: every VM's startup script.
Resources: two firewall rules on the default network (SSH and the task's ports from anywhere;
all traffic between the cluster's VMs) and one VM per node; the cluster's `persistent: false`
buckets (`buckets` [{name, labels}], in the cluster's region, deleted with the stack). Stack
outputs: `nodes` (rank, id, public_ip, private_ip, port), `ssh_user`. `register_storage` is the
program of a storage stack: one bucket (`bucket` {name, region, labels}; `keep`: protected,
never emptied by Pulumi).
"""

import pulumi
import pulumi_gcp as gcp

POWER = {"stopped": "TERMINATED", "running": "RUNNING"}

NETWORK = "default"


def scheduling(spot, gpu):
    """Rules the API enforces but the SDK does not check."""
    if spot:
        # SPOT requires preemptible=true, automaticRestart=false, onHostMaintenance=TERMINATE.
        # DELETE on preemption: the VM is gone, like a terminated AWS spot instance.
        return {
            "provisioning_model": "SPOT",
            "preemptible": True,
            "automatic_restart": False,
            "on_host_maintenance": "TERMINATE",
            "instance_termination_action": "DELETE",
        }
    return {
        "provisioning_model": "STANDARD",
        "preemptible": False,
        "automatic_restart": True,
        # VMs with GPUs cannot live-migrate: host maintenance must terminate them.
        "on_host_maintenance": "TERMINATE" if gpu else "MIGRATE",
    }


def boot_disk(cluster):
    params = {
        "image": cluster["image"],
        "size": cluster["disk"]["size_gb"],
        "type": cluster["disk"]["type"],
    }
    if cluster["disk"].get("iops"):
        params["provisioned_iops"] = cluster["disk"]["iops"]
    return {"auto_delete": True, "initialize_params": params}


def metadata(cluster):
    items = {
        "ssh-keys": cluster["ssh_user"] + ":" + cluster["ssh_public_key"],
        # ssh-keys metadata is ignored where OS Login is on; this VM uses metadata keys.
        "enable-oslogin": "FALSE",
    }
    if cluster["gpu"]:
        items["install-nvidia-driver"] = "True"  # honoured by GPU images that lack a driver
    if cluster.get("init_script"):
        items["startup-script"] = cluster["init_script"]  # run as root at every boot
    return items


def firewalls(cluster, opts):
    names = cluster["firewall_names"]
    tag = cluster["network_tag"]
    gcp.compute.Firewall(
        "ssh",
        name=names["ssh"],
        network=NETWORK,
        description="skyform cluster " + cluster["name"] + ": SSH and task ports",
        allows=[{"protocol": "tcp", "ports": ["22", *cluster["ports"]]}],
        source_ranges=["0.0.0.0/0"],
        target_tags=[tag],
        opts=opts,
    )
    gcp.compute.Firewall(
        "internal",
        name=names["internal"],
        network=NETWORK,
        description="skyform cluster " + cluster["name"] + ": traffic between its VMs",
        allows=[{"protocol": "all"}],
        source_tags=[tag],
        target_tags=[tag],
        opts=opts,
    )


def bucket(spec, region, force_destroy, opts):
    """A private GCS bucket: public access prevented, uniform access, versioning off."""
    return gcp.storage.Bucket(
        "bucket-" + spec["name"],
        name=spec["name"],
        location=region.upper(),
        force_destroy=force_destroy,
        public_access_prevention="enforced",
        uniform_bucket_level_access=True,
        versioning={"enabled": False},
        labels=spec["labels"],
        opts=opts,
    )


def register_storage(storage):
    spec = storage["bucket"]
    provider = gcp.Provider("gcp", project=storage.get("project"), region=spec["region"])
    keep = storage.get("keep", True)  # persistent: protected, never emptied by Pulumi
    made = bucket(
        spec, spec["region"], not keep, pulumi.ResourceOptions(provider=provider, protect=keep)
    )
    pulumi.export("bucket", made.name)


def register(cluster):
    provider = gcp.Provider(
        "gcp", project=cluster.get("project"), region=cluster["region"], zone=cluster["zone"]
    )
    # Fixed names: a replacement must delete the old VM before creating the new one.
    opts = pulumi.ResourceOptions(provider=provider, delete_before_replace=True)
    firewalls(cluster, opts)
    for spec in cluster.get("buckets", []):
        bucket(spec, cluster["region"], True, pulumi.ResourceOptions(provider=provider))
    accelerator = cluster.get("accelerator")
    nodes = []
    for rank in range(cluster["num_nodes"]):
        instance = gcp.compute.Instance(
            "node-" + str(rank),
            name=cluster["instance_names"][rank],
            machine_type=cluster["machine_type"],
            zone=cluster["zone"],
            boot_disk=boot_disk(cluster),
            network_interfaces=[{"network": NETWORK, "access_configs": [{}]}],  # ephemeral IP
            scheduling=scheduling(cluster["spot"], cluster["gpu"]),
            guest_accelerators=[accelerator] if accelerator else None,
            metadata=metadata(cluster),
            labels=cluster["labels"],
            tags=[cluster["network_tag"]],
            service_account={"scopes": ["cloud-platform"]},  # the default compute account
            desired_status=POWER.get(cluster.get("power")),
            # GCP refuses some updates of a running VM; a stopped one takes them
            allow_stopping_for_update=True if cluster.get("power") else None,
            opts=opts,
        )
        interface = instance.network_interfaces[0]
        nodes.append(
            {
                "rank": rank,
                "id": instance.id,
                "public_ip": interface.access_configs[0].nat_ip,
                "private_ip": interface.network_ip,
                "port": 22,
            }
        )
    pulumi.export("nodes", nodes)
    pulumi.export("ssh_user", cluster["ssh_user"])
