"""One run of playbooks/render.yml per distinct (inventory, extra vars) for the whole render tier.

Several files read the same render (the reference homelab, plain): each run of render.yml costs two to
three CPU-minutes, so the plain homelab used to be rendered five times. ``renders_cache.start(...)``
starts a render (once per session for the same arguments, so a file can start all it needs before
waiting, and they run in parallel); ``renders_cache.get(...)`` waits for it and fails the test with the
render's output when it failed. Tests only read the render directories they get.

A test file lists the renders it reads in ``RENDERS_USED`` (tuples of arguments): every render of the
files collected is queued when the session starts, so no file waits for its renders after another
file's (the tier used to spend its time rendering one file's renders at a time).

At most ``GPU_CLUSTER_TEST_JOBS`` renders run at once (default: one per core): the others wait in
the order they were started. A 2-core machine running four renders at once spent a fifth more CPU
time (and wall time) on them than running them two at a time (docs/development.md)."""

from __future__ import annotations

import os
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
JOBS = int(os.environ.get("GPU_CLUSTER_TEST_JOBS") or os.cpu_count() or 2)


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
    """Renders of this session, by their arguments; at most JOBS of them run at once."""

    def __init__(self, tmp_path_factory):
        self._factory = tmp_path_factory
        self._jobs = {}
        self._pool = ThreadPoolExecutor(max_workers=JOBS)
        self._running = set()
        self._lock = threading.Lock()
        self._closed = False

    def _run(self, out, inventory, extra):
        with self._lock:
            if self._closed:
                return None, "the session ended before this render started"
            proc = start_render(out, inventory, *extra)
            self._running.add(proc)
        try:
            output = proc.communicate()[0]
        finally:
            with self._lock:
                self._running.discard(proc)
        return proc.returncode, output

    def start(self, inventory, *extra):
        key = (str(inventory), *extra)
        if key not in self._jobs:
            out = self._factory.mktemp("render")
            self._jobs[key] = {"out": out, "future": self._pool.submit(self._run, out, inventory, extra)}
        return key

    def get(self, inventory, *extra, timeout=1800):
        """(render_dir, output) of the render with these arguments, started if it was not."""
        job = self._jobs[self.start(inventory, *extra)]
        returncode, output = job["future"].result(timeout=timeout)
        assert returncode == 0, f"render of {inventory} {list(extra)} failed:\n{output[-6000:]}"
        return job["out"], output

    def close(self):
        with self._lock:
            self._closed = True
            for proc in self._running:
                proc.kill()
        self._pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="session")
def renders_cache(tmp_path_factory):
    cache = Renders(tmp_path_factory)
    yield cache
    cache.close()


@pytest.fixture(scope="session", autouse=True)
def start_every_render(request, renders_cache):
    """Queue the renders every collected file lists in RENDERS_USED, before the first test."""
    modules = {item.module for item in request.session.items if getattr(item, "module", None)}
    for module in sorted(modules, key=lambda m: m.__name__):
        for args in getattr(module, "RENDERS_USED", ()):
            renders_cache.start(*args)
