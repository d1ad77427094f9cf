import copy, json
from hypothesis import given, settings, HealthCheck
from hypothesis import strategies as st
from flux_lite.errors import JobspecError, FormatError
from flux_lite.formats import jobspec as J
from flux_lite.formats.outputformat import OutputFormat
import tests.test_jobspec as T

@settings(max_examples=4000, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(st.text(max_size=80), st.text(alphabet="{}[]:,-\n \"'&*!|>%@`#?0123456789.abcxyz", max_size=80), st.binary(max_size=40)))
def test_text(text):
    try: J.loads(text, strict=True)
    except JobspecError: pass

@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from(["resources","tasks","attributes","version"]), st.lists(st.sampled_from([0,"with","count","type","system","duration","command","label","slot","exec","test","run_duration","shell","options","per-resource"]), max_size=4), T.json_values), max_size=3), st.booleans())
def test_deep(muts, strict):
    js = T.slot_js()
    for key, path, value in muts:
        obj = js
        try:
            cur = obj[key]
            for p in path[:-1] if path else []:
                cur = cur[p]
            if path: cur[path[-1]] = value
            else: js[key] = value
        except (KeyError, IndexError, TypeError): continue
    for f in (lambda j: J.validate(j, strict=strict), J.resource_request, J.ntasks, J.ncores, J.nnodes_requested, J.run_duration, J.name, J.duration):
        try: f(copy.deepcopy(js))
        except JobspecError: pass

@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.text(alphabet="{}:!<>^.?+ahdFHPD0123456789sx=,-%T*#_rs", max_size=40), st.lists(st.dictionaries(st.sampled_from("ahds"), T.json_values, max_size=4), max_size=3))
def test_fmt(text, items):
    try: f = OutputFormat(text, {"a":"A","h":"H","d":"D","s":"S"})
    except FormatError: return
    try: f.lines(items)
    except FormatError: pass
