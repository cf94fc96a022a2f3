"""plugins/plugin_utils/forms.py: one pattern per kind of value, each as its upstream rule decides
(Kubernetes' k8s.io/apimachinery validation and resource.ParseQuantity, Go's time.ParseDuration).
Every pattern tests the whole string, whichever of match, fullmatch and search a caller uses."""

from __future__ import annotations

import pytest
from ansible_collections.cps.gpu_cluster.plugins.plugin_utils import (
    backups,
    cluster_logs,
    components,
    forms,
    gpu_monitoring,
    gpu_pools,
    inventory_checks,
    jupyterhub,
    k3s_hardening,
    k3s_parity,
    management,
    scheduling,
    vllm,
)

CASES = [
    # IsDNS1123Label: at most 63, lower case alphanumerics and '-', alphanumeric at both ends
    ("DNS_LABEL", "llm", True), ("DNS_LABEL", "a" * 63, True), ("DNS_LABEL", "a" * 64, False),
    ("DNS_LABEL", "-llm", False), ("DNS_LABEL", "llm-", False), ("DNS_LABEL", "LLM", False),
    ("DNS_LABEL", "l.lm", False), ("DNS_LABEL", "", False), ("DNS_LABEL", "llm\n", False),
    # IsDNS1123Subdomain: at most 253, labels of any length
    ("DNS_SUBDOMAIN", "wk-gpu1.lab", True), ("DNS_SUBDOMAIN", "a" * 64 + ".lab", True),
    ("DNS_SUBDOMAIN", ".".join(["a" * 63] * 3 + ["a" * 61]), True), ("DNS_SUBDOMAIN", ".".join(["a" * 63] * 3 + ["a" * 62]), False),
    ("DNS_SUBDOMAIN", "wk_gpu1", False), ("DNS_SUBDOMAIN", "wk..gpu", False),
    # a DNS name: labels of at most 63
    ("DNS_NAME", "llm.lab.example", True), ("DNS_NAME", "a" * 63 + ".lab", True),
    ("DNS_NAME", "a" * 64 + ".lab", False), ("DNS_NAME", "Llm.lab", False),
    # label keys and values
    ("LABEL_KEY", "gpu", True), ("LABEL_KEY", "nvidia.com/gpu.product", True), ("LABEL_KEY", "a/b/c", False),
    ("LABEL_KEY", "nvidia.com/" + "a" * 63, True), ("LABEL_KEY", "nvidia.com/" + "a" * 64, False),
    ("LABEL_KEY", "/gpu", False), ("LABEL_KEY", "Nvidia.com/gpu", False), ("LABEL_KEY", "gpu_", False),
    ("LABEL_NAME", "gpu.product", True), ("LABEL_NAME", "_gpu", False),
    ("LABEL_VALUE", "", True), ("LABEL_VALUE", "NVIDIA-A100_80GB.PCIe", True), ("LABEL_VALUE", "a" * 64, False),
    ("LABEL_VALUE", "a b", False),
    # time.ParseDuration
    ("GO_DURATION", "720h", True), ("GO_DURATION", "1h30m", True), ("GO_DURATION", "1.5s", True),
    ("GO_DURATION", "250ms", True), ("GO_DURATION", "10", False), ("GO_DURATION", "1d", False), ("GO_DURATION", "h", False),
    # ParseQuantity, unsigned
    ("QUANTITY", "500m", True), ("QUANTITY", "1.5Gi", True), ("QUANTITY", "1e3", True), ("QUANTITY", ".5", True),
    ("QUANTITY", "2.", True), ("QUANTITY", "100Pi", True), ("QUANTITY", "8n", True),
    ("QUANTITY", "-1", False), ("QUANTITY", "1Gb", False), ("QUANTITY", "1mi", False), ("QUANTITY", "Gi", False),
    ("QUANTITY", "1 Gi", False), ("QUANTITY", "", False),
    # the monitoring and logs volumes: whole Gi or Ti
    ("VOLUME_SIZE", "50Gi", True), ("VOLUME_SIZE", "2Ti", True), ("VOLUME_SIZE", "0Gi", False), ("VOLUME_SIZE", "1.5Gi", False),
    ("VOLUME_SIZE", "500Mi", False),
]


@pytest.mark.parametrize(("form", "value", "valid"), CASES)
def test_each_form_as_upstream_decides(form, value, valid):
    pattern = getattr(forms, form)
    for test in (pattern.match, pattern.fullmatch, pattern.search):
        assert bool(test(value)) is valid, (form, value, test.__name__)


def test_quantity_groups_are_the_number_and_the_suffix():
    match = forms.QUANTITY.match("1.5Gi")
    assert (match.group("number"), match.group("suffix")) == ("1.5", "Gi")
    assert forms.QUANTITY.match("3").group("suffix") is None


def test_the_checks_read_these_patterns():
    """One source: the modules that check these kinds hold the forms' own pattern objects."""
    assert backups.DNS_LABEL is components.DNS_LABEL is gpu_pools.DNS_LABEL_RE is inventory_checks.DNS_LABEL_RE \
        is jupyterhub.DNS_LABEL is k3s_parity.DNS_LABEL_RE is management.DNS_LABEL is vllm.DNS_LABEL is forms.DNS_LABEL
    assert inventory_checks.DNS_NAME_RE is jupyterhub.DNS_NAME is management.DNS_NAME is vllm.DNS_NAME is forms.DNS_NAME
    assert k3s_hardening._DNS_SUBDOMAIN is forms.DNS_SUBDOMAIN
    assert backups.GO_DURATION is inventory_checks.DURATION_RE is management.DURATION is forms.GO_DURATION
    assert vllm.QUANTITY is scheduling.QUANTITY is forms.QUANTITY
    assert jupyterhub.quantity_value is forms.quantity_value  # which reads forms.QUANTITY
    assert cluster_logs.SIZE_RE is gpu_monitoring.SIZE_RE is forms.VOLUME_SIZE


# Issue 43: quantities as Kubernetes reads them (k8s.io/apimachinery/pkg/api/resource: binary and decimal
# suffixes, an exponent; no sign here, as requests, limits and volume sizes are never negative).
@pytest.mark.parametrize(("text", "value"), [("10Gi", 10 * 2 ** 30), ("500m", 0.5), ("32", 32.0), (32, 32.0), ("1e3", 1000.0),
                                             ("0", 0.0), ("512GB", None), ("-1", None), (-1, None), (True, None), ("", None)])
def test_quantity_value(text, value):
    assert forms.quantity_value(text) == value


@pytest.mark.parametrize(("address", "valid"), [("ops@lab.example", True), ("a.b+tag@mail.lab.example", True),
                                                ("ops.lab.example", False), ("ops@lab", False), ("ops @lab.example", False),
                                                ("@lab.example", False), ("ops@@lab.example", False)])
def test_email(address, valid):
    assert bool(forms.EMAIL.match(address)) is valid


def _lazy_as_a_filter_gets_it(value, **others):
    """``value`` as ansible-core 2.19 hands it to a filter: a lazy container of the templating engine
    (ansible/_internal/_templating/_lazy_containers.py), whose templar holds every other variable."""
    from ansible._internal._datatag._tags import TrustedAsTemplate  # noqa: PLC0415
    from ansible.parsing.dataloader import DataLoader  # noqa: PLC0415
    from ansible.template import Templar  # noqa: PLC0415
    got = {}
    templar = Templar(loader=DataLoader(), variables=dict(others, entry=value))
    templar._engine.environment.filters["capture"] = lambda v: got.setdefault("value", v) is None or "ok"
    templar.template(TrustedAsTemplate().tag("{{ entry | capture }}"))
    return got["value"]


def test_copy_data_copies_a_lazy_container_without_its_templar(monkeypatch):
    """Issue 45: copy.deepcopy of a lazy container deep-copies its templar, every variable of the play
    with it (_AnsibleLazyTemplateDict.__deepcopy__); copy_data rebuilds the data alone, as plain dicts
    and lists, and never reaches copy.deepcopy for them."""
    entry = {"name": "gpu-1", "gpu": 1, "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}
    lazy = _lazy_as_a_filter_gets_it(entry, big=dict((str(n), list(range(20))) for n in range(500)))
    assert type(lazy).__name__ == "_AnsibleLazyTemplateDict"

    def refused(value, memo=None):
        raise AssertionError(f"copy.deepcopy({type(value).__name__}) reached")
    monkeypatch.setattr(forms.copy, "deepcopy", refused)
    copied = forms.copy_data(lazy)
    assert copied == entry
    # the plain types themselves, not the lazy subclasses of dict and list
    assert [type(copied), type(copied["tolerations"]), type(copied["tolerations"][0])] == [dict, list, dict]
    copied["tolerations"][0]["key"] = "changed"
    copied["tolerations"].append({})
    assert lazy["tolerations"] == entry["tolerations"]  # the original is untouched


def test_copy_data_keeps_strings_and_tuples_and_copies_what_is_not_data():
    text = "nvidia.com/gpu"
    assert forms.copy_data(text) is text
    pair = (1, [2])
    assert forms.copy_data(pair) == pair and forms.copy_data(pair)[1] is not pair[1]
    kept = {"a": {1, 2}}
    copied = forms.copy_data(kept)
    assert copied == kept and copied["a"] is not kept["a"]  # a set: copy.deepcopy's copy
