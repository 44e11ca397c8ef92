"""`skyform gpus` and `skyform catalog show` as a user runs them."""

from __future__ import annotations

import json

import yaml


def _rows(result) -> list[dict]:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _find(rows, **match):
    return [r for r in rows if all(r[k] == v for k, v in match.items())]


def test_a100_table_shows_the_readme_facts(cli):
    result = cli("gpus", "A100")
    assert result.exit_code == 0, result.output
    header = result.stdout.splitlines()[0].split()
    assert header == [
        "GPU",
        "QTY",
        "CLOUD",
        "INSTANCE_TYPE",
        "DEVICE_MEM",
        "vCPUs",
        "HOST_MEM",
        "HOURLY_PRICE",
        "HOURLY_SPOT_PRICE",
        "REGION",
    ]
    first = result.stdout.splitlines()[1].split()
    # cheapest A100 instance: a2-highgpu-1g in europe-west4 at $2.42771/h
    assert first[:4] == ["A100", "1", "gcp", "a2-highgpu-1g"]
    assert "2.42771" in first and first[-1] == "europe-west4"


def test_a100_all_regions_json_has_p4d_and_a2_prices(cli):
    rows = _rows(cli("gpus", "A100", "--all", "--json"))
    (p4d,) = _find(rows, instance_type="p4d.24xlarge", region="us-east-1")
    assert p4d["hourly_price"] == 21.957642 and p4d["count"] == 8
    assert p4d["hourly_spot_price"] == 2.4655  # cheapest AZ (use1-az1)
    (a2,) = _find(rows, instance_type="a2-highgpu-8g", region="us-central1")
    assert a2["hourly_price"] == 29.38708 and a2["hourly_spot_price"] == 14.4308
    assert (a2["vcpus"], a2["host_memory_gib"], a2["device_memory_gib"]) == (96, 680, 40)
    assert min(r["hourly_price"] for r in rows) == 2.42771


def test_count_filter_and_cloud_region_filters(cli):
    rows = _rows(cli("gpus", "a100:8", "--json"))
    assert {r["count"] for r in rows} == {8}
    assert {r["instance_type"] for r in rows} == {"a2-highgpu-8g", "p4d.24xlarge"}
    aws = _rows(cli("gpus", "A100:8", "--cloud", "aws", "--region", "us-east-1", "--json"))
    assert [(r["cloud"], r["region"], r["hourly_price"]) for r in aws] == [
        ("aws", "us-east-1", 21.957642)
    ]


def test_gcp_attachable_gpus_are_shown_on_a_default_n1_host_and_marked(cli):
    result = cli("gpus", "V100:1", "--cloud", "gcp")
    assert result.exit_code == 0, result.output
    assert "n1-highmem-8 *" in result.stdout
    assert "attaches this GPU to N1 machines" in result.stdout
    rows = _rows(cli("gpus", "V100:1", "--cloud", "gcp", "--json"))
    assert all(r["attachable"] and r["vcpus"] >= 8 for r in rows)


def test_unknown_name_suggests_close_matches(cli):
    result = cli("gpus", "A1000")
    assert result.exit_code == 1
    assert "Unknown accelerator 'A1000'" in result.stderr
    assert "Did you mean: A100" in result.stderr


def test_known_name_without_offers_says_where_it_exists(cli):
    result = cli("gpus", "A10")
    assert result.exit_code == 4
    assert "Azure, Lambda, OCI" in result.stderr


def test_bad_count_is_a_clear_error(cli):
    result = cli("gpus", "A100:lots")
    assert result.exit_code == 1 and "positive number" in result.stderr


def test_summary_lists_names_and_counts_per_cloud(cli, skyform_home):
    (skyform_home / "config.yaml").write_text(
        yaml.safe_dump(
            {"ssh_pools": {"lab": {"hosts": [{"host": "h1", "accelerators": {"RTX4090": 2}}]}}}
        )
    )
    rows = _rows(cli("gpus", "--json"))
    assert {"accelerator": "A100", "cloud": "gcp", "counts": [1, 2, 4, 8, 16]} in rows
    assert {"accelerator": "L4", "cloud": "aws", "counts": [0.25, 1, 4, 8]} in rows
    assert {"accelerator": "RTX4090", "cloud": "ssh", "counts": [2]} in rows
    assert any(r["accelerator"] == "tpu-v5p" for r in rows)
    text = cli("gpus")
    assert text.exit_code == 0 and "AVAILABLE_QUANTITIES" in text.stdout


def test_catalog_show_reports_the_bundled_catalog(cli):
    status = _rows(cli("catalog", "show", "--json"))
    assert status["kind"] == "bundled"
    assert status["rows"] == {"aws_vms": 1152, "gcp_vms": 6889}
    assert status["offers"]["aws"] == 2278
    assert len(status["digest"]) == 64
    text = cli("catalog", "show")
    assert text.exit_code == 0 and "Catalog in use: bundled" in text.stdout
