"""plugin_utils.filter_errors.wrap: every filter plugin's bad-input errors become AnsibleFilterError
naming the filter (no traceback in a playbook); other exceptions and results pass through."""

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils.filter_errors import wrap


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
