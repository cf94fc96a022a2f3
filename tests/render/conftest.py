"""One run of playbooks/render.yml per distinct (inventory, extra vars) for the whole render tier.

Several files read the same render (the reference homelab, plain): each run of render.yml costs two to
three CPU-minutes, so the plain homelab used to be rendered five times. ``renders_cache.start(...)``
starts a render (once per session for the same arguments, so a file can start all it needs before
waiting, and they run in parallel); ``renders_cache.get(...)`` waits for it and fails the test with the
render's output when it failed. Tests only read the render directories they get.

A test file lists the renders it reads in ``RENDERS_USED`` (tuples of arguments): every render of the
files collected starts when the session starts, so the renders of all files run side by side instead of
one file's after another's (the tier used to spend its time rendering one file's renders at a time)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def start_render(out, inventory, *extra):
    """Start playbooks/render.yml for an inventory into ``out``."""
    env = dict(os.environ,
               ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"),
               ANSIBLE_INJECT_FACT_VARS="false",
               ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_STDOUT_CALLBACK="default")
    cmd = ["ansible-playbook", str(REPO / "playbooks" / "render.yml"), "-i", str(inventory), "-e", f"render_dir={out}"]
    for item in extra:
        cmd += ["-e", item]
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


class Renders:
    """Renders of this session, by their arguments."""

    def __init__(self, tmp_path_factory):
        self._factory = tmp_path_factory
        self._jobs = {}

    def start(self, inventory, *extra):
        key = (str(inventory), *extra)
        if key not in self._jobs:
            out = self._factory.mktemp("render")
            self._jobs[key] = {"out": out, "proc": start_render(out, inventory, *extra), "output": None}
        return key

    def get(self, inventory, *extra, timeout=1800):
        """(render_dir, output) of the render with these arguments, started if it was not."""
        job = self._jobs[self.start(inventory, *extra)]
        if job["output"] is None:
            job["output"] = job["proc"].communicate(timeout=timeout)[0]
        assert job["proc"].returncode == 0, f"render of {inventory} {list(extra)} failed:\n{job['output'][-6000:]}"
        return job["out"], job["output"]

    def close(self):
        for job in self._jobs.values():
            if job["proc"].poll() is None:
                job["proc"].kill()
                job["proc"].communicate()


@pytest.fixture(scope="session")
def renders_cache(tmp_path_factory):
    cache = Renders(tmp_path_factory)
    yield cache
    cache.close()


@pytest.fixture(scope="session", autouse=True)
def start_every_render(request, renders_cache):
    """Start the renders every collected file lists in RENDERS_USED, before the first test."""
    modules = {item.module for item in request.session.items if getattr(item, "module", None)}
    for module in sorted(modules, key=lambda m: m.__name__):
        for args in getattr(module, "RENDERS_USED", ()):
            renders_cache.start(*args)
