"""A small bucket-client interface: read (exists, region, size), create, empty+delete.

S3 and S3-compatible stores (R2, MinIO, Ceph, moto) through boto3; GCS through
google-cloud-storage. Both are imported lazily (only a plan that uses a bucket pays for them).
Where the store is reached and with which keys comes from config.yaml `storage:`, else the
standard AWS_* variables; keys stay in memory and in child-process environments only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from skyform.config import StorageSettings
from skyform.errors import StorageError
from skyform.plan.buckets import BucketFact

MAX_LIST_PAGES = 10  # a prefix of more than 10,000 objects: its size is "not cheap to know"
GB = 1e9


@dataclass(frozen=True)
class S3Access:
    """How to reach an S3 API. `secret_access_key` is never logged or shown (repr=False)."""

    endpoint: str | None = None
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = field(default=None, repr=False)
    provider: str = "AWS"  # rclone's provider name: AWS, Cloudflare, Minio, Other

    def rclone_env(self, remote: str) -> dict[str, str]:
        """rclone reads a remote's settings from RCLONE_CONFIG_<REMOTE>_<KEY> variables."""
        prefix = f"RCLONE_CONFIG_{remote.upper()}_"
        env = {prefix + "TYPE": "s3", prefix + "PROVIDER": self.provider}
        if self.access_key_id and self.secret_access_key:
            env[prefix + "ACCESS_KEY_ID"] = self.access_key_id
            env[prefix + "SECRET_ACCESS_KEY"] = self.secret_access_key
        else:
            env[prefix + "ENV_AUTH"] = "true"
        if self.endpoint:
            env[prefix + "ENDPOINT"] = self.endpoint
        if self.region:
            env[prefix + "REGION"] = self.region
        return env


def s3_access(
    settings: StorageSettings, store: str = "s3", environ: Mapping[str, str] | None = None
) -> S3Access:
    env = os.environ if environ is None else environ
    key = settings.access_key_id or env.get("AWS_ACCESS_KEY_ID")
    secret = (
        settings.secret_access_key.get_secret_value()
        if settings.secret_access_key is not None
        else env.get("AWS_SECRET_ACCESS_KEY")
    )
    if store == "r2":
        endpoint = settings.r2_endpoint or env.get("R2_ENDPOINT_URL")
        return S3Access(endpoint, "auto", key, secret, provider="Cloudflare")
    endpoint = settings.endpoint or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    region = settings.region or env.get("AWS_DEFAULT_REGION") or env.get("AWS_REGION")
    return S3Access(endpoint, region, key, secret, provider="Other" if endpoint else "AWS")


def gcs_rclone_env(remote: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """rclone's gcs remote: the machine's own Google credentials (env_auth), or, with
    STORAGE_EMULATOR_HOST set (the variable google-cloud-storage and gcloud honour), the
    emulator there, unauthenticated; rclone needs a project number to make or list buckets."""
    env = os.environ if environ is None else environ
    prefix = f"RCLONE_CONFIG_{remote.upper()}_"
    out = {prefix + "TYPE": "google cloud storage"}
    emulator = env.get("STORAGE_EMULATOR_HOST")
    if not emulator:
        return {**out, prefix + "ENV_AUTH": "true"}
    return {
        **out,
        prefix + "ENDPOINT": emulator if "://" in emulator else f"http://{emulator}",
        prefix + "ANONYMOUS": "true",
        prefix + "PROJECT_NUMBER": env.get("GOOGLE_CLOUD_PROJECT") or "skyform",
    }


class BucketClient(Protocol):
    store: str

    def read(self, name: str, prefix: str = "") -> BucketFact: ...

    def create(self, name: str, region: str, tags: Mapping[str, str]) -> None: ...

    def delete(self, name: str) -> bool:
        """Empty and delete the bucket; False when it was already gone."""
        ...


class S3Client:
    def __init__(self, access: S3Access, store: str = "s3") -> None:
        import boto3
        from botocore.config import Config as BotoConfig

        self.store = store
        self.access = access
        self._s3: Any = boto3.client(
            "s3",
            endpoint_url=access.endpoint,
            region_name=access.region or "us-east-1",
            aws_access_key_id=access.access_key_id,
            aws_secret_access_key=access.secret_access_key,
            config=BotoConfig(retries={"max_attempts": 2}, connect_timeout=5, read_timeout=30),
        )

    def read(self, name: str, prefix: str = "") -> BucketFact:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            head = self._s3.head_bucket(Bucket=name)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in ("404", "NoSuchBucket", "NotFound"):
                return BucketFact(self.store, name, exists=False)
            return BucketFact(self.store, name, None, note=f"cannot read it ({code or exc})")
        except BotoCoreError as exc:
            return BucketFact(self.store, name, None, note=f"cannot reach the store ({exc})")
        headers = head.get("ResponseMetadata", {}).get("HTTPHeaders", {})
        region = headers.get("x-amz-bucket-region") or self._location(name)
        return BucketFact(
            self.store, name, True, region=region, size_gb=self._size_gb(name, prefix)
        )

    def _location(self, name: str) -> str | None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            where = self._s3.get_bucket_location(Bucket=name).get("LocationConstraint")
        except (BotoCoreError, ClientError):
            return None
        return where or "us-east-1"  # S3 reports us-east-1 as no constraint

    def _size_gb(self, name: str, prefix: str) -> float | None:
        from botocore.exceptions import BotoCoreError, ClientError

        total, token = 0, None
        try:
            for _ in range(MAX_LIST_PAGES):
                args: dict[str, Any] = {"Bucket": name, "Prefix": prefix.rstrip("/") + "/"}
                if not prefix:
                    args.pop("Prefix")
                if token:
                    args["ContinuationToken"] = token
                page = self._s3.list_objects_v2(**args)
                total += sum(int(o.get("Size", 0)) for o in page.get("Contents", []))
                if not page.get("IsTruncated"):
                    return total / GB
                token = page.get("NextContinuationToken")
        except (BotoCoreError, ClientError):
            return None
        return None

    def create(self, name: str, region: str, tags: Mapping[str, str]) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        args: dict[str, Any] = {"Bucket": name}
        if region not in ("us-east-1", "auto"):
            args["CreateBucketConfiguration"] = {"LocationConstraint": region}
        try:
            self._s3.create_bucket(**args)
            self._s3.put_public_access_block(
                Bucket=name,
                PublicAccessBlockConfiguration={
                    "BlockPublicAcls": True,
                    "IgnorePublicAcls": True,
                    "BlockPublicPolicy": True,
                    "RestrictPublicBuckets": True,
                },
            )
            if tags:
                self._s3.put_bucket_tagging(
                    Bucket=name,
                    Tagging={"TagSet": [{"Key": k, "Value": v} for k, v in sorted(tags.items())]},
                )
        except (BotoCoreError, ClientError) as exc:
            raise StorageError(
                f"cannot create bucket {self.store}://{name} in {region}: {exc}",
                "Check the store's credentials and that the name is not taken.",
            ) from None

    def delete(self, name: str) -> bool:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            paginator = self._s3.get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=name):
                keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
                if keys:
                    self._s3.delete_objects(Bucket=name, Delete={"Objects": keys, "Quiet": True})
            self._s3.delete_bucket(Bucket=name)
        except ClientError as exc:
            if str(exc.response.get("Error", {}).get("Code")) in ("404", "NoSuchBucket"):
                return False  # deleted outside skyform: nothing left to do
            raise StorageError(f"cannot delete bucket {self.store}://{name}: {exc}") from None
        except BotoCoreError as exc:
            raise StorageError(f"cannot delete bucket {self.store}://{name}: {exc}") from None
        return True


class GCSClient:
    """GCS through google-cloud-storage (not installed by default: plans then say so)."""

    store = "gcs"

    def __init__(self) -> None:
        from google.auth.exceptions import DefaultCredentialsError
        from google.cloud import storage

        try:
            self._client = storage.Client()
        except DefaultCredentialsError:
            # plans then note that the bucket's region is not known, as without the SDK
            raise StorageError(
                "reading gcs buckets needs Google credentials, and none were found",
                "gcloud auth application-default login, or set GOOGLE_APPLICATION_CREDENTIALS.",
            ) from None

    def read(self, name: str, prefix: str = "") -> BucketFact:
        bucket = self._client.lookup_bucket(name)
        if bucket is None:
            return BucketFact("gcs", name, exists=False)
        return BucketFact("gcs", name, True, region=str(bucket.location).lower())

    def create(self, name: str, region: str, tags: Mapping[str, str]) -> None:
        bucket = self._client.bucket(name)
        bucket.labels = dict(tags)
        bucket.iam_configuration.public_access_prevention = "enforced"
        self._client.create_bucket(bucket, location=region)

    def delete(self, name: str) -> bool:
        bucket = self._client.lookup_bucket(name)
        if bucket is None:
            return False
        bucket.delete(force=True)
        return True


def client_for(store: str, settings: StorageSettings) -> BucketClient:
    """The client for `store`; a StorageError saying what to install when its SDK is missing."""
    try:
        if store == "gcs":
            return GCSClient()
        return S3Client(s3_access(settings, store), store)
    except ImportError:
        extra = "gcp" if store == "gcs" else "aws"
        sdk = "google-cloud-storage" if store == "gcs" else "boto3"
        raise StorageError(
            f"reading {store} buckets needs {sdk}",
            f"pip install 'skyform[{extra}]' (or pip install {sdk}).",
        ) from None
