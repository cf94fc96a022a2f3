"""tests/conftest.py caches kubernetes_validate's schema files for the session (cache_kubernetes_schemas):
validation still refuses what the Kubernetes schema refuses and accepts what it accepts, call after call."""

import kubernetes_validate
import pytest
from kubernetes_validate import utils

DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "demo"},
              "spec": {"selector": {"matchLabels": {"app": "demo"}},
                       "template": {"metadata": {"labels": {"app": "demo"}},
                                    "spec": {"containers": [{"name": "demo", "image": "busybox:1.37"}]}}}}


def test_the_schema_files_are_read_once_and_validation_is_unchanged():
    assert hasattr(utils.schema_contents, "cache_info"), "tests/conftest.py did not cache the schema files"
    for call in ("first", "second"):
        assert kubernetes_validate.validate(DEPLOYMENT, "1.33", strict=True) == "1.33", call
        wrong = {**DEPLOYMENT, "spec": {**DEPLOYMENT["spec"], "replicas": "two"}}
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(wrong, "1.33", strict=True)
        unknown = {**DEPLOYMENT, "spec": {**DEPLOYMENT["spec"], "replica": 2}}  # strict: no unknown fields
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(unknown, "1.33", strict=True)
        with pytest.raises(kubernetes_validate.SchemaNotFoundError):
            kubernetes_validate.validate({**DEPLOYMENT, "kind": "NoSuchKind"}, "1.33", strict=True)
    assert utils.schema_contents.cache_info().hits > 0
