"""Run a module's main() the way Ansible does, in-process: its arguments as ANSIBLE_MODULE_ARGS,
exit_json and fail_json caught. The module tests of this directory share it."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes


class _ModuleExit(Exception):
    """exit_json (ok) or fail_json of the module under test, with its result."""

    def __init__(self, ok, result):
        super().__init__(result)
        self.ok = ok
        self.result = result


def call_module(monkeypatch, main, args, check=False, diff=False):
    """(ok, result) of main() run with args; ok is False when the module called fail_json."""
    args = dict(args)
    if check:
        args["_ansible_check_mode"] = True
    if diff:
        args["_ansible_diff"] = True
    monkeypatch.setattr(basic, "_ANSIBLE_ARGS", to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args})))
    monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", "legacy", raising=False)

    def exit_json(self, **kwargs):
        raise _ModuleExit(True, kwargs)

    def fail_json(self, **kwargs):
        raise _ModuleExit(False, kwargs)

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)
    with pytest.raises(_ModuleExit) as info:
        main()
    return info.value.ok, info.value.result


@pytest.fixture
def module_call(monkeypatch):
    """module_call(main, args, check=False, diff=False) -> (ok, result)."""
    return lambda main, args, check=False, diff=False: call_module(monkeypatch, main, args, check, diff)
