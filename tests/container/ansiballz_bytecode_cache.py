"""A bytecode cache for Python code imported from a zip file: the test machines' (issue 45).

Every Ansible module run unpacks its AnsiballZ payload (the module and ansible.module_utils) to a new
zip file and imports from it (ansible/_internal/_ansiballz/_wrapper.py). Python's zipimport keeps no
bytecode, and before 3.13 it compiles each module twice (``get_filename`` compiles to find the file
name, ``get_code`` again): py-spy over 40 ``stat`` tasks on localhost put about half of all samples in
zipimport's ``_compile_source``. The payload's sources are the same on every run, so this caches the
compiled code by the source's hash (and the interpreter's bytecode magic) and skips the compile; and
the code zipimport finds for a module's file name is the code it executes (found once, not twice).

Installed where the suite's modules run, never on a user's machine: the podman test image
(scripts/build-test-image.sh: every molecule scenario and the lab) and the test venv (``make dev-deps``:
the integration and render tiers' localhost modules), each through a ``.pth`` file that imports this
module at interpreter start. It changes no result: the code objects are the ones ``compile`` returns
(only their file name is the first run's temporary path, which shows in a module's traceback).

On the controller (the test venv only) the same cache serves Ansible's collection loader, which compiles
a collection's Python from source in every process that imports it (ansible/utils/collection_loader/
_collection_finder.py, get_code: no bytecode is kept): each ansible-playbook run, and each forked worker
that calls one of this collection's filters, compiled the plugin_utils it imports (some 800 KB of source).
That module's ``compile`` is replaced by one that reads the cache (keyed by the interpreter, the file name,
the flags and the source); preflight alone runs some 0.2 CPU-seconds faster.

Safe to share: the cache is a directory only the current user may write (created 0700; one owned by
another user or writable by others is not used), written atomically; anything unreadable is compiled."""

import marshal
import os
import stat
import sys
import zipimport as _zipimport

COLLECTION_FINDER = "ansible.utils.collection_loader._collection_finder"


def _cache_dir():
    if os.environ.get("ANSIBALLZ_BYTECODE_CACHE"):  # the unit test's own directory
        return os.environ["ANSIBALLZ_BYTECODE_CACHE"]
    if sys.prefix != sys.base_prefix:  # a venv: beside it
        return os.path.join(sys.prefix, "var", "ansiballz-bytecode")
    return "/var/cache/ansiballz-bytecode"


def _private(path):
    """Whether ``path`` is a directory of this user that nobody else may write (created if absent)."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022


def _read(path):
    try:
        with open(path, "rb") as handle:  # one read: marshal.load(handle) reads the file piece by piece
            return marshal.loads(handle.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None


def _write(path, code):
    try:
        partial = f"{path}.{os.getpid()}.tmp"
        with open(partial, "wb") as handle:
            marshal.dump(code, handle)
        os.replace(partial, path)
    except OSError:
        pass


def collection_compile(source, filename, mode, flags=0, dont_inherit=False, optimize=-1):  # noqa: PLR0917 - compile's own signature
    """``compile`` for Ansible's collection loader: the cached code of this source, else compiled and cached."""
    import hashlib  # noqa: PLC0415 -- at the first compile, not at every interpreter start
    import importlib.util  # noqa: PLC0415
    directory = _cache_dir()
    if not _private(directory):
        return compile(source, filename, mode, flags=flags, dont_inherit=dont_inherit, optimize=optimize)
    data = source if isinstance(source, bytes) else str(source).encode("utf-8", "surrogatepass")
    head = b"collection\0%s\0%s\0%d\0%d\0%d\0%d\0" % (importlib.util.MAGIC_NUMBER, os.fsencode(str(filename)),
                                                          flags, bool(dont_inherit), optimize, sys.flags.optimize)
    key = hashlib.blake2b(head + data, digest_size=20).hexdigest()
    path = os.path.join(directory, key)
    code = _read(path)
    if code is None:
        code = compile(source, filename, mode, flags=flags, dont_inherit=dont_inherit, optimize=optimize)
        _write(path, code)
    return code


class _CollectionFinderWatch:
    """A meta path entry that finds nothing itself: when Ansible's collection finder module is imported, it
    loads it as the next finders would and gives it collection_compile as its ``compile``; then it leaves."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != COLLECTION_FINDER:
            return None
        import importlib.util  # noqa: PLC0415
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        loader = getattr(spec, "loader", None)
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        def exec_and_patch(module):
            exec_module(module)
            module.compile = collection_compile  # the module's global, found before the builtin

        loader.exec_module = exec_and_patch
        return spec


def _install_collection_loader_cache():
    if sys.prefix == sys.base_prefix and not os.environ.get("ANSIBALLZ_BYTECODE_CACHE"):
        return  # the controller's cache is the test venv's (the test image has no Ansible controller)
    if COLLECTION_FINDER not in sys.modules:
        sys.meta_path.insert(0, _CollectionFinderWatch())


def _install():
    compile_source = getattr(_zipimport, "_compile_source", None)
    if compile_source is None:  # another Python's zipimport: nothing to do
        return

    def cached(pathname, source):
        import hashlib  # noqa: PLC0415 -- at the first compile, not at every interpreter start
        import importlib.util  # noqa: PLC0415
        directory = _cache_dir()
        if not _private(directory):
            return compile_source(pathname, source)
        key = hashlib.blake2b(importlib.util.MAGIC_NUMBER + bytes(source), digest_size=20).hexdigest()
        path = os.path.join(directory, key)
        code = _read(path)
        if code is None:
            code = compile_source(pathname, source)
            _write(path, code)
        return code

    _zipimport._compile_source = cached

    # Python < 3.13 finds each module's code twice: get_filename (called by spec_from_loader) and get_code
    # (exec_module) both run _get_module_code, which reads and inflates the entry and unmarshals it again.
    # The second call takes what the first found (the same archive, prefix and name) and drops it; a lone call's
    # entry waits for the next import of that name from that archive (a payload is a new file per module run).
    get_module_code = getattr(_zipimport, "_get_module_code", None)
    if get_module_code is None:
        return
    found = {}

    def once(importer, fullname):
        key = (importer.archive, importer.prefix, fullname)
        if key in found:
            return found.pop(key)
        result = found[key] = get_module_code(importer, fullname)
        return result

    _zipimport._get_module_code = once


_install()
_install_collection_loader_cache()
