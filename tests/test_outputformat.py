"""Tests for flux_lite.formats.outputformat against real Flux transcripts."""


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flux_lite.errors import FormatError
from flux_lite.formats.outputformat import (
    OutputFormat,
    empty_outputs,
    fsd,
    list_formats_help,
    render,
    resolve_format,
)

JOBS_HEADINGS = {
    "id": "JOBID",
    "id.f58": "JOBID",
    "id.dec": "JOBID",
    "id.hex": "JOBID",
    "queue": "QUEUE",
    "username": "USER",
    "name": "NAME",
    "status_abbrev": "ST",
    "ntasks": "NTASKS",
    "nnodes": "NNODES",
    "contextual_time": "TIME",
    "contextual_info": "INFO",
    "state": "STATE",
    "status": "STATUS",
    "result": "RESULT",
    "ranks": "RANKS",
    "duration": "DURATION",
    "expiration": "EXPIRATION",
    "t_remaining": "T_REMAINING",
    "urgency": "URG",
    "priority": "PRI",
    "returncode": "RC",
    "exception.type": "EXCEPTION-TYPE",
    "exception.note": "EXCEPTION-NOTE",
    "annotations.sched.t_estimate": "T_ESTIMATE",
}

JOBS_DEFAULT = (
    "{id.f58:>12} ?:{queue:<8.8} +:{username:<8} {name:<10.10+} "
    "{status_abbrev:>2.2} {ntasks:>6} {nnodes:>6h} "
    "{contextual_time!F:>8h} {contextual_info}"
)

HK_HEADINGS = {
    "id": "JOBID",
    "id.dec": "JOBID",
    "id.hex": "JOBID",
    "id.f58": "JOBID",
    "t_start": "T_START",
    "runtime": "RUNTIME",
    "ranks": "RANKS",
    "nodelist": "NODELIST",
    "nnodes": "NNODES",
    "allocated.ranks": "RANKS",
    "allocated.nodelist": "NODELIST",
    "allocated.nnodes": "NNODES",
    "pending.ranks": "ACTIVE_RANKS",
    "pending.nodelist": "ACTIVE_NODES",
    "pending.nnodes": "#ACTIVE",
}
HK_FORMATS = {
    "default": (
        "Default flux-housekeeping format string",
        "{id.f58:>12} {nnodes:>6} {pending.nnodes:>7} {runtime!F:>8} {nodelist}",
    ),
    "pending": (
        "flux-housekeeping format string including active nodes only",
        "{id.f58:>12} {pending.nnodes:>7} {runtime!F:>8} {pending.nodelist}",
    ),
}


class FakeID(int):
    """Stands in for a job id object: str() is the f58 form."""

    def __new__(cls, value, f58):
        obj = super().__new__(cls, value)
        obj.f58 = f58
        return obj

    @property
    def dec(self):
        return int(self)

    @property
    def hex(self):
        return "0x%x" % int(self)

    def __str__(self):
        return self.f58

    def __format__(self, spec):
        return format(str(self), spec)


class Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def job(f58, name, st, ntasks, nnodes, ctime, info, user="root", queue=""):
    return {
        "id": Obj(f58=f58),
        "queue": queue,
        "username": user,
        "name": name,
        "status_abbrev": st,
        "ntasks": ntasks,
        "nnodes": nnodes,
        "contextual_time": ctime,
        "contextual_info": info,
    }


# -- flux jobs --------------------------------------------------------------


def test_jobs_default_no_jobs():
    # Flux 0.88: `flux jobs -a` with no jobs
    assert render(JOBS_DEFAULT, JOBS_HEADINGS, []) == [
        "       JOBID USER     NAME       ST NTASKS NNODES     TIME INFO"
    ]
    # `flux jobs -a -n`: nothing at all
    assert render(JOBS_DEFAULT, JOBS_HEADINGS, [], no_header=True) == []


def test_jobs_default_running():
    items = [job("ƒYpmarK", "hostname", "R", 1, 1, 0.152, "vm")]
    assert render(JOBS_DEFAULT, JOBS_HEADINGS, items) == [
        "       JOBID USER     NAME       ST NTASKS NNODES     TIME INFO",
        "     ƒYpmarK root     hostname    R      1      1   0.152s vm",
    ]


def test_jobs_default_inactive():
    items = [
        job("ƒ2AFaRSF", "hostname", "CD", 4, 4, 0.067, "vm,vm,vm,vm"),
        job("ƒugXUoh", "hostname", "CD", 1, 1, 0.202, "vm"),
        job("ƒYpmarK", "hostname", "CA", 1, 1, 0.636, "vm"),
    ]
    assert render(JOBS_DEFAULT, JOBS_HEADINGS, items) == [
        "       JOBID USER     NAME       ST NTASKS NNODES     TIME INFO",
        "    ƒ2AFaRSF root     hostname   CD      4      4   0.067s vm,vm,vm,vm",
        "     ƒugXUoh root     hostname   CD      1      1   0.202s vm",
        "     ƒYpmarK root     hostname   CA      1      1   0.636s vm",
    ]


def test_jobs_default_pending_held_eta():
    # Flux 0.88, guest view of `flux jobs -a`
    items = [
        job("ƒ2Yx5RgT", "true", "S", 1, 1, 300.0, "eta:29.89m"),
        job("ƒ2cDqqkb", "true", "S", 1, 1, 1800.0, "held"),
        job("ƒ2fSeHG3", "true", "S", 1, 1, 600.0, "held"),
        job("ƒ2V7hHQj", "true", "R", 4, 4, 6.363, "vm,vm,vm,vm"),
        job("ƒ2RVB3Pm", "true", "F", 1, 1, 0.002, "vm"),
    ]
    assert render(JOBS_DEFAULT, JOBS_HEADINGS, items, no_header=True) == [
        "    ƒ2Yx5RgT root     true        S      1      1       5m eta:29.89m",
        "    ƒ2cDqqkb root     true        S      1      1      30m held",
        "    ƒ2fSeHG3 root     true        S      1      1      10m held",
        "    ƒ2V7hHQj root     true        R      4      4   6.363s vm,vm,vm,vm",
        "    ƒ2RVB3Pm root     true        F      1      1   0.002s vm",
    ]


def test_jobs_h_suffix_and_truncation_and_queue_column():
    items = [
        job("ƒA", "averyveryverylongname", "S", 1, "", 0.0, "", user="someverylonguser",
            queue="batch"),
    ]
    lines = render(JOBS_DEFAULT, JOBS_HEADINGS, items)
    assert lines[0] == (
        "       JOBID QUEUE    USER             NAME       ST NTASKS NNODES     TIME INFO"
    )
    assert lines[1] == (
        "          ƒA batch    someverylonguser averyvery+  S      1      -        - "
    )


def test_jobs_custom_formats(utc):
    fmt = "{id.f58} {state} {status} {nnodes} {ranks} {duration} {expiration!d:%FT%T}"
    item = {
        "id": Obj(f58="ƒYpmarK"),
        "state": "RUN",
        "status": "RUN",
        "nnodes": 1,
        "ranks": "0",
        "duration": 300.0,
        "expiration": 1795978344.3859792,
    }
    assert render(fmt, JOBS_HEADINGS, [item]) == [
        "JOBID STATE STATUS NNODES RANKS DURATION EXPIRATION",
        "ƒYpmarK RUN RUN 1 0 300.0 2026-11-29T18:52:24",
    ]
    fmt = "{id.f58} {state} {duration} {expiration} {t_remaining}"
    item = {
        "id": Obj(f58="ƒ2V7hHQj"),
        "state": "RUN",
        "duration": 840.0,
        "expiration": 1795978886.5141609,
        "t_remaining": 834.3889679908752,
    }
    assert render(fmt, JOBS_HEADINGS, [item]) == [
        "JOBID STATE DURATION EXPIRATION T_REMAINING",
        "ƒ2V7hHQj RUN 840.0 1795978886.5141609 834.3889679908752",
    ]


def test_jobs_exception_fields_trailing_space():
    fmt = "{id.f58} {state} {result} {status} {returncode} {exception.type} {exception.note}"
    items = [
        {"id": {"f58": "ƒugXUoh"}, "state": "INACTIVE", "result": "COMPLETED",
         "status": "COMPLETED", "returncode": 0, "exception": {}},
        {"id": {"f58": "ƒYpmarK"}, "state": "INACTIVE", "result": "CANCELED",
         "status": "CANCELED", "returncode": -15,
         "exception": {"type": "cancel", "note": ""}},
    ]
    assert render(fmt, JOBS_HEADINGS, items) == [
        "JOBID STATE RESULT STATUS RC EXCEPTION-TYPE EXCEPTION-NOTE",
        "ƒugXUoh INACTIVE COMPLETED COMPLETED 0  ",
        "ƒYpmarK INACTIVE CANCELED CANCELED -15 cancel ",
    ]


def test_duration_F():
    fmt = "{id.f58} {state} {duration} {duration!F} {status}"
    item = {"id": {"f58": "ƒ2Yx5RgT"}, "state": "SCHED", "duration": 120.0,
            "status": "SCHED"}
    assert render(fmt, JOBS_HEADINGS, [item]) == [
        "JOBID STATE DURATION DURATION STATUS",
        "ƒ2Yx5RgT SCHED 120.0 2m SCHED",
    ]


def test_urgency_priority_headings():
    out = OutputFormat("{id.f58} {state} {urgency} {priority} {duration} {status}",
                       JOBS_HEADINGS)
    assert out.header() == "JOBID STATE URG PRI DURATION STATUS"


# -- flux housekeeping --------------------------------------------------------


def hk_item():
    return {
        "id": FakeID(28370272256, "ƒkDz4Y7"),
        "t_start": 1795978980.038052,
        "runtime": 1.098602294921875,
        "ranks": "3",
        "nodelist": "vm",
        "nnodes": 1,
        "allocated": {"ranks": "3", "nodelist": "vm", "nnodes": 1},
        "pending": {"ranks": "3", "nodelist": "vm", "nnodes": 1},
    }


def test_housekeeping_formats():
    item = hk_item()
    item["runtime"] = 0.692
    assert render(HK_FORMATS["default"][1], HK_HEADINGS, [item]) == [
        "       JOBID NNODES #ACTIVE  RUNTIME NODELIST",
        "     ƒkDz4Y7      1       1   0.692s vm",
    ]
    item["runtime"] = 0.894
    assert render(HK_FORMATS["pending"][1], HK_HEADINGS, [item]) == [
        "       JOBID #ACTIVE  RUNTIME ACTIVE_NODES",
        "     ƒkDz4Y7       1   0.894s vm",
    ]
    assert render(HK_FORMATS["default"][1], HK_HEADINGS, []) == [
        "       JOBID NNODES #ACTIVE  RUNTIME NODELIST"
    ]


def test_housekeeping_conversions_and_id_fields():
    fmt = ("{id} | {id.f58} | {id.dec} | {id.hex} | {t_start} | {runtime} | "
           "{runtime!F} | {runtime!H}")
    assert render(fmt, HK_HEADINGS, [hk_item()]) == [
        "JOBID | JOBID | JOBID | JOBID | T_START | RUNTIME | RUNTIME | RUNTIME",
        "ƒkDz4Y7 | ƒkDz4Y7 | 28370272256 | 0x69b000000 | 1795978980.038052 | "
        "1.098602294921875 | 1.099s | 0:00:01",
    ]


def test_housekeeping_dotted_headings():
    fmt = ("{id.f58} pending.ranks={pending.ranks} pending.nnodes={pending.nnodes} "
           "pending.nodelist={pending.nodelist}")
    assert render(fmt, HK_HEADINGS, [hk_item()]) == [
        "JOBID pending.ranks=ACTIVE_RANKS pending.nnodes=#ACTIVE "
        "pending.nodelist=ACTIVE_NODES",
        "ƒkDz4Y7 pending.ranks=3 pending.nnodes=1 pending.nodelist=vm",
    ]
    assert render("{pending.ranks}", HK_HEADINGS, [hk_item()], no_header=True) == ["3"]


def test_format_errors():
    with pytest.raises(FormatError, match=r"^Unknown format field: foo$"):
        OutputFormat("{foo}", HK_HEADINGS)
    with pytest.raises(FormatError, match=r"^expected '}' before end of string$"):
        OutputFormat("{id.f58", HK_HEADINGS)
    with pytest.raises(FormatError, match="Single '}'"):
        OutputFormat("}", HK_HEADINGS)


def test_unsupported_spec_on_object():
    class IDset:
        def __str__(self):
            return "3"

    fmt = OutputFormat("{id.f58:>12} {allocated.ranks:>6}", HK_HEADINGS)
    item = hk_item()
    item["allocated"]["ranks"] = IDset()
    with pytest.raises(FormatError, match="unsupported format string passed to IDset.__format__"):
        fmt.format(item)


def test_help_text():
    assert list_formats_help(HK_FORMATS, "flux-housekeeping") == (
        "\n"
        "Configured flux-housekeeping output formats:\n"
        "\n"
        "  default      Default flux-housekeeping format string\n"
        "  pending      flux-housekeeping format string including active nodes only\n"
    )
    dict_style = {"x": {"description": "d", "format": "{id}"}, "y": {"format": "{id}"}}
    assert list_formats_help(dict_style, "p") == (
        "\nConfigured p output formats:\n\n  x            d\n  y           \n"
    )


def test_resolve_format():
    assert resolve_format(HK_FORMATS, "{id}") == "{id}"
    assert resolve_format(HK_FORMATS, "pending") == HK_FORMATS["pending"][1]
    with pytest.raises(FormatError) as exc:
        resolve_format(HK_FORMATS, "foo")
    assert str(exc.value) == "--format: No such format foo (Did you mean '{foo}'?)"
    env = {"FLUX_HOUSEKEEPING_FORMAT_DEFAULT": "{id.f58}"}
    assert resolve_format(HK_FORMATS, "default", "flux-housekeeping", env) == "{id.f58}"
    env = {"FLUX_HOUSEKEEPING_FORMAT_DEFAULT": "pending"}
    assert (resolve_format(HK_FORMATS, "default", "flux-housekeeping", env)
            == HK_FORMATS["pending"][1])


# -- flux resource list -------------------------------------------------------

RES_HEADINGS = {
    "state": "STATE",
    "queue": "QUEUE",
    "propertiesx": "PROPERTIES",
    "nnodes": "NNODES",
    "ncores": "NCORES",
    "ngpus": "NGPUS",
    "nodelist": "NODELIST",
}
RES_DEFAULT = (
    "{state:>10} ?+:{queue:<5} ?:{propertiesx:<10.10+} {nnodes:>6} "
    "+:{ncores:>6} ?+:{ngpus:>5} {nodelist}"
)


def res(state, nnodes, ncores, nodelist):
    return {"state": state, "queue": "", "propertiesx": "", "nnodes": nnodes,
            "ncores": ncores, "ngpus": 0, "nodelist": nodelist}


def test_resource_list_keeps_trailing_space():
    items = [res("free", 3, 6, "vm,vm,vm"), res("allocated", 1, 2, "vm"),
             res("down", 0, 0, "")]
    assert render(RES_DEFAULT, RES_HEADINGS, items) == [
        "     STATE NNODES NCORES NGPUS NODELIST",
        "      free      3      6     0 vm,vm,vm",
        " allocated      1      2     0 vm",
        "      down      0      0     0 ",
    ]


def test_resource_list_queue_widened():
    items = [dict(res("free", 4, 8, "vm,vm,vm,vm"), queue="debugging")]
    assert render(RES_DEFAULT, RES_HEADINGS, items) == [
        "     STATE QUEUE     NNODES NCORES NGPUS NODELIST",
        "      free debugging      4      8     0 vm,vm,vm,vm",
    ]


# -- conversions and details --------------------------------------------------


@pytest.mark.parametrize(
    "secs,text",
    [
        (0.0, "0s"),
        (0.0009, "0s"),
        (0.152, "0.152s"),
        (1.098602294921875, "1.099s"),
        (10.0, "10s"),
        (59.99, "59.99s"),
        (120.0, "2m"),
        (1793.4, "29.89m"),
        (3600.0, "1h"),
        (5400.0, "1.5h"),
        (86400.0, "1d"),
        (float("inf"), "inf"),
    ],
)
def test_fsd(secs, text):
    assert fsd(secs) == text


def test_conversions(utc):
    headings = {"v": "V", "w": "W"}
    fmt = OutputFormat("{v!H}|{v!D}|{v!P}|{v!F:>6h}|{v!d:%FT%T::>5h}|{v!D:>5h}", headings)
    assert fmt.format({"v": 0}) == "0:00:00||0%|     -|    -|    -"
    assert fmt.format({"v": 0.5}) == (
        "0:00:01|1970-01-01T00:00:00|50%|0.500s|1970-01-01T00:00:00|    -"
    )  # the epoch string counts as empty for h
    assert fmt.format({"v": 0.005}) == (
        "0:00:01|1970-01-01T00:00:00|0.50%|0.005s|1970-01-01T00:00:00|    -"
    )
    # missing values print empty (or '-' with h)
    assert fmt.format({}) == "|||     -|    -|    -"
    assert OutputFormat("{v!d:%b%d %R::>12}", headings).format({"v": 1795978044.3}) == (
        " Nov29 18:47"
    )
    assert OutputFormat("{v!d:%b%d %R::>12h}", headings).format({"v": 0}) == (
        "           -"
    )
    assert OutputFormat("{v!d}", headings).format({"v": 1795978044.3}) == "2026-11-29T18:47:24"
    with pytest.raises(FormatError):
        OutputFormat("{v!F}", headings).format({"v": "abc"})
    with pytest.raises(FormatError, match="Unknown conversion specifier x"):
        OutputFormat("{v!x}", headings).format({"v": 1})


def test_h_suffix_values():
    fmt = OutputFormat("{v:>3h}", {"v": "V"})
    assert fmt.format({"v": ""}) == "  -"
    assert fmt.format({"v": 0.0}) == "  -"
    assert fmt.format({"v": None}) == "  -"
    assert fmt.format({"v": 0}) == "  0"  # integer zero is not "empty" in Flux
    assert fmt.format({"v": 5}) == "  5"


def test_truncation_marker():
    fmt = OutputFormat("{v:<5.5+}|", {"v": "V"})
    assert fmt.format({"v": "abcdefgh"}) == "abcd+|"
    assert fmt.format({"v": "abcde"}) == "abcde|"
    assert fmt.format({"v": "ab"}) == "ab   |"


def test_header_keeps_only_align_and_width():
    fmt = OutputFormat("{a:*^9.2f} {b!F:>8h} {c:%FT%T} x{{y}}", {"a": "A", "b": "B", "c": "C"})
    assert fmt.header() == "    A            B C x{y}"


def test_sentinel_text_removed_everywhere_when_filtering():
    headings = {"a": "A", "b": "B"}
    lines = render("x?:y {a} ?:{b}", headings, [{"a": 1, "b": ""}])
    assert lines == ["xy A", "xy 1"]
    # no sentinel field: the format is left alone
    assert render("x?:y {a}", headings, [{"a": 1}]) == ["x?:y A", "x?:y 1"]


def test_filter_returns_new_format_and_keeps_original():
    headings = {"a": "A", "b": "B"}
    fmt = OutputFormat("?:{a:>3} +:{b:<2}", headings)
    new = fmt.filter([{"a": "", "b": "long"}])
    assert new.get_format() == " {b:<4}"
    assert fmt.get_format() == "?:{a:>3} +:{b:<2}"
    new = fmt.filter([{"a": "x", "b": "long"}], no_header=True)
    assert new.get_format() == "{a:>3} {b:<4}"
    # precision is widened along with the width for strings
    assert OutputFormat("+:{b:<2.2}", headings).filter([{"b": "long"}]).get_format() == "{b:<4.4}"


def test_blank_lines_skipped():
    assert render("{a}", {"a": "A"}, [{"a": ""}, {"a": "x"}, {"a": "  "}]) == ["A", "x"]


def test_width_cut():
    assert render("{a}", {"a": "A"}, [{"a": "abcdefgh"}], width=5) == ["A", "abcd+"]


def test_sort_prefix():
    headings = {"a": "A", "b": "B"}
    fmt = OutputFormat("sort:-a,b {a} {b}", headings)
    assert fmt.sort_keys == [("a", True), ("b", False)]
    assert fmt.get_format() == "{a} {b}"
    assert fmt.get_format(include_sort_prefix=True) == "sort:-a,b {a} {b}"
    items = [{"a": 1, "b": "y"}, {"a": 2, "b": "z"}, {"a": 1, "b": "x"}, {"a": "", "b": "w"}]
    assert fmt.lines(items, no_header=True) == ["2 z", "1 x", "1 y", " w"]
    assert "a" in fmt.fields and "b" in fmt.fields
    with pytest.raises(FormatError, match="Invalid sort key: c"):
        OutputFormat("sort:c {a}", headings)


def test_object_attributes_and_fallback_heading():
    headings = {"x.y": "XY"}

    def fallback(field):
        if field.startswith("annotations."):
            return field[len("annotations."):].upper()
        return None

    fmt = OutputFormat("{x.y} {annotations.sched.reason_pending}", headings,
                       heading_fallback=fallback)
    assert fmt.header() == "XY SCHED.REASON_PENDING"
    item = Obj(x=Obj(y=3), annotations={"sched": {"reason_pending": "no"}})
    assert fmt.format(item) == "3 no"
    assert fmt.format(Obj(x=None, annotations={})) == " "


def test_prepend():
    fmt = OutputFormat("{name}", {"name": "NAME"}, prepend="job.")
    assert fmt.format({"job": {"name": "n"}}) == "n"


def test_empty_outputs():
    assert "" in empty_outputs() and "0s" in empty_outputs()


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="{}:!<>^.?+ahdFHPD0123456789sx", max_size=30))
def test_garbage_formats_only_raise_format_error(text):
    headings = {"a": "A", "h": "H", "d": "D", "s": "S"}
    try:
        fmt = OutputFormat(text, headings)
    except FormatError:
        return
    try:
        fmt.lines([{"a": 1.5, "h": "", "d": 0, "s": "str"}, {}])
    except FormatError:
        pass


def test_dedup_format_drops_combined_fields_and_bares_expanded_ones():
    # as Flux's OutputFormat.copy(except_fields=..., nullify_expansion=True)
    fmt = OutputFormat("{state:>12} {ranks:>6} +:{reason:<5.5+} at {nodelist} ?:{timestamp}",
                       {"state": "S", "ranks": "R", "reason": "W", "nodelist": "N", "timestamp": "T"})
    assert fmt.dedup_format(("ranks", "nodelist")).fmt == "{state:>12}{reason} at  ?:{timestamp}"
    assert fmt.dedup_format(()).fmt == "{state:>12} {ranks:>6}{reason} at {nodelist} ?:{timestamp}"
