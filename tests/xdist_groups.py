"""``--dist loadgroup`` keeps each ``xdist_group`` whole on pytest 9.2 (a pytest plugin,
loaded by tests/conftest.py).

pytest-xdist 3.8 marks a grouped test by appending ``@group`` to ``item._nodeid``,
which pytest 9.2 no longer reads (a node's id is ``item._id``): every test was its own
unit, and the documented commands, which use what an earlier one wrote, ran half on
each worker (9 failures in the clean-clone run of stop 48). This hook runs after
xdist's and gives a grouped test whose id lacks the suffix the id xdist means it to
have. tests/core/test_parallel_groups.py checks it on two real workers.
"""

from __future__ import annotations

import pytest


def _group_suffix(item: pytest.Item) -> str:
    """``@name`` of an item's ``xdist_group`` marks (pytest-xdist's own spelling: the
    names sorted, joined by ``_``), "" when it has none."""
    names = {str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
             for mark in item.iter_markers("xdist_group")}
    return "@" + "_".join(sorted(names)) if names else ""


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup``, a grouped test's id ends in its group (see above)."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        suffix = _group_suffix(item)
        if not suffix or item.nodeid.endswith(suffix):
            continue
        wanted = item.nodeid + suffix
        if hasattr(item, "_id"):
            from _pytest.nodes import coerce_node_id
            item._id = coerce_node_id(wanted)
        else:
            item._nodeid = wanted
        assert item.nodeid == wanted, (item.nodeid, wanted)
