"""The test provider's gRPC server: the ResourceProvider API, as the Pulumi engine (3.276)
drives a resource plugin, with the stubs the `pulumi` wheel ships.

The engine starts the plugin as `pulumi-resource-<pkg> <engine address>` and reads the port
from its first line of stdout. It then calls Handshake (answered: secrets and resource
references accepted, as the Terraform-bridged AWS and GCP providers answer), GetPluginInfo,
CheckConfig/DiffConfig/Configure for each provider resource, and per resource Check, Diff,
Create/Read/Update/Delete; Invoke for data sources; Cancel before it stops the plugin
(GetSchema is answered with a minimal schema, but preview, up, refresh and destroy never
ask). Every call is recorded in the cloud (cloud.py); resources live there between the
plugin's processes (one per operation).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import sys
import time
import traceback
from concurrent import futures
from typing import Any

import grpc
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import plugin_pb2, provider_pb2, provider_pb2_grpc

from testprovider import kinds, machines
from testprovider.cloud import UNKNOWN, Cloud, key, logical_name, reveal

SDK_PACKAGES = {"aws": "pulumi_aws", "gcp": "pulumi_gcp"}
INSTANCE_STATE = "aws:ec2transitgateway/instanceState:InstanceState"
AWS_INSTANCE = "aws:ec2/instance:Instance"
GCP_INSTANCE = "gcp:compute/instance:Instance"


def to_dict(struct: struct_pb2.Struct) -> dict:
    return json_format.MessageToDict(struct) if struct is not None else {}


def to_struct(value: dict) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(value)
    return out


def _changed(old: dict, new: dict) -> list[str]:
    keys = set(old) | set(new)
    keys.discard("__defaults")
    return sorted(k for k in keys if old.get(k) != new.get(k) or new.get(k) == UNKNOWN)


class Failure(Exception):
    """A refusal the cloud would give (its text reaches the engine as the provider's error)."""


class TestProvider(provider_pb2_grpc.ResourceProviderServicer):
    def __init__(self, package: str, cloud: Cloud) -> None:
        self.package = package
        self.cloud = cloud
        self.config: dict[str, Any] = {}
        self.version = importlib.metadata.version(SDK_PACKAGES[package])

    # -- bookkeeping -----------------------------------------------------------------------------

    def _record(self, method: str, request: Any = None, **fields: Any) -> None:
        call = {"method": method, "package": self.package, "pid": os.getpid(), **fields}
        for attr in ("urn", "id", "type"):
            value = getattr(request, attr, None)
            if value and attr not in call:
                call[attr] = value
        self.cloud.record(call)

    def _guard(self, context: grpc.ServicerContext, fn, *args):
        try:
            return fn(*args)
        except Failure as exc:
            context.abort(grpc.StatusCode.UNKNOWN, str(exc))
        except Exception:  # a bug of the test provider: say so plainly
            context.abort(grpc.StatusCode.INTERNAL, "test provider bug:\n" + traceback.format_exc())

    # -- plugin ------------------------------------------------------------------------------------

    def Handshake(self, request, context):
        self._record("Handshake", engine=request.engine_address)
        return provider_pb2.ProviderHandshakeResponse(
            accept_secrets=True, accept_resources=True, accept_outputs=False
        )

    def GetPluginInfo(self, request, context):
        self._record("GetPluginInfo")
        return plugin_pb2.PluginInfo(version=self.version)

    def GetSchema(self, request, context):
        self._record("GetSchema", version=request.version)
        schema = {"name": self.package, "version": self.version, "resources": {}, "functions": {}}
        return provider_pb2.GetSchemaResponse(schema=json.dumps(schema))

    def Cancel(self, request, context):
        self._record("Cancel")
        return empty_pb2.Empty()

    def GetMapping(self, request, context):
        return provider_pb2.GetMappingResponse(provider="", data=b"")

    def GetMappings(self, request, context):
        return provider_pb2.GetMappingsResponse(providers=[])

    # -- provider configuration --------------------------------------------------------------

    def CheckConfig(self, request, context):
        news = to_dict(request.news)
        self._record("CheckConfig", request, inputs=news, olds=to_dict(request.olds))
        return provider_pb2.CheckResponse(inputs=request.news)

    def DiffConfig(self, request, context):
        old, new = to_dict(request.old_inputs) or to_dict(request.olds), to_dict(request.news)
        old.pop("version", None)
        new.pop("version", None)
        changed = _changed(old, new)
        self._record("DiffConfig", request, changed=changed)
        if not changed:
            return provider_pb2.DiffResponse(changes=provider_pb2.DiffResponse.DIFF_NONE)
        replaces = [k for k in changed if k in ("region", "project", "zone")]
        return provider_pb2.DiffResponse(
            changes=provider_pb2.DiffResponse.DIFF_SOME, diffs=changed, replaces=replaces
        )

    def Configure(self, request, context):
        self.config = to_dict(request.args)
        self._record("Configure", request, inputs=self.config, variables=dict(request.variables))
        return provider_pb2.ConfigureResponse(
            acceptSecrets=True, supportsPreview=True, acceptResources=True
        )

    # -- resources -------------------------------------------------------------------------------

    def _kind(self, type_: str) -> kinds.Kind:
        kind = kinds.KINDS.get(type_)
        if kind is None:
            raise Failure(f"the test provider does not model {type_}")
        return kind

    def Check(self, request, context):
        news = to_dict(request.news)
        self._record("Check", request, inputs=news, olds=to_dict(request.olds))
        return provider_pb2.CheckResponse(inputs=request.news)

    def Diff(self, request, context):
        return self._guard(context, self._diff, request)

    def _diff(self, request):
        kind = self._kind(request.type)
        old = to_dict(request.old_inputs) if request.HasField("old_inputs") else {}
        new = to_dict(request.news)
        changed = [k for k in _changed(old, new) if k not in request.ignoreChanges]
        replaces = [k for k in changed if k in kind.replace_on]
        self._record("Diff", request, changed=changed, replaces=replaces)
        if not changed:
            return provider_pb2.DiffResponse(changes=provider_pb2.DiffResponse.DIFF_NONE)
        return provider_pb2.DiffResponse(
            changes=provider_pb2.DiffResponse.DIFF_SOME, diffs=changed, replaces=replaces
        )

    def Create(self, request, context):
        return self._guard(context, self._create, request)

    def _create(self, request):
        kind = self._kind(request.type)
        inputs = to_dict(request.properties)
        self._record("Create", request, inputs=inputs, preview=request.preview)
        if request.preview:
            return provider_pb2.CreateResponse(properties=request.properties)
        refusal = self.cloud.refusal(request.type)
        if refusal:
            raise Failure(refusal)
        made = kind.create(request.urn, inputs, self.config)
        outputs = made.outputs
        if kind.instance:
            outputs = machines.boot(self.package, made.id, inputs, outputs, self.cloud)
        with self.cloud.edit() as live:
            live[key(request.type, made.id)] = {
                "id": made.id,
                "type": request.type,
                "name": logical_name(request.urn),
                "urn": request.urn,
                "inputs": inputs,
                "outputs": outputs,
            }
        self._power_from(request.type, made.id, inputs)
        return provider_pb2.CreateResponse(id=made.id, properties=to_struct(outputs))

    def Read(self, request, context):
        return self._guard(context, self._read, request)

    def _read(self, request):
        with self.cloud.edit() as live:
            found = live.get(key(request.type, request.id))
        self._record("Read", request, inputs=to_dict(request.inputs), gone=found is None)
        if found is None:
            return provider_pb2.ReadResponse()  # no id: the resource no longer exists
        return provider_pb2.ReadResponse(
            id=request.id,
            properties=to_struct(found["outputs"]),
            inputs=to_struct(found["inputs"]),
        )

    def Update(self, request, context):
        return self._guard(context, self._update, request)

    def _update(self, request):
        news = to_dict(request.news)
        self._record(
            "Update",
            request,
            inputs=news,
            olds=to_dict(request.old_inputs),
            preview=request.preview,
        )
        if request.preview:
            return provider_pb2.UpdateResponse(
                properties=to_struct({**to_dict(request.olds), **news})
            )
        with self.cloud.edit() as live:
            found = live.get(key(request.type, request.id))
            if found is None:
                raise Failure(f"updating {request.id}: the resource does not exist (NotFound)")
            found["inputs"] = news
            found["outputs"] = {**found["outputs"], **news}
        self._power_from(request.type, request.id, news)
        with self.cloud.edit() as live:
            outputs = live[key(request.type, request.id)]["outputs"]
        return provider_pb2.UpdateResponse(properties=to_struct(outputs))

    def Delete(self, request, context):
        return self._guard(context, self._delete, request)

    def _delete(self, request):
        self._record("Delete", request, inputs=to_dict(request.old_inputs))
        with self.cloud.edit() as live:
            found = live.pop(key(request.type, request.id), None)
        if found is not None and self._kind(request.type).instance:
            machines.halt(request.id)
        return empty_pb2.Empty()

    # -- power: aws.ec2transitgateway.InstanceState, a GCP instance's desiredStatus ----------

    def _power_from(self, type_: str, id_: str, inputs: dict) -> None:
        if type_ == INSTANCE_STATE:
            running = inputs.get("state") != "stopped"
            self._power(AWS_INSTANCE, str(reveal(inputs.get("instanceId"))), running)
        elif type_ == GCP_INSTANCE and inputs.get("desiredStatus"):
            self._power(GCP_INSTANCE, id_, inputs["desiredStatus"] != "TERMINATED")

    def _power(self, type_: str, instance_id: str, running: bool) -> None:
        with self.cloud.edit() as live:
            target = live.get(key(type_, instance_id))
        if target is None:
            raise Failure(
                f"InvalidInstanceID.NotFound: The instance ID '{instance_id}' does not exist"
            )
        outputs = target["outputs"]
        if kinds.is_running(type_, outputs) == running:
            return
        if running:
            seed = f"{target['urn']}#{time.time_ns()}"  # a new address each start
            outputs = kinds.powered_on(type_, outputs, seed)
            outputs = machines.boot(
                self.package, instance_id, target["inputs"], outputs, self.cloud
            )
        else:
            machines.halt(instance_id, keep_disk=True)
            outputs = kinds.powered_off(type_, outputs)
        with self.cloud.edit() as live:
            live[key(type_, instance_id)]["outputs"] = outputs

    def Invoke(self, request, context):
        return self._guard(context, self._invoke, request)

    def _invoke(self, request):
        args = to_dict(request.args)
        self._record("Invoke", token=request.tok, inputs=args)
        answer = kinds.INVOKES.get(request.tok)
        if answer is None:
            raise Failure(f"the test provider does not model the function {request.tok}")
        try:
            found = answer(args, self.config, self.cloud)
        except LookupError as exc:
            raise Failure(str(exc)) from None
        return provider_pb2.InvokeResponse(**{"return": to_struct(found)})


def serve(package: str) -> None:
    parser = argparse.ArgumentParser(prog=f"pulumi-resource-{package}")
    parser.add_argument("engine", nargs="?")
    parser.parse_known_args()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    provider_pb2_grpc.add_ResourceProviderServicer_to_server(
        TestProvider(package, Cloud.from_env()), server
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    sys.stdout.write(f"{port}\n")
    sys.stdout.flush()
    with contextlib.suppress(KeyboardInterrupt):  # the engine stops plugins with a signal
        server.wait_for_termination()
