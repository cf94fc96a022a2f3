"""plugin_utils.filter_errors, the filters' one boundary: wrap (bad-input errors become AnsibleFilterError
naming the filter, no traceback in a playbook; other exceptions and results pass through), phase_filter
(a phase's steps behind one filter) and plain_inventory (hostvars read once, untemplatable values set aside)."""

import pytest
from ansible._internal._datatag._tags import TrustedAsTemplate  # the tag a template from an inventory file carries
from ansible.errors import AnsibleError, AnsibleFilterError
from ansible.parsing.dataloader import DataLoader
from ansible.vars.hostvars import HostVarsVars
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import phase_filter, plain_inventory, refuse_failures, wrap
from jinja2 import Undefined


def parse(value):
    """Doc kept."""
    if value == "type":
        raise TypeError("not a string")
    if value == "key":
        raise KeyError("missing")
    if value == "other":
        raise RuntimeError("a bug")
    return int(value)


@pytest.mark.parametrize("bad, reason", [("x", "invalid literal"), ("type", "not a string"), ("key", "missing")])
def test_bad_input_names_the_filter(bad, reason):
    with pytest.raises(AnsibleFilterError, match=r"^my_filter: .*" + reason):
        wrap(parse, "my_filter")(bad)


def test_name_defaults_to_the_function_and_result_passes_through():
    wrapped = wrap(parse)
    assert wrapped("7") == 7
    assert wrapped.__name__ == "parse" and wrapped.__doc__ == "Doc kept."
    with pytest.raises(AnsibleFilterError, match=r"^parse: "):
        wrapped("x")


def test_other_errors_are_not_hidden():
    with pytest.raises(RuntimeError):
        wrap(parse, "my_filter")("other")


# phase_filter: one public filter per phase, its steps private functions


def _steps():
    def add(value, other=0, *, times=1):
        return (value + other) * times
    return {"add": add, "parse": parse}


def test_a_phase_filter_runs_the_step_with_its_arguments():
    phase = phase_filter("my_phase", _steps())
    assert phase(2, "add") == 2
    assert phase(2, "add", 3) == 5
    assert phase(2, "add", 3, times=2) == 10
    assert phase("7", "parse") == 7
    assert phase.__name__ == "my_phase"
    assert phase.steps == ("add", "parse")
    assert phase.__doc__ == "The my_phase phase's steps: add, parse."


def test_a_step_error_names_the_filter_and_the_step():
    phase = phase_filter("my_phase", _steps())
    with pytest.raises(AnsibleFilterError, match=r"^my_phase\('parse'\): invalid literal"):
        phase("x", "parse")
    with pytest.raises(RuntimeError):
        phase("other", "parse")


@pytest.mark.parametrize("step", ["nope", "", None, ["add"], 1])
def test_an_unknown_step_lists_the_steps(step):
    with pytest.raises(AnsibleFilterError, match=r"^my_phase: unknown step .*; the steps are add, parse\Z"):
        phase_filter("my_phase", _steps())(1, step)


def test_wrap_converts_only_the_errors_it_is_given():
    def missing(key):
        raise OSError(f"no such file: {key}")
    with pytest.raises(AnsibleFilterError, match=r"^pins: no such file: k\Z"):
        wrap(missing, "pins", errors=(OSError,))("k")
    with pytest.raises(OSError):
        wrap(missing, "pins")("k")


# plain_inventory: the one reader of Ansible's groups and hostvars


class HostVars(dict):
    """hostvars as Ansible hands them over: reading a value templates it, and may fail."""

    def __getitem__(self, host):
        return Variables(dict.__getitem__(self, host))


class Variables(dict):
    def __getitem__(self, name):
        value = dict.__getitem__(self, name)
        if isinstance(value, Exception):
            raise value
        return value


def test_plain_inventory_reads_what_is_wanted_and_sets_aside_what_cannot_be_templated():
    hostvars = HostVars({
        "cp1": {"gpu_cluster_a": 1, "other": 2, "gpu_cluster_b": AnsibleError("'x' is undefined\nmore")},
        "wk1": {"gpu_cluster_a": [1, {"k": Undefined(hint="no wk1 fact")}], "gpu_cluster_b": AnsibleError("")},
        "absent-from-groups": {"gpu_cluster_a": 9},
    })
    groups = {"all": ["cp1", "wk1", "ghost"], "servers": ("cp1",)}
    plain_groups, plain, failures = plain_inventory("f", groups, hostvars, lambda name: name.startswith("gpu_cluster_"))
    assert plain_groups == {"all": ["cp1", "wk1", "ghost"], "servers": ["cp1"]}
    assert plain == {"cp1": {"gpu_cluster_a": 1}, "wk1": {}}
    assert failures == {"gpu_cluster_b": ("'x' is undefined", ["cp1", "wk1"]), "gpu_cluster_a": ("no wk1 fact", ["wk1"])}
    assert not any(isinstance(v, Variables) for v in plain.values())


def test_plain_inventory_hosts_default_to_hostvars_and_can_be_chosen():
    hostvars = HostVars({"a": {"x": 1}, "b": {"x": 2}})
    assert plain_inventory("f", {}, hostvars, lambda name: True)[1] == {"a": {"x": 1}, "b": {"x": 2}}
    assert plain_inventory("f", {"all": ["a", "b"]}, hostvars, lambda name: True, ["b", "c"])[1] == {"b": {"x": 2}}


@pytest.mark.parametrize(("groups", "hostvars", "message"), [
    (["cp1"], {}, r"^f: the input must be the groups mapping, got list\Z"),
    ({}, ["cp1"], r"^f: hostvars must be a mapping, got list\Z"),
])
def test_plain_inventory_refuses_other_inputs(groups, hostvars, message):
    with pytest.raises(AnsibleFilterError, match=message):
        plain_inventory("f", groups, hostvars, lambda name: True)


def test_refuse_failures_names_the_first_value():
    refuse_failures("f", {})
    with pytest.raises(AnsibleFilterError, match=r"^f: wk1: gpu_cluster_b cannot be templated: boom\Z"):
        refuse_failures("f", {"gpu_cluster_b": ("boom", ["wk1", "wk2"]), "gpu_cluster_c": ("later", ["cp1"])})


class Unexplained(Undefined):
    """An Undefined whose message cannot be read."""

    @property
    def _undefined_message(self):
        raise RuntimeError("no message")


class Silent(Undefined):
    _undefined_message = ""


def test_an_undefined_reads_as_jinja_says_or_undefined():
    hostvars = HostVars({"a": {"x": Undefined(name="gpu_x"), "y": Unexplained(), "z": Silent()}})
    assert plain_inventory("f", {}, hostvars, lambda name: True)[2] == {
        "x": ("'gpu_x' is undefined", ["a"]), "y": ("undefined", ["a"]), "z": ("undefined", ["a"])}


def _ansible_hostvars(group_vars, hosts):
    """{host: HostVarsVars}: ansible-core's own view of a host's variables (ansible/vars/hostvars.py),
    which templates a value for that host on every read, so each host gets its own copy of a list."""
    trusted = TrustedAsTemplate()

    def tag(value):
        return trusted.tag(value) if isinstance(value, str) and "{{" in value else value
    tagged = dict((name, [tag(v) for v in value] if isinstance(value, list) else value) for name, value in group_vars.items())
    return dict((host, HostVarsVars(dict(tagged, inventory_hostname=host), DataLoader(), host)) for host in hosts)


def test_plain_inventory_hands_down_one_object_for_every_hosts_copy_of_a_group_variable():
    """Issue 45: the checks judge a group variable once and group hosts by the object; a list templated
    per host (a label naming the host) stays each host's own; an equal value with an undefined part is
    never taken for the defined one."""
    pools = [{"name": "training", "nodes": ["wk1", "wk2"], "allocation": "exclusive"}]
    hostvars = _ansible_hostvars({"gpu_cluster_gpu_pools": pools, "gpu_cluster_node_labels": ["zone={{ inventory_hostname }}"]},
                                 ["cp1", "wk1", "wk2"])
    assert hostvars["cp1"]["gpu_cluster_gpu_pools"] is not hostvars["wk1"]["gpu_cluster_gpu_pools"]  # Ansible's copies
    _groups, plain, failures = plain_inventory("f", {"all": ["cp1", "wk1", "wk2"]}, hostvars, lambda name: name.startswith("gpu_cluster_"))
    assert failures == {}
    assert plain["cp1"]["gpu_cluster_gpu_pools"] == pools
    assert plain["cp1"]["gpu_cluster_gpu_pools"] is plain["wk1"]["gpu_cluster_gpu_pools"] is plain["wk2"]["gpu_cluster_gpu_pools"]
    assert [plain[h]["gpu_cluster_node_labels"] for h in ("cp1", "wk1", "wk2")] == [["zone=cp1"], ["zone=wk1"], ["zone=wk2"]]
    broken = HostVars({"cp1": {"gpu_cluster_x": [1, 2]}, "wk1": {"gpu_cluster_x": [1, Undefined(hint="no fact")]}})
    _groups, plain, failures = plain_inventory("f", {"all": ["cp1", "wk1"]}, broken, lambda name: True)
    assert plain == {"cp1": {"gpu_cluster_x": [1, 2]}, "wk1": {}} and failures == {"gpu_cluster_x": ("no fact", ["wk1"])}
