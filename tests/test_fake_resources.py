"""[fake-resources] (flux-config-fake-resources(5)) and sched-simple's
pool-class=TreePool: the R an instance starts with, what the resource
listings show of it, and the R of allocations placed in node topology."""

import json
import textwrap

import pytest

from flux_lite.errors import FormatError
from flux_lite.formats import hwloc

GIB = 1 << 30

# two packages of two cores, each with its NUMA node and one gpu (the
# second seen through two backends: one gpu)
XML = textwrap.dedent(f"""\
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE topology SYSTEM "hwloc2.dtd">
    <topology version="2.0">
      <object type="Machine" os_index="0" cpuset="0x000000ff">
        <info name="HostName" value="box"/>
        <object type="Package" os_index="0" cpuset="0x0000000f">
          <object type="NUMANode" os_index="0" cpuset="0x0000000f" local_memory="{2 * GIB}"/>
          <object type="Core" os_index="0" cpuset="0x00000003">
            <object type="PU" os_index="0" cpuset="0x00000001"/>
            <object type="PU" os_index="1" cpuset="0x00000002"/>
          </object>
          <object type="Core" os_index="1" cpuset="0x0000000c">
            <object type="PU" os_index="2" cpuset="0x00000004"/>
          </object>
          <object type="Bridge" os_index="0">
            <object type="PCIDev" os_index="1">
              <object type="OSDev" name="card0" osdev_type="1"/>
              <object type="OSDev" name="cuda0" osdev_type="5"><info name="Backend" value="CUDA"/></object>
            </object>
          </object>
        </object>
        <object type="Package" os_index="1" cpuset="0x000000f0">
          <object type="NUMANode" os_index="1" cpuset="0x000000f0" local_memory="{2 * GIB}"/>
          <object type="Core" os_index="2" cpuset="0x00000030"/>
          <object type="Core" os_index="3" cpuset="0x000000c0"/>
          <object type="Bridge" os_index="1">
            <object type="PCIDev" os_index="2">
              <object type="OSDev" name="cuda1" osdev_type="5"><info name="Backend" value="CUDA"/></object>
              <object type="OSDev" name="opencl0d1" osdev_type="5"><info name="Backend" value="OpenCL"/></object>
            </object>
          </object>
        </object>
      </object>
    </topology>
    """)

TOPO = {"socket": [{"cores": "0-1", "gpus": "0", "memory": 2}, {"cores": "2-3", "gpus": "1", "memory": 2}]}


def start(flux_factory, tmp_path, table, name="state"):
    conf = tmp_path / f"{name}.toml"
    conf.write_text("[fake-resources]\n" + table)
    return flux_factory("-c", str(conf), name=name)


def R_of(flux):
    return json.loads(flux.out("kvs", "get", "resource.R"))


def test_hwloc_xml_cores_gpus_and_topology():
    topo = hwloc.parse(XML)
    assert (topo.ncores, topo.ngpus, topo.hostname) == (4, 2, "box")
    assert topo.treepool() == TOPO


def test_hwloc_one_numa_node_without_packages_and_unplaced_gpus():
    text = textwrap.dedent(f"""\
        <topology><object type="Machine" cpuset="0x3">
          <object type="NUMANode" cpuset="0x3" local_memory="{5 * GIB}"/>
          <object type="Core" cpuset="0x1"/><object type="Core" cpuset="0x2"/>
          <object type="OSDev" name="rsmi0"><info name="Backend" value="RSMI"/></object>
        </object></topology>""")
    # (a gpu under no PCI device belongs to no object: the node holds it)
    assert hwloc.parse(text).treepool() == {"cores": "0-1", "memory": 5, "gpus": "0"}


@pytest.mark.parametrize("text, message", [
    ("not xml", "invalid hwloc XML: syntax error: line 1, column 0"),
    ("<x/>", "invalid hwloc XML: no topology element"),
    ("<topology><object type='Machine' cpuset='0x1'/></topology>", "invalid hwloc XML: no Core objects"),
    ("<topology><object type='Machine' cpuset='0xzz'><object type='Core'/></object></topology>",
     "invalid hwloc XML: bad cpuset"),
])
def test_hwloc_bad_xml(text, message):
    with pytest.raises(FormatError) as exc:
        hwloc.parse(text)
    assert str(exc.value) == message


def test_nnodes_cores_gpus_host_prefix(flux_factory, tmp_path):
    flux = start(flux_factory, tmp_path, 'nnodes = 4\ncores-per-node = 8\ngpus-per-node = 2\nhost-prefix = "node"\n')
    assert flux.out("resource", "info") == "4 Nodes, 32 Cores, 8 GPUs\n"
    assert flux.out("resource", "list") == (
        "     STATE NNODES NCORES NGPUS NODELIST\n"
        "      free      4     32     8 node[0-3]\n"
        " allocated      0      0     0 \n"
        "      down      0      0     0 \n")
    R = R_of(flux)
    assert R["execution"]["R_lite"] == [{"rank": "0-3", "children": {"core": "0-7", "gpu": "0-1"}}]
    assert R["execution"]["nodelist"] == ["node[0-3]"]
    job = flux.submit("-N4", "-n4", "sleep", "inf")
    assert flux.state(job) == "RUN"


def test_defaults_are_64_cores_no_gpus_fake_hosts(flux_factory, tmp_path):
    flux = start(flux_factory, tmp_path, "nnodes = 2\n")
    first = flux.out("kvs", "eventlog", "get", "resource.eventlog").splitlines()[0]
    assert first.split(" ", 1)[1] == 'resource-define method="kvs"'
    assert flux.out("resource", "info") == "2 Nodes, 128 Cores, 0 GPUs\n"
    R = R_of(flux)
    assert R["execution"]["R_lite"] == [{"rank": "0-1", "children": {"core": "0-63"}}]
    assert R["execution"]["nodelist"] == ["fake[0-1]"]


@pytest.mark.parametrize("table, message", [
    ("cores-per-node = 8\n", "[fake-resources] table requires the 'nnodes' key"),
    ("nnodes = 0\n", "fake-resources.nnodes: expected a positive integer, got 0"),
    ("nnodes = 2\ngpus-per-node = -1\n", "fake-resources.gpus-per-node: expected a non-negative integer, got -1"),
    ("nnodes = 2\nbogus = 1\n", "fake-resources: unknown key 'bogus'"),
    ("nnodes = 2\namend-r = \"/no/such/amender.py\"\n",
     "[fake-resources] amend-r: file not found: '/no/such/amender.py'"),
    ("nnodes = 2\namend-r = \"no_such_module_xyz:amend\"\n",
     "[fake-resources] amend-r: failed to import module 'no_such_module_xyz': No module named 'no_such_module_xyz'"),
    ("nnodes = 2\namend-r = \"json:nothing\"\n", "[fake-resources] amend-r: module 'json' has no attribute 'nothing'"),
])
def test_bad_tables_fail_start(flux_factory, tmp_path, table, message):
    conf = tmp_path / "bad.toml"
    conf.write_text("[fake-resources]\n" + table)
    state = tmp_path / "state"
    with pytest.raises(AssertionError) as exc:
        flux_factory("-c", str(conf))
    assert f"stderr: flux-lite start: ERROR: {message}\n" in str(exc.value)
    assert not (state / "flux-lite.db").exists()


def test_amend_r_file_and_module(flux_factory, tmp_path, monkeypatch):
    amender = tmp_path / "amender_file.py"
    amender.write_text('def amend(R, hwloc_xml=None):\n    R["test_marker"] = ["from-file", hwloc_xml]\n    return R\n')
    flux = start(flux_factory, tmp_path, f'nnodes = 2\namend-r = "{amender}"\n')
    assert R_of(flux)["test_marker"] == ["from-file", None]
    pkg = tmp_path / "amender_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('def amend(R, hwloc_xml=None):\n    R["test_marker"] = "from-module"\n'
                                     '    return R\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    flux = start(flux_factory, tmp_path, 'nnodes = 2\namend-r = "amender_pkg:amend"\n', name="mod")
    assert R_of(flux)["test_marker"] == "from-module"


def test_hwloc_xml_path_and_treepool_amender(flux_factory, tmp_path):
    xml = tmp_path / "box.xml"
    xml.write_text(XML)
    flux = start(flux_factory, tmp_path, f'nnodes = 3\nhost-prefix = "n"\nhwloc-xml-path = "{xml}"\n'
                                         'amend-r = "flux.resource.TreePool:amend"\n')
    R = R_of(flux)
    assert R["execution"]["R_lite"] == [{"rank": "0-2", "children": {"core": "0-3", "gpu": "0-1"}}]
    assert R["execution"]["nodelist"] == ["n[0-2]"]
    assert R["scheduling"] == {"writer": "TreePool", "children": [{"ranks": "0-2", "topo": TOPO}]}
    assert flux.out("resource", "info") == "3 Nodes, 12 Cores, 6 GPUs\n"


# -- sched-simple pool-class=TreePool ---------------------------------------------


@pytest.fixture
def tree(flux_factory, tmp_path):
    """Two nodes of TOPO (sockets of cores 0-1 + gpu 0, cores 2-3 + gpu 1)."""
    xml = tmp_path / "box.xml"
    xml.write_text(XML)
    return start(flux_factory, tmp_path, f'nnodes = 2\nhwloc-xml-path = "{xml}"\n'
                                         'amend-r = "flux.resource.TreePool:amend"\n')


def job_R(flux, jobid):
    return json.loads(flux.out("job", "info", jobid, "R"))


def rlite(flux, jobid):
    return job_R(flux, jobid)["execution"]["R_lite"]


def test_treepool_is_the_default_for_a_treepool_writer_and_a_module_argument(tree):
    assert "pool-class=TreePool Rv1" in tree.dmesg()[-1]
    tree("module", "reload", "sched-simple", "pool-class=Rv1Pool")
    assert "pool-class=Rv1Pool Rv1" in tree.dmesg()[-1]
    tree("module", "reload", "sched-simple", "pool-class=TreePool")
    assert tree.dmesg()[-1].endswith("ready: queue-depth=8 log-level=info pool-class=TreePool Rv1 "
                                     "rank[0-1]/core[0-3],gpu[0-1]")
    r = tree.fails("module", "reload", "sched-simple", "pool-class=TreePoolX")
    assert r.stderr == "flux-lite module: ERROR: sched-simple: pool-class='TreePoolX' is invalid\n"


def test_treepool_gpu_slots_keep_socket_affinity_and_children(tree):
    a = tree.submit("-N1", "-n1", "-c1", "-g1", "sleep", "inf")
    b = tree.submit("-N1", "-n1", "-c1", "-g1", "sleep", "inf")
    assert job_R(tree, a)["scheduling"] == {"writer": "TreePool", "children": [{"ranks": "0", "topo": TOPO}]}
    assert rlite(tree, a) == [{"rank": "0", "children": {"core": "0", "gpu": "0"}}]
    # best fit: the node in use again, the other socket's gpu with the remaining core of socket 0?
    # no: the gpu slot takes core and gpu from one group, so socket 1
    assert rlite(tree, b) == [{"rank": "0", "children": {"core": "2", "gpu": "1"}}]
    # a cpu-only slot of 2 cores: the finest level where a group has 2 free
    # cores is the whole node (each socket has one); best fit keeps rank 0
    c = tree.submit("-N1", "-n1", "-c2", "sleep", "inf")
    assert rlite(tree, c) == [{"rank": "0", "children": {"core": "1,3"}}]


def test_treepool_cpu_slots_best_fit_within_a_level(tree):
    a = tree.submit("-N1", "-n1", "-c1", "sleep", "inf")
    b = tree.submit("-N1", "-n1", "-c1", "sleep", "inf")
    assert rlite(tree, a) == [{"rank": "0", "children": {"core": "0"}}]
    # the socket with the fewest free cores first: socket 0 again
    assert rlite(tree, b) == [{"rank": "0", "children": {"core": "1"}}]


def test_treepool_cross_socket_gpu_slot_and_exclusive(tree):
    a = tree.submit("-N1", "-n1", "-c3", "-g1", "sleep", "inf")
    assert rlite(tree, a) == [{"rank": "0", "children": {"core": "0-2", "gpu": "0"}}]
    bad = tree.submit("-N1", "-n1", "-c1", "-g3", "sleep", "inf")
    assert tree.state(bad) == "INACTIVE"
    assert tree.out("jobs", "-no", "{exception.note}", bad).strip() == (
        "unsatisfiable request: need 1 node(s) with 1 cores and 3 GPUs each, only 0 eligible")
    x = tree.submit("--exclusive", "-N1", "-n1", "-c1", "-g1", "sleep", "inf")
    R = job_R(tree, x)
    assert R["execution"]["R_lite"] == [{"rank": "1", "children": {"core": "0-3", "gpu": "0-1"}}]
    assert R["execution"]["nslots"] == 1
    assert R["scheduling"]["children"] == [{"ranks": "1", "topo": TOPO}]
    y = tree.submit("--exclusive", "-N1", "-n1", "-c1", "-g1", "sleep", "inf")
    assert tree.state(y) == "SCHED"


def test_treepool_needs_scheduling_children(flux):
    r = flux.fails("module", "reload", "sched-simple", "pool-class=TreePool")
    assert r.stderr.endswith("TreePool requires R.scheduling\n")


MODULE = '''\
import heapq

from flux.resource import InfeasibleRequest, InsufficientResources
from flux.resource.TreePool import TreePool
from flux.scheduler import Scheduler


class Tree(Scheduler):
    pool_class = TreePool

    def schedule(self):
        while self._queue:
            job = self._queue[0]
            try:
                alloc = self.resources.alloc(job.jobid, job.resource_request)
            except InsufficientResources:
                break
            except InfeasibleRequest as exc:
                job.request.deny(str(exc))
            else:
                job.request.success(alloc)
            heapq.heappop(self._queue)
            yield


def mod_main(h, *args):
    Tree(h, *args).run()
'''


def test_a_module_file_with_treepool_keeps_its_running_jobs(tree, tmp_path):
    """Each command reattaches a module file (hello for its running jobs):
    their R is read with its scheduling key, which TreePool needs."""
    path = tmp_path / "sched-tree.py"
    path.write_text(MODULE)
    tree("module", "remove", "sched-simple")
    tree("module", "load", str(path))
    a = tree.submit("-N1", "-n1", "-c1", "-g1", "sleep", "inf")
    b = tree.submit("-N1", "-n1", "-c1", "-g1", "sleep", "inf")
    assert [tree.state(a), tree.state(b)] == ["RUN", "RUN"]
    assert rlite(tree, b) == [{"rank": "0", "children": {"core": "2", "gpu": "1"}}]
    assert job_R(tree, b)["scheduling"]["children"] == [{"ranks": "0", "topo": TOPO}]
    # a free's R is the job manager's (no scheduling key): the module takes it as Flux's does
    tree("cancel", a)
    assert tree.state(a) == "INACTIVE"
    assert not [line for line in tree.dmesg() if ".err[" in line]
    tree("module", "remove", "sched-tree")


def shaped(flux, shape):
    return flux.submit(f"--resources-shape={shape}", "sleep", "inf")


def test_treepool_exclusive_containers(tree):
    a = shaped(tree, "slot=1/socket{x}")
    assert rlite(tree, a) == [{"rank": "0", "children": {"core": "0-1", "gpu": "0"}}]
    # packed from the fullest node: rank 0's free socket, then both of rank 1's
    b = shaped(tree, "slot=3/socket{x}")
    assert rlite(tree, b) == [{"rank": "0", "children": {"core": "2-3", "gpu": "1"}},
                              {"rank": "1", "children": {"core": "0-3", "gpu": "0-1"}}]
    assert job_R(tree, b)["execution"]["nslots"] == 3
    bad = shaped(tree, "slot=1/numa{x}")
    assert tree.state(bad) == "INACTIVE"
    assert tree.out("jobs", "-no", "{exception.note}", bad).strip() == (
        "unsatisfiable request: need 1 exclusive 'numa' container(s), only 0 available")


def test_treepool_containers_per_node_wait_in_the_queue(tree):
    a = tree.submit("-N1", "-n1", "-c1", "sleep", "inf")
    b = shaped(tree, "node=2/slot=2/socket{x}")  # 2 nodes of 2 whole sockets: waits for a
    assert tree.state(b) == "SCHED"
    tree("cancel", a)
    assert tree.state(b) == "RUN"
    assert rlite(tree, b) == [{"rank": "0-1", "children": {"core": "0-3", "gpu": "0-1"}}]
    assert job_R(tree, b)["execution"]["nslots"] == 4
    c = shaped(tree, "node=3/slot=1/socket{x}")
    assert tree.out("jobs", "-no", "{exception.note}", c).strip() == (
        "unsatisfiable request: need 3 node(s) with 1 exclusive 'socket' container(s) each, only 2 eligible")


def test_treepool_slot_above_node_counts_per_node(tree):
    a = shaped(tree, "slot=2/node/core=4")
    assert rlite(tree, a) == [{"rank": "0-1", "children": {"core": "0-3"}}]
    tree("cancel", a)
    b = shaped(tree, "slot=1/node{x}")
    assert rlite(tree, b) == [{"rank": "0", "children": {"core": "0-3", "gpu": "0-1"}}]


def test_start_conf_options(tmp_path):
    from conftest import Flux

    flux = Flux(tmp_path / "s")
    flux("start", "--clock=virtual", "--conf=fake-resources.nnodes=3", "--conf=fake-resources.cores-per-node=2",
         "--conf=fake-resources.host-prefix=n")
    assert flux.out("resource", "list", "-no", "{nnodes} {ncores} {nodelist}", "-s", "free") == "3 6 n[0-2]\n"
    r = Flux(tmp_path / "t").fails("start", "--conf=fake-resources.cores-per-node=2")
    assert r.stderr == "flux-lite start: ERROR: [fake-resources] table requires the 'nnodes' key\n"
    r = Flux(tmp_path / "u").fails("start", "--conf=nosuch")
    assert r.stderr == "flux-lite start: ERROR: --conf: named config 'nosuch' not found\n"
    assert not (tmp_path / "t").exists() and not (tmp_path / "u").exists()


def test_hwloc_1x_sockets_and_groups():
    # hwloc 1.x: NUMA nodes above Socket objects; a Group of two packages is
    # named by hwloc's type name
    text = textwrap.dedent(f"""\
        <topology><object type="Machine" cpuset="0xf">
          <object type="NUMANode" cpuset="0x3" local_memory="{3 * GIB}">
            <object type="Socket" cpuset="0x3"><object type="Core" cpuset="0x1"/><object type="Core" cpuset="0x2"/>
            </object></object>
          <object type="NUMANode" cpuset="0xc" local_memory="{3 * GIB}">
            <object type="Socket" cpuset="0xc"><object type="Core" cpuset="0x4"/><object type="Core" cpuset="0x8"/>
            </object></object>
        </object></topology>""")
    assert hwloc.parse(text).treepool() == {"socket": [{"cores": "0-1", "memory": 3}, {"cores": "2-3", "memory": 3}]}
    text = textwrap.dedent("""\
        <topology><object type="Machine" cpuset="0xf">
          <object type="Group" cpuset="0x3"><object type="Core" cpuset="0x1"/><object type="Core" cpuset="0x2"/>
          </object>
          <object type="Group" cpuset="0xc"><object type="Core" cpuset="0x4"/><object type="Core" cpuset="0x8"/>
          </object>
        </object></topology>""")
    assert hwloc.parse(text).treepool() == {"Group": [{"cores": "0-1"}, {"cores": "2-3"}]}


def test_fake_resources_instance_is_one_broker_on_this_host(flux_factory, tmp_path):
    """As Flux's: the resources pretend four nodes, the instance is one
    broker (size 1) named by this machine (recorded from Flux 0.88:
    `flux getattr size` 1, `flux uptime` size 1, `flux overlay status`
    `0 HOST: full`, while `flux resource list` shows fake[0-3])."""
    import socket

    flux = start(flux_factory, tmp_path, "nnodes = 4\ncores-per-node = 2\n")
    host = socket.gethostname().split(".", 1)[0]
    assert flux.out("getattr", "size") == "1\n"
    assert flux.out("getattr", "hostlist") == f"{host}\n"
    assert flux.out("overlay", "status") == f"0 {host}: full\n"
    assert flux.out("uptime").rstrip().endswith("size 1")
    assert "fake[0-3]" in flux.out("resource", "list")
