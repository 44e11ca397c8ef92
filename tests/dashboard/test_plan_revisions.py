"""/plans lists the plan revisions of managed jobs and services in one table, newest first,
from one read of the store's one revision table: a store an older skyform left (revisions of
both kinds in two tables) shows every one of them after the upgrade, each linking to its
owner's page (a managed job's to its plan)."""

from __future__ import annotations

import re

from revstore import MANAGED, SERVICE_REVISIONS, make_schema_8_store


def _rows(html: str) -> list[str]:
    table = re.search(r'<table class="revisions">(.*?)</table>', html, re.S)
    assert table is not None, html
    return re.findall(r"<tr>(.*?)</tr>", table[1].split("<tbody>", 1)[1], re.S)


def test_plans_lists_both_kinds_newest_first_in_one_table(dashboard, skyform_home):
    make_schema_8_store()
    status, html = dashboard().request("/plans")
    assert status == 200
    rows = _rows(html)
    assert len(rows) == len(MANAGED) + len(SERVICE_REVISIONS)
    # the services' revisions were made at 100 s and 160 s, the job's at 10.5 s .. 31.5 s
    assert 'href="/services/web">service web<' in rows[0] and ">preemption<" in rows[0]
    assert 'href="/services/web">service web<' in rows[1] and ">up<" in rows[1]
    for row, (number, reason, _, _) in zip(rows[2:], reversed(MANAGED), strict=True):
        assert f'href="/managed/1/revisions/{number}">{number}<' in row
        assert f">{reason}<" in row and ">managed job 1<" in row
    assert ">launch<" in rows[-1] and rows[2].count(">recovery<") == 1
