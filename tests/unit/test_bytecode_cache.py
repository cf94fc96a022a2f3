"""tests/container/ansiballz_bytecode_cache.py, the test machines' bytecode cache for code imported from a
zip (Ansible's module payloads; issue 45): run in a fresh interpreter as the test image and the test venv
run it (imported at start), against a zip laid out as an AnsiballZ payload."""

import marshal
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

HOOK = Path(__file__).resolve().parents[2] / "tests" / "container"
IMPORT = ("import sys; sys.path.insert(0, %r); import ansiballz_bytecode_cache; "
          "sys.path.insert(0, sys.argv[1]); from ansible.module_utils import payload; print(payload.VALUE)")


def _payload(tmp_path, name="payload.zip"):
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("ansible/__init__.py", "")
        archive.writestr("ansible/module_utils/__init__.py", "")
        archive.writestr("ansible/module_utils/payload.py", "VALUE = 'compiled from the zip'\n")
    return path


def _run(zip_path, cache):
    """The payload's VALUE, imported by a fresh interpreter (-S: no .pth of this venv) that imports the hook first."""
    env = dict(os.environ, ANSIBALLZ_BYTECODE_CACHE=str(cache))
    proc = subprocess.run([sys.executable, "-S", "-c", IMPORT % str(HOOK), str(zip_path)], env=env, capture_output=True,
                          text=True, check=True)
    return proc.stdout.strip()


def _plant(cache, value):
    """Replace every cached code object with one setting VALUE to ``value`` (to see whether it is read)."""
    for entry in cache.iterdir():
        entry.write_bytes(marshal.dumps(compile(f"VALUE = {value!r}\n", "planted", "exec")))


def test_a_second_run_imports_the_cached_code_from_a_new_zip(tmp_path):
    cache = tmp_path / "cache"
    assert _run(_payload(tmp_path), cache) == "compiled from the zip"
    assert oct(cache.stat().st_mode & 0o777) == "0o700" and len(list(cache.iterdir())) >= 1
    _plant(cache, "from the cache")
    # a new payload file (Ansible writes one per module run) with the same sources reads the cache
    assert _run(_payload(tmp_path, "another.zip"), cache) == "from the cache"


def test_a_cache_others_may_write_is_not_used(tmp_path):
    cache = tmp_path / "cache"
    assert _run(_payload(tmp_path), cache) == "compiled from the zip"
    _plant(cache, "planted by someone else")
    cache.chmod(0o777)
    assert _run(_payload(tmp_path, "another.zip"), cache) == "compiled from the zip"


def test_changed_sources_are_compiled_again(tmp_path):
    cache = tmp_path / "cache"
    _run(_payload(tmp_path), cache)
    path = tmp_path / "changed.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("ansible/__init__.py", "")
        archive.writestr("ansible/module_utils/__init__.py", "")
        archive.writestr("ansible/module_utils/payload.py", "VALUE = 'a new release'\n")
    assert _run(path, cache) == "a new release"


def test_a_damaged_entry_is_compiled_again(tmp_path):
    """An entry cut short (a full disk, a killed writer before the rename) is unreadable: marshal refuses it
    (EOFError or ValueError) and the source is compiled, as without a cache."""
    cache = tmp_path / "cache"
    _run(_payload(tmp_path), cache)
    for entry in cache.iterdir():
        entry.write_bytes(entry.read_bytes()[:7])
    assert _run(_payload(tmp_path, "another.zip"), cache) == "compiled from the zip"


COUNT = ("import sys, zipimport; sys.path.insert(0, %r); reads = []; get_data = zipimport._get_data; "
         "zipimport._get_data = lambda archive, entry: reads.append(entry[0]) or get_data(archive, entry); "
         "import ansiballz_bytecode_cache; sys.path.insert(0, sys.argv[1]); from ansible.module_utils import payload; "
         "import importlib; payload = importlib.reload(payload); print(payload.VALUE, len(reads), len(set(reads)))")


def test_each_entry_is_read_once_per_import(tmp_path):
    """zipimport (before 3.13) reads and inflates an entry for get_filename and again for get_code: with the
    hook, once per import of the three modules (ansible, ansible.module_utils, payload); a second import of
    the same module (a reload) reads its entry again, as it must, once."""
    if sys.version_info >= (3, 13):
        return  # zipimport finds the code once by itself there (and the hook leaves it alone)
    env = dict(os.environ, ANSIBALLZ_BYTECODE_CACHE=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-S", "-c", COUNT % str(HOOK), str(_payload(tmp_path))], env=env,
                          capture_output=True, text=True, check=True)
    assert proc.stdout.split() == ["compiled", "from", "the", "zip", "4", "3"]


# The controller's side: Ansible's collection loader compiles a collection's Python from source in every process
# (ansible/utils/collection_loader/_collection_finder.py, get_code); the hook gives that module a cached compile.
COLLECTION = ("import sys; sys.path.insert(0, %r); import ansiballz_bytecode_cache; "
              "sys.path.append(%r); "  # this venv's Ansible, without its .pth files (-S)
              "from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder; "
              "_AnsibleCollectionFinder(paths=[sys.argv[1]])._install(); "
              "from ansible_collections.lab.demo.plugins.plugin_utils import value; print(value.VALUE)")


def _collection(tmp_path, text="VALUE = 'compiled from the collection'\n"):
    root = tmp_path / "collections"
    utils = root / "ansible_collections" / "lab" / "demo" / "plugins" / "plugin_utils"
    utils.mkdir(parents=True, exist_ok=True)
    (utils / "value.py").write_text(text)
    return root


def _run_collection(root, cache):
    """VALUE of the collection's module, imported through Ansible's collection loader by a fresh interpreter."""
    env = dict(os.environ, ANSIBALLZ_BYTECODE_CACHE=str(cache))
    code = COLLECTION % (str(HOOK), sysconfig.get_paths()["purelib"])
    proc = subprocess.run([sys.executable, "-S", "-c", code, str(root)], env=env, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def test_the_collection_loader_reads_its_compiled_code_from_the_cache(tmp_path):
    cache = tmp_path / "cache"
    root = _collection(tmp_path)
    assert _run_collection(root, cache) == "compiled from the collection"
    assert len(list(cache.iterdir())) >= 1  # the module (and the package __init__ files the loader synthesises, if any)
    _plant(cache, "from the cache")
    assert _run_collection(root, cache) == "from the cache"


def test_the_collection_loader_compiles_changed_sources_and_ignores_a_cache_others_may_write(tmp_path):
    cache = tmp_path / "cache"
    root = _collection(tmp_path)
    _run_collection(root, cache)
    _collection(tmp_path, "VALUE = 'edited'\n")
    assert _run_collection(root, cache) == "edited"
    _plant(cache, "planted by someone else")
    cache.chmod(0o777)
    assert _run_collection(root, cache) == "edited"
