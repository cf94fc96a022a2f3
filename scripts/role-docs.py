#!/usr/bin/env python3
"""Generate each role's variables reference from its meta/argument_specs.yml into its README.md.

For every roles/<role>/meta/argument_specs.yml the part of roles/<role>/README.md between

  <!-- BEGIN role-docs: generated from meta/argument_specs.yml by scripts/role-docs.py; do not edit -->
  <!-- END role-docs -->

is rewritten: per entry point its short description (and, for entry points other than ``main``,
its description: ``main``'s is the README's own introduction), then a table of its options (name,
type with elements, required, default, description with choices), nested suboptions as rows
``parent.child`` (``parent[].child`` for a list of dicts). A default the spec does not give but
the role's defaults/main.yml sets is shown with ``(defaults/main.yml)`` after it. Ansible's doc
markup (C(), O(), V(), I(), B(), L(), U(), E(), M(), RV(), P(), HORIZONTALLINE) becomes Markdown,
in the generated part and in the hand-written prose around it (outside code spans and fences).

A README without the markers gets them where its ``## Variables`` table is (that table is
replaced only when every variable it names is an option of the specs, i.e. it duplicates them;
otherwise the block goes at the end of that section), else a ``## Variables`` section is appended.

  scripts/role-docs.py           write the READMEs (make docs)
  scripts/role-docs.py --check   write nothing; exit 1 naming each stale README
  scripts/role-docs.py --roles-dir DIR   another roles directory (the tests use a copy)
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
BEGIN = "<!-- BEGIN role-docs: generated from meta/argument_specs.yml by scripts/role-docs.py; do not edit -->"
END = "<!-- END role-docs -->"
MAX_DEFAULT = 120

# Markup names, longest first so RV( is not read as V(. The semantic ones take backslash escapes.
_MARKUP = re.compile(r"(?<![A-Za-z0-9_])(RV|[CIBMUELOVP])\(")
_ESCAPING = {"E", "O", "V", "RV", "P"}


def code(text: str) -> str:
    """``text`` as a Markdown code span (longer fences when it holds backticks)."""
    if not text:
        return '`""`'
    run = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (run + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or run else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _close(text: str, start: int, escaping: bool) -> tuple[str, int] | None:
    """The argument of a markup call starting at ``start`` and the index after its ``)``."""
    out = []
    i = start
    while i < len(text):
        ch = text[i]
        if escaping and ch == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
            continue
        if ch == ")":
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    return None


def _option_name(value: str) -> str:
    # O(fqcn#type:option.sub=value) and RV() name an option of another plugin: keep the option.
    if "#" in value.split("=", 1)[0] and ":" in value:
        value = value.split(":", 1)[1]
    return value


def markup_to_markdown(text: str) -> str:
    """Ansible documentation markup in ``text`` as Markdown."""
    text = text.replace("HORIZONTALLINE", "\n\n---\n\n")
    out: list[tuple[bool, str]] = []  # (is code, text); adjacent code spans become one
    pos = 0
    while True:
        match = _MARKUP.search(text, pos)
        closed = _close(text, match.end(), match.group(1) in _ESCAPING) if match else None
        if closed is None:
            out.append((False, text[pos:]))
            break
        arg, end = closed
        out.append((False, text[pos : match.start()]))
        literal = _literal(match.group(1), arg)
        if literal is not None and out[-1] == (False, "") and len(out) > 1 and out[-2][0]:
            out.pop()
            out[-1] = (True, out[-1][1] + literal)
        else:
            out.append((True, literal) if literal is not None else (False, _render(match.group(1), arg)))
        pos = end
    return "".join(code(t) if is_code else t for is_code, t in out)


def _literal(name: str, arg: str) -> str | None:
    """The text of a markup call rendered as code, None for the others."""
    if name in {"O", "RV"}:
        return _option_name(arg)
    if name == "P":
        return arg.split("#", 1)[0]
    if name in {"C", "E", "M", "V"}:
        return arg
    return None


def _render(name: str, arg: str) -> str:
    if name == "I":
        return f"*{arg}*"
    if name == "B":
        return f"**{arg}**"
    if name == "U":
        return f"<{arg}>"
    if name == "L":
        label, _, url = arg.rpartition(",")
        return f"[{label.strip()}]({url.strip()})" if label else f"<{url.strip()}>"
    return code(_literal(name, arg) or "")


def _paragraphs(value) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    return [" ".join(str(item).split()) for item in items]


def cell(text: str) -> str:
    """``text`` fit for a Markdown table cell: one line, pipes escaped (also in code spans)."""
    return " ".join(text.split()).replace("|", "\\|")


def format_default(value) -> str:
    """A default as an inline code span, in YAML's flow style."""
    if isinstance(value, str):
        return code(value)
    dumped = yaml.safe_dump(value, default_flow_style=True, width=10**6, sort_keys=False).strip()
    if dumped.endswith("\n..."):
        dumped = dumped[: -len("\n...")]
    return code(dumped.strip())


def format_type(spec: dict) -> str:
    kind = spec.get("type", "str")
    if spec.get("elements"):
        return f"{kind} of {spec['elements']}"
    return kind


def option_rows(options: dict, defaults: dict | None = None, prefix: str = "") -> list[list[str]]:
    """Table rows (name, type, required, default, description) of ``options`` and their suboptions."""
    rows = []
    for name, given in (options or {}).items():
        spec = given or {}
        full = f"{prefix}{name}"
        if "default" in spec:
            default = format_default(spec["default"])
        elif not prefix and defaults is not None and name in defaults:
            shown = format_default(defaults[name])
            inline = len(shown) <= MAX_DEFAULT and "\n" not in str(defaults[name]).strip()
            default = f"{shown} (defaults/main.yml)" if inline else "computed in defaults/main.yml"
        else:
            default = ""
        description = " ".join(markup_to_markdown(p) for p in _paragraphs(spec.get("description")))
        if spec.get("choices"):
            choices = ", ".join(format_default(c) for c in spec["choices"])
            description = f"{description} Choices: {choices}.".strip()
        if spec.get("no_log"):
            description = f"{description} Secret (no_log).".strip()
        rows.append([code(full), format_type(spec), "yes" if spec.get("required") else "no", default, description])
        if spec.get("options"):
            child = f"{full}[]." if spec.get("type") == "list" else f"{full}."
            rows.extend(option_rows(spec["options"], None, child))
    return rows


def table(rows: list[list[str]]) -> str:
    lines = ["| variable | type | required | default | description |", "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def generate(specs: dict, defaults: dict | None = None) -> str:
    """The Markdown of a role's argument specs (the text between the markers)."""
    parts = []
    entries = specs.get("argument_specs") or {}
    order = sorted(entries, key=lambda e: (e != "main", e))
    for entry in order:
        spec = entries[entry] or {}
        parts.append(f"### Entry point `{entry}`")
        short = markup_to_markdown(" ".join(str(spec.get("short_description", "")).split()))
        tasks_from = "" if entry == "main" else f" (`tasks_from: {entry}.yml`)"
        if short or tasks_from:
            parts.append(f"{short}{tasks_from}".strip())
        paragraphs = [markup_to_markdown(p) for p in _paragraphs(spec.get("description"))] if entry != "main" else []
        if paragraphs:
            parts.append("\n".join(f"- {p}" for p in paragraphs) if len(paragraphs) > 1 else paragraphs[0])
        rows = option_rows(spec.get("options") or {}, defaults)
        parts.append(table(rows) if rows else "No options.")
    return "\n\n".join(parts)


def block(specs: dict, defaults: dict | None = None) -> str:
    return f"{BEGIN}\n\n{generate(specs, defaults)}\n\n{END}"


_CODE = re.compile(r"(```.*?```|`[^`\n]*`)", re.S)


def convert_prose(text: str) -> str:
    """Markup in hand-written Markdown converted, outside fenced blocks and code spans."""
    pieces = _CODE.split(text)
    return "".join(p if i % 2 else markup_to_markdown(p) for i, p in enumerate(pieces))


def _variables_table(lines: list[str]) -> tuple[int, int, int] | None:
    """(table start, table end, section end) of the first table under a Variables heading."""
    for i, line in enumerate(lines):
        head = re.match(r"^(#{2,})\s+Variables\s*$", line, re.I)
        if not head:
            continue
        level = len(head.group(1))
        end = len(lines)
        for j in range(i + 1, len(lines)):
            other = re.match(r"^(#{1,6})\s", lines[j])
            if other and len(other.group(1)) <= level:
                end = j
                break
        for j in range(i + 1, end):
            if lines[j].startswith("|"):
                k = j
                while k < end and lines[k].startswith("|"):
                    k += 1
                return j, k, end
        return end, end, end
    return None


def _table_names(lines: list[str]) -> set[str]:
    names = set()
    for line in lines[2:]:
        first = line.strip().strip("|").split("|", 1)[0]
        names.update(re.findall(r"`([^`]+)`", first))
    return names


def spec_options(specs: dict) -> set[str]:
    names = set()
    for entry in (specs.get("argument_specs") or {}).values():
        names.update((entry or {}).get("options") or {})
    return names


def render_readme(readme: str, specs: dict, defaults: dict | None = None) -> str:
    """The README with its generated block up to date and its prose free of markup."""
    new_block = block(specs, defaults)
    if BEGIN in readme and END in readme:
        before, rest = readme.split(BEGIN, 1)
        after = rest.split(END, 1)[1]
        return convert_prose(before) + new_block + convert_prose(after)
    lines = readme.rstrip("\n").split("\n")
    found = _variables_table(lines)
    if found is None:
        return convert_prose(readme.rstrip("\n")) + "\n\n## Variables\n\n" + new_block + "\n"
    start, stop, section_end = found
    if start < stop and _table_names(lines[start:stop]) <= spec_options(specs):
        head, tail = lines[:start], lines[stop:]
    else:
        head, tail = lines[:section_end], lines[section_end:]
        while head and not head[-1].strip():
            head.pop()
    text = convert_prose("\n".join(head).rstrip("\n")) + "\n\n" + new_block
    if tail:
        text += "\n\n" + convert_prose("\n".join(tail).lstrip("\n"))
    return text.rstrip("\n") + "\n"


def role_readme(role: Path) -> tuple[Path, str] | None:
    """The README path of ``role`` and its up-to-date text (None without argument specs)."""
    spec_path = role / "meta" / "argument_specs.yml"
    if not spec_path.is_file():
        return None
    specs = yaml.safe_load(spec_path.read_text()) or {}
    defaults_path = role / "defaults" / "main.yml"
    defaults = (yaml.safe_load(defaults_path.read_text()) or {}) if defaults_path.is_file() else {}
    readme = role / "README.md"
    current = readme.read_text() if readme.is_file() else f"# {role.name}\n"
    return readme, render_readme(current, specs, defaults)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each stale README")
    parser.add_argument("--roles-dir", type=Path, default=REPO / "roles")
    args = parser.parse_args(argv)
    stale, missing = [], []
    for role in sorted(p for p in args.roles_dir.iterdir() if p.is_dir()):
        result = role_readme(role)
        if result is None:
            missing.append(role.name)
            continue
        path, text = result
        if path.is_file() and path.read_text() == text:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(text)
    for name in missing:
        print(f"{name}: no meta/argument_specs.yml, README not generated", file=sys.stderr)
    if args.check and stale:
        for path in stale:
            print(f"stale: {path} (run make docs)", file=sys.stderr)
        return 1
    for path in stale:
        print(f"wrote {path}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
