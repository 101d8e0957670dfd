"""Under `-n 2 --dist loadgroup` (pyproject.toml) a test marked `xdist_group` is scheduled as
part of its group: its node id carries `@group`, which is what pytest-xdist's scheduler groups
by (tests/conftest.py restores it with pytest >= 9.2, pytest-dev/pytest-xdist#1386). Without
it the browser tests ran two at once and the memo tests built their fixtures on both workers."""

from __future__ import annotations

import pytest


@pytest.mark.xdist_group("xdist-group-check")
def test_a_grouped_test_is_scheduled_with_its_group(request):
    grouped = bool(getattr(request.config.option, "loadgroup", False))  # set in an xdist worker of loadgroup
    assert request.node.nodeid.endswith("@xdist-group-check") == grouped, (request.node.nodeid, grouped)
