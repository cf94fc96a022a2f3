"""scripts/role-docs.py: the role READMEs' variables reference is generated from
meta/argument_specs.yml, Ansible's doc markup becomes Markdown, and the committed READMEs are up
to date (issue 16, "Self-service")."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "role-docs.py"

_spec = importlib.util.spec_from_file_location("role_docs", SCRIPT)
role_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(role_docs)

# Raw markup a Markdown reader would see literally.
RAW_MARKUP = re.compile(r"(?<![A-Za-z0-9_])(RV|[CIBMUELOVP])\([^)]*\)|HORIZONTALLINE")


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize(
    ("markup", "markdown"),
    [
        ("C(/etc/exports)", "`/etc/exports`"),
        ("O(k3s_node_start)", "`k3s_node_start`"),
        ("O(k3s_node_start=false)", "`k3s_node_start=false`"),
        ("O(community.general.foo#module:bar.baz)", "`bar.baz`"),
        ("V(restricted)", "`restricted`"),
        ("I(not) world-writable", "*not* world-writable"),
        ("B(2049)", "**2049**"),
        ("see L(the docs,https://example.org/a?b=c)", "see [the docs](https://example.org/a?b=c)"),
        ("L(a, b,https://example.org)", "[a, b](https://example.org)"),
        ("U(https://example.org)", "<https://example.org>"),
        ("E(KUBECONFIG)", "`KUBECONFIG`"),
        ("M(cps.gpu_cluster.k3s_token)", "`cps.gpu_cluster.k3s_token`"),
        ("RV(gpus)", "`gpus`"),
        ("P(cps.gpu_cluster.pinned#filter)", "`cps.gpu_cluster.pinned`"),
        ("a HORIZONTALLINE b", "a \n\n---\n\n b"),
        (r"O(a\)b)", "`a)b`"),
        ("C(a`b)", "`` a`b ``"),
        ("O(k3s_node_backup_dir)C(/<host>/)", "`k3s_node_backup_dir/<host>/`"),
        ("C(a) and C(b)", "`a` and `b`"),
        ("PCI(e) and GPIO(x) stay", "PCI(e) and GPIO(x) stay"),
        ("C(unclosed", "C(unclosed"),
        ("", ""),
    ],
)
def test_markup_to_markdown(markup, markdown):
    assert role_docs.markup_to_markdown(markup) == markdown


def test_prose_outside_code_is_converted_and_code_is_kept():
    text = "Uses C(x).\n\n```yaml\nmsg: C(kept)\n```\nInline `C(kept)` too, O(y) not."
    assert role_docs.convert_prose(text) == "Uses `x`.\n\n```yaml\nmsg: C(kept)\n```\nInline `C(kept)` too, `y` not."


@pytest.mark.parametrize(
    ("value", "shown"),
    [("", '`""`'), ("0770", "`0770`"), (True, "`true`"), (900, "`900`"), ([], "`[]`"), ({}, "`{}`"),
     (["a", "b"], "`[a, b]`"), ({"gpu": "true"}, "`{gpu: 'true'}`")],
)
def test_format_default(value, shown):
    assert role_docs.format_default(value) == shown


SPECS = {
    "argument_specs": {
        "uninstall": {
            "short_description": "Remove it",
            "description": ["First C(step).", "Second step."],
            "options": {"demo_dir": {"type": "path", "description": "Where."}},
        },
        "main": {
            "short_description": "Demo role",
            "description": "Main's own text, left to the README's introduction.",
            "options": {
                "demo_exports": {
                    "type": "list",
                    "elements": "dict",
                    "description": ["Exports; each has C(path).", "Second paragraph."],
                    "options": {
                        "path": {"type": "path", "required": True, "description": "Directory."},
                        "auth": {
                            "type": "dict",
                            "description": "Auth.",
                            "options": {"mode": {"type": "str", "choices": ["a", "b"], "default": "a", "description": "O(demo_mode=b) | pipes"}},
                        },
                    },
                },
                "demo_token": {"type": "str", "no_log": True, "description": "Token."},
                "demo_mode": {"type": "str", "default": "direct", "description": "Mode."},
                "demo_computed": {"type": "str", "description": "From defaults."},
            },
        },
    }
}


def test_option_rows_nest_suboptions():
    rows = role_docs.option_rows(SPECS["argument_specs"]["main"]["options"], {"demo_computed": "{{ x | default('y') }}", "demo_mode": "ignored"})
    names = [row[0] for row in rows]
    assert names == ["`demo_exports`", "`demo_exports[].path`", "`demo_exports[].auth`", "`demo_exports[].auth.mode`",
                     "`demo_token`", "`demo_mode`", "`demo_computed`"]
    by_name = {row[0]: row for row in rows}
    assert by_name["`demo_exports`"][1:] == ["list of dict", "no", "", "Exports; each has `path`. Second paragraph."]
    assert by_name["`demo_exports[].path`"][1:3] == ["path", "yes"]
    assert by_name["`demo_exports[].auth.mode`"][3:] == ["`a`", "`demo_mode=b` | pipes Choices: `a`, `b`."]
    assert by_name["`demo_token`"][4] == "Token. Secret (no_log)."
    assert by_name["`demo_mode`"][3] == "`direct`", "the spec's default wins over defaults/main.yml"
    assert by_name["`demo_computed`"][3] == "`{{ x | default('y') }}` (defaults/main.yml)"


def test_long_computed_default_is_not_inlined():
    rows = role_docs.option_rows({"demo_x": {"type": "list"}}, {"demo_x": "{{ a }}\n{{ b }}\n"})
    assert rows[0][3] == "computed in defaults/main.yml"


def test_table_escapes_pipes_in_cells():
    table = role_docs.table([["`a`", "str", "no", "`{{ x | y }}`", "one | two"]])
    assert table.splitlines()[2] == "| `a` | str | no | `{{ x \\| y }}` | one \\| two |"


def test_generate_main_first_other_entry_points_with_description():
    text = role_docs.generate(SPECS, {})
    assert text.index("### Entry point `main`") < text.index("### Entry point `uninstall`")
    assert "Main's own text" not in text
    assert "Remove it (`tasks_from: uninstall.yml`)\n\n- First `step`.\n- Second step." in text
    assert "| `demo_exports[].auth.mode` |" in text
    assert not RAW_MARKUP.search(text)


README_TABLE = """# demo

Intro with C(markup).

## Variables

Prose kept.

| variable | default | description |
|---|---|---|
| `demo_mode` | `direct` | Mode. |

## Example

```yaml
x: C(kept)
```
"""


def test_render_readme_replaces_a_duplicate_table_and_is_stable():
    out = role_docs.render_readme(README_TABLE, SPECS, {})
    assert "| `demo_mode` | `direct` | Mode. |" not in out
    assert out.startswith("# demo\n\nIntro with `markup`.\n\n## Variables\n\nProse kept.\n\n" + role_docs.BEGIN)
    assert out.index(role_docs.END) < out.index("## Example")
    assert "x: C(kept)" in out
    assert role_docs.render_readme(out, SPECS, {}) == out


def test_render_readme_keeps_a_table_that_is_not_a_duplicate():
    readme = README_TABLE.replace("`demo_mode`", "`demo_other`")
    out = role_docs.render_readme(readme, SPECS, {})
    assert "| `demo_other` | `direct` | Mode. |" in out
    assert out.index("| `demo_other`") < out.index(role_docs.BEGIN) < out.index("## Example")


def test_render_readme_appends_without_a_variables_section():
    out = role_docs.render_readme("# demo\n\nText.\n", SPECS, {})
    assert out.startswith("# demo\n\nText.\n\n## Variables\n\n" + role_docs.BEGIN)
    assert out.endswith(role_docs.END + "\n")


def test_render_readme_rewrites_only_between_markers():
    readme = f"# demo\n\nBefore.\n\n{role_docs.BEGIN}\nold\n{role_docs.END}\n\nAfter.\n"
    out = role_docs.render_readme(readme, SPECS, {})
    assert "old" not in out
    assert out.startswith("# demo\n\nBefore.\n\n" + role_docs.BEGIN) and out.endswith(role_docs.END + "\n\nAfter.\n")


def test_every_role_has_argument_specs_and_an_up_to_date_readme():
    done = run("--check")
    assert done.returncode == 0, f"{done.stderr}\nrun `make docs` and commit the READMEs"


@pytest.mark.parametrize("readme", sorted((REPO / "roles").glob("*/README.md")), ids=lambda p: p.parent.name)
def test_readme_has_no_raw_markup(readme):
    text = re.sub(r"```.*?```|`[^`\n]*`", "", readme.read_text(), flags=re.S)
    assert not RAW_MARKUP.search(text), f"{readme}: raw Ansible markup in Markdown: {RAW_MARKUP.search(text).group(0)}"


def test_check_fails_on_a_stale_readme_and_write_fixes_it(tmp_path):
    roles = tmp_path / "roles"
    shutil.copytree(REPO / "roles" / "nfs_client", roles / "nfs_client")
    assert run("--check", "--roles-dir", roles).returncode == 0
    spec_path = roles / "nfs_client" / "meta" / "argument_specs.yml"
    specs = yaml.safe_load(spec_path.read_text())
    specs["argument_specs"]["main"]["options"]["nfs_client_packages"]["description"] = "Packages, changed O(here)."
    spec_path.write_text(yaml.safe_dump(specs))
    readme = roles / "nfs_client" / "README.md"
    before = readme.read_text()
    stale = run("--check", "--roles-dir", roles)
    assert stale.returncode == 1
    assert "nfs_client/README.md" in stale.stderr
    assert readme.read_text() == before, "--check writes nothing"
    assert run("--roles-dir", roles).returncode == 0
    assert "Packages, changed `here`." in readme.read_text()
    assert run("--check", "--roles-dir", roles).returncode == 0


def test_a_role_without_argument_specs_is_named(tmp_path):
    (tmp_path / "roles" / "bare" / "tasks").mkdir(parents=True)
    done = run("--check", "--roles-dir", tmp_path / "roles")
    assert done.returncode == 1
    assert "bare: no meta/argument_specs.yml" in done.stderr
