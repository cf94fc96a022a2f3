"""components('bundle_file_texts'): a bundle's texts are the header and the data as to_nice_yaml writes it."""

from __future__ import annotations

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible_collections.cps.gpu_cluster.plugins.filter.components import FilterModule

COMPONENTS = FilterModule().filters()["components"]


def TEXTS(files, *args):
    return COMPONENTS(files, "bundle_file_texts", *args)


HEADER = "#\n# Ansible managed\n#"


def test_fleet_yaml_first_then_each_manifest_with_the_header():
    files = [{"path": "00-namespace-demo.yaml", "content": {"apiVersion": "v1", "kind": "Namespace",
                                                            "metadata": {"name": "demo"}}}]
    texts = TEXTS(files, {"defaultNamespace": "demo", "labels": {"a": "b"}}, HEADER, "Fleet bundle of demo.")
    assert [t["path"] for t in texts] == ["fleet.yaml", "00-namespace-demo.yaml"]
    assert texts[0]["content"] == ("#\n# Ansible managed\n#\n# Fleet bundle of demo.\n"
                                   "defaultNamespace: demo\nlabels:\n  a: b\n")
    # keys keep their order (kind after apiVersion), as kubectl users read them
    assert texts[1]["content"] == "#\n# Ansible managed\n#\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: demo\n"
    assert yaml.safe_load(texts[1]["content"]) == files[0]["content"]


def test_multiline_strings_round_trip():
    script = "#!/bin/sh\nset -e\necho ok\n"
    texts = TEXTS([{"path": "01-cm.yaml", "content": {"data": {"run.sh": script}}}], {}, HEADER)
    assert yaml.safe_load(texts[1]["content"])["data"]["run.sh"] == script
    assert texts[0]["content"] == HEADER + "\n{}\n"


@pytest.mark.parametrize(("files", "fleet", "message"), [
    ("x", {}, "list of {path, content}"),
    ([{"path": "a.yaml"}], {}, "list of {path, content}"),
    ([], ["not", "a", "mapping"], "must be a mapping"),
])
def test_bad_input_fails_with_the_filter_name(files, fleet, message):
    with pytest.raises(AnsibleFilterError, match=r"components\('bundle_file_texts'\): .*" + message.replace("{", r"\{").replace("}", r"\}")):
        TEXTS(files, fleet, HEADER)
