"""Flux.attr_get: brokerinfo's attribute table (the one `flux getattr` reads)."""

import errno

import pytest


def test_attr_get_reads_the_instance(pyflux, flux):
    h = pyflux.Flux()
    assert (h.attr_get("size"), h.attr_get("hostlist"), h.attr_get("rank")) == ("4", "node[0-3]", "0")
    assert h.get_size() == 4
    assert h.attr_get("local-uri") == f"local://{flux.state_dir}"
    assert h.attr_get("instance-level") == "0"
    with pytest.raises(OSError) as info:
        h.attr_get("no-such-attribute")
    assert info.value.errno == errno.ENOENT
