"""flux.job's values: JobID, Jobspec/JobspecV1, validate_jobspec, _utils (flux-lite's `flux` package)."""

import errno

import pytest

from flux_lite import bindings


@pytest.fixture
def job(monkeypatch):
    """flux.job as `flux python` imports it (no instance needed for values)."""
    monkeypatch.syspath_prepend(str(bindings.PATH))
    monkeypatch.setenv("FLUX_F58_FORCE_ASCII", "1")
    import flux.job

    assert flux.job.__file__.startswith(str(bindings.PATH))
    return flux.job


# -- JobID -------------------------------------------------------------------------------------------------


def test_jobid_from_every_encoding(job):
    forms = ["6787342413402046", "0x181d0d4d850fbe", "0018.1d0d.4d85.0fbe", "job.0018.1d0d.4d85.0fbe",
             "fuzzybunny", "ƒuzzybunny", "cake-plume-nepal--neuron-pencil-academy", "👴😱🔚🎮🕙🚩"]
    for form in forms:
        jobid = job.JobID(form)
        assert jobid == 6787342413402046 and isinstance(jobid, int)
        assert jobid.orig == form
        assert repr(jobid) == "JobID(6787342413402046)"
    jobid = job.JobID(6787342413402046)
    assert (jobid.dec, jobid.hex, jobid.dothex, jobid.kvs) == (
        "6787342413402046", "0x181d0d4d850fbe", "0018.1d0d.4d85.0fbe", "job.0018.1d0d.4d85.0fbe")
    assert (jobid.f58, jobid.f58plain, str(jobid)) == ("fuzzybunny", "fuzzybunny", "fuzzybunny")
    assert jobid.words == "cake-plume-nepal--neuron-pencil-academy"
    assert jobid.emoji == "👴😱🔚🎮🕙🚩"
    assert job.JobID(job.JobID("0x10")).orig == "0x10"


def test_jobid_utf8_prefix(job, monkeypatch):
    monkeypatch.delenv("FLUX_F58_FORCE_ASCII")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    assert str(job.JobID(1)) == "ƒ2"
    assert job.JobID(1).f58plain == "f2"


@pytest.mark.parametrize("bad", ["invalid", "-1", "0.0.0", "job.0.0", "fO", "foo-bar-baz--qux-quux-corge", "🦄", ""])
def test_jobid_invalid_is_valueerror(job, bad):
    with pytest.raises(ValueError, match="is not a valid Flux jobid"):
        job.JobID(bad)


def test_id_parse_and_encode_errors(job):
    assert job.id_parse("ƒ2") == 1
    assert job.id_encode(65535, "emoji") == "💁📚"
    assert job.id_encode(1) == "f2"
    with pytest.raises(OSError) as exc:
        job.id_parse("bogus")
    assert exc.value.errno == errno.EINVAL
    with pytest.raises(OSError) as exc:
        job.id_encode(1, "roman")
    assert exc.value.errno == errno.EPROTO


def test_ffi_null_is_a_falsy_sentinel(job):
    assert not job.ffi.NULL
    assert job.ffi.NULL is job.ffi.NULL and job.ffi.NULL != 0
