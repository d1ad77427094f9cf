"""The common-shape classifier (formats.jj.common_shape) against the general paths.

Every reader that takes a fast path through the classifier -- validation,
the jj counts and job-list's columns, the scheduler's request parser -- must
answer on random jobspecs exactly what its general path answers (the same
value, or the same error). The jobspecs are drawn near the common shape
(``[node->]slot->core[,gpu]``, one task) with values, keys and vertices
changed now and then, so that both sides of every check are reached.
"""

import copy
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flux_lite.formats import jj
from flux_lite.formats import jobspec as J
from flux_lite.formats import jobspec_validate as V
from flux_lite.job_manager import index
from flux_lite.sched import request as R

ODD = [None, True, False, 0, -1, 1.0, 2.5, -0.0, float("nan"), float("inf"), 2**63 - 1, 2**63, 10**400,
       "", "2", "1-3", "node", "slot", "core", [], [1], {}, {"min": 1, "max": 2}]


RATE = 16  # one value in RATE is odd; one dict in RATE loses a key, one gains one


def maybe(valid, odd=ODD):
    """Mostly a valid value, sometimes an odd one."""
    return st.sampled_from(range(RATE)).flatmap(lambda i: st.sampled_from(odd) if i == RATE - 1 else valid)


def pick(valid, *others):
    """valid mostly, sometimes one of the other strategies."""
    return st.sampled_from(range(RATE)).flatmap(lambda i: st.one_of(*others) if i == RATE - 1 else valid)


def with_extra(strategy, keys):
    """A dict from strategy, sometimes with one key dropped or one added."""
    @st.composite
    def build(draw):
        d = draw(strategy)
        what = draw(st.sampled_from(range(RATE)))
        if what == RATE - 1 and d:
            del d[draw(st.sampled_from(sorted(d)))]
        elif what == RATE - 2:
            d[draw(st.sampled_from(keys))] = draw(st.sampled_from(ODD))
        return d
    return build()


counts = maybe(st.integers(1, 6))
vertex_keys = ["exclusive", "label", "unit", "id", "with", "count", "type", "x"]


def leaf(rtype):
    return with_extra(st.fixed_dictionaries({"type": maybe(st.just(rtype)), "count": counts}), vertex_keys)


slot_children = pick(st.one_of(st.tuples(leaf("core")), st.tuples(leaf("core"), leaf("gpu"))),
                     st.tuples(leaf("gpu"), leaf("core")), st.tuples(leaf("core"), leaf("core")), st.tuples(),
                     st.tuples(leaf("gpu"))).map(list)


def slot_vertex():
    base = st.fixed_dictionaries({"type": maybe(st.just("slot")), "count": counts, "with": slot_children,
                                  "label": maybe(st.just("task"))},
                                 optional={"exclusive": maybe(st.booleans())})
    return with_extra(base, vertex_keys)


def node_vertex():
    base = st.fixed_dictionaries({"type": maybe(st.just("node")), "count": counts,
                                  "with": pick(st.lists(slot_vertex(), min_size=1, max_size=1),
                                               st.lists(slot_vertex(), max_size=2))},
                                 optional={"exclusive": maybe(st.booleans())})
    return with_extra(base, vertex_keys)


resources = pick(st.one_of(st.lists(slot_vertex(), min_size=1, max_size=1),
                           st.lists(node_vertex(), min_size=1, max_size=1)),
                 st.lists(st.one_of(slot_vertex(), node_vertex(), leaf("core")), max_size=2))

task_count = pick(st.one_of(st.just({"per_slot": 1}), st.builds(lambda n: {"total": n}, counts)),
                  st.builds(lambda n: {"per_slot": n}, counts), st.just({"per_resource": 1}), st.just({}),
                  st.just({"per_slot": 1, "total": 2}))
task = with_extra(st.fixed_dictionaries(
    {"command": pick(st.lists(maybe(st.text(max_size=3), [1, None]), min_size=1, max_size=2), st.just([])),
     "slot": maybe(st.just("task")), "count": maybe(task_count)},
    optional={"attributes": maybe(st.just({}))}), ["attributes", "x", "slot"])
tasks = pick(st.lists(task, min_size=1, max_size=1), st.lists(task, max_size=2))

durations = pick(st.one_of(st.integers(0, 3600), st.floats(0, 1e9)), st.sampled_from(ODD + [2**64, 1e308]))
system_extra = {
    "constraints": st.sampled_from([{}, {"properties": ["a"]}, {"properties": [1]}, {"bogus": []}, "x", None]),
    "dependencies": st.sampled_from([[], [{"scheme": "afterok", "value": "f1"}], [{"scheme": 1}], "x"]),
    "shell": st.sampled_from([{}, {"options": {"per-resource": {"type": "core", "count": 2}}},
                              {"options": {"per-resource": {"type": "node"}}}, {"options": {"cpu-affinity": "on"}},
                              "x"]),
    "job": st.just({"name": "n"}),
    "queue": st.sampled_from(["q", 1]),
}
system = with_extra(st.fixed_dictionaries({"duration": durations}, optional=system_extra), ["x", "duration"])
attributes = with_extra(st.fixed_dictionaries({"system": maybe(system)}, optional={"user": st.just({"a": 1})}),
                        ["x", "system", "user"])
jobspecs = with_extra(st.fixed_dictionaries({
    "resources": maybe(resources), "tasks": maybe(tasks), "attributes": maybe(attributes),
    "version": maybe(st.just(1), [1.0, True, 2, "1", None])}), ["x", "version"])


def outcome(fn, js):
    """fn(js)'s value, or its error (type and message); NaN made comparable."""
    try:
        value = fn(js)
    except Exception as exc:
        return ("error", type(exc).__name__, str(exc))
    if isinstance(value, R.ResourceRequest):
        value = value.as_dict()
    if isinstance(value, dict):
        value = {k: (type(v).__name__, "nan" if isinstance(v, float) and math.isnan(v) else v)
                 for k, v in value.items()}
    return ("ok", value)


def without_classifier(monkeypatch, fn, js):
    with monkeypatch.context() as m:
        for module, name in ((jj, "common_shape"), (jj, "job_shape"), (V, "common_shape"), (R, "job_shape")):
            m.setattr(module, name, lambda js: None)
        return outcome(fn, js)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(jobspecs)
def test_each_fast_path_answers_what_its_general_path_answers(monkeypatch, js):
    shape = jj.common_shape(js)  # (never raises: an error fails the test)
    # validation
    assert outcome(V.validate, js) == without_classifier(monkeypatch, V.validate, js)
    # the jj counts and job-list's columns
    for fn in (jj.get_counts, jj.ntasks, jj.ncores, jj.nnodes_requested, index._jobspec_fields_of):
        assert outcome(fn, js) == without_classifier(monkeypatch, fn, js), fn
    # the scheduler's request
    request = outcome(R.request_from_jobspec, js)
    assert request == without_classifier(monkeypatch, R.request_from_jobspec, js) == outcome(R.read_request, js)
    if shape is not None:
        assert request[0] == "ok"
        assert shape.system is js["attributes"]["system"]
        # valid by the whole check, but for dependencies and constraints (not read)
        system = {k: v for k, v in shape.system.items() if k not in ("dependencies", "constraints")}
        plain = dict(js, attributes=dict(js["attributes"], system=system))
        assert without_classifier(monkeypatch, V.validate, plain) == ("ok", None)


def test_the_strategy_draws_common_shapes_often():
    found = []

    @settings(max_examples=400, deadline=None, database=None)
    @given(jobspecs)
    def draw(js):
        found.append(jj.common_shape(js) is not None)

    draw()
    assert 0.1 * len(found) < sum(found) < 0.9 * len(found)


# -- every single change of a common jobspec ----------------------------------------


def _bases():
    slot = J.build(["a"], ntasks=3, cores_per_task=2, duration=60, check=False)
    gpus = J.build(["a", "b"], ntasks=2, gpus_per_task=1, check=False)
    nodes = J.build(["a"], nnodes=2, ntasks=4, gpus_per_task=2, exclusive=True, check=False)
    shared = J.build(["a"], nnodes=2, ntasks=4, check=False)
    shared["resources"][0]["exclusive"] = False
    total = J.build(["a"], ntasks=3, check=False)
    total["tasks"][0]["count"] = {"total": 5}
    extras = J.build(["a"], ntasks=2, name="n", queue="q", constraints={"properties": ["x"]},
                     setattrs=[("user.u", 1), ("exec.test.run_duration", "5s")], check=False)
    extras["tasks"][0]["attributes"] = {}
    extras["resources"][0]["exclusive"] = False
    return [slot, gpus, nodes, shared, total, extras]


def _places(value, path=()):
    if isinstance(value, dict):
        for key, item in value.items():
            yield path, key
            yield from _places(item, path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield path, i
            yield from _places(item, path + (i,))


def _single_changes(base):
    """base with one value replaced, one key dropped or one key added, everywhere."""
    values = ODD + [0, 2, 3, {"per_slot": 1}, {"total": 2}, [{"type": "core", "count": 1}]]
    for path, key in _places(base):
        for change in range(len(values) + 2):
            js = copy.deepcopy(base)
            holder = js
            for step in path:
                holder = holder[step]
            if change < len(values):
                holder[key] = copy.deepcopy(values[change])
            elif change == len(values):
                if isinstance(holder, list):
                    holder.append(copy.deepcopy(holder[key]))
                else:
                    del holder[key]
            elif isinstance(holder, dict):
                for extra in ("exclusive", "label", "unit", "x", "total", "per_slot", "attributes", "user",
                              "dependencies", "constraints", "shell"):
                    if extra not in holder:
                        holder[extra] = True
                        break
            yield js


def test_every_single_change_of_a_common_jobspec(monkeypatch):
    """Each reader's fast path answers what its general path answers for
    every jobspec one change away from a common one (exhaustively, where the
    random draws above reach a given change only now and then)."""
    readers = (V.validate, jj.get_counts, jj.ntasks, jj.ncores, index._jobspec_fields_of, R.request_from_jobspec)
    taken = cases = 0
    for base in _bases():
        assert jj.common_shape(base) is not None
        for js in _single_changes(base):
            cases += 1
            fast = [outcome(fn, js) for fn in readers]
            with monkeypatch.context() as m:
                for module, name in ((jj, "common_shape"), (jj, "job_shape"), (V, "common_shape"),
                                     (R, "job_shape")):
                    m.setattr(module, name, lambda js: None)
                general = [outcome(fn, js) for fn in readers]
            assert fast == general, js
            taken += jj.common_shape(js) is not None
    assert cases > 3000 and 0.1 * cases < taken < 0.5 * cases


def test_a_jobs_shape_is_read_once_per_jobspec_object(monkeypatch):
    """job_shape remembers common_shape's answer per jobspec object (a job's
    is never changed in place): asked again for the same object it does not
    classify again; an equal object of its own is classified afresh."""
    calls = []
    classify = jj.common_shape
    monkeypatch.setattr(jj, "common_shape", lambda js: calls.append(1) or classify(js))
    js = J.build(["a"], ntasks=2, check=False)
    odd = dict(js, version=2)
    assert jj.job_shape(js) == classify(js) and jj.job_shape(odd) is None and len(calls) == 2
    assert jj.job_shape(js) == classify(js) and jj.job_shape(odd) is None and len(calls) == 2
    assert jj.job_shape(copy.deepcopy(js)) == classify(js) and len(calls) == 3
    assert R.request_from_jobspec(js).nslots == 2 and index._jobspec_fields_of(js)[1] == 2 and len(calls) == 3

