"""Every Ansible command the documentation gives works as written (issue 43: "every command in the docs
works from the user's own directory against the installed collection; the docs test runs the forms it
can").

What can run here runs elsewhere: tests/integration/test_installed_collection.py runs the tested block of
docs/installing.md and the preflight and ``provision --check`` lines of docs/getting-started.md against
the installed tarball. This file checks every other line the way the tools themselves would: each
``ansible-playbook``, ``ansible-vault``, ``ansible-galaxy``, ``ansible-inventory`` and ``ansible``
command line of README.md, docs/*.md and roles/*/README.md is parsed by ansible-core's own CLI parser
(an option it does not know is refused there, as it would be in the user's shell); each playbook it
names exists; and the guides a user follows with the installed collection (getting-started, installing)
name playbooks by FQCN and inventories in the user's own directory, never a checkout's path.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest
from ansible.cli.adhoc import AdHocCLI
from ansible.cli.galaxy import GalaxyCLI
from ansible.cli.inventory import InventoryCLI
from ansible.cli.playbook import PlaybookCLI
from ansible.cli.vault import VaultCLI

REPO = Path(__file__).resolve().parents[2]
DOCS = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md"), *(REPO / "roles").glob("*/README.md")])
# the guides a user follows with the installed collection, from a directory of their own
INSTALLED_GUIDES = ("docs/getting-started.md", "docs/installing.md")
CLIS = {"ansible-playbook": PlaybookCLI, "ansible-vault": VaultCLI, "ansible-galaxy": GalaxyCLI,
        "ansible-inventory": InventoryCLI, "ansible": AdHocCLI}
FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"`((?:ansible-playbook|ansible-vault|ansible-galaxy|ansible-inventory) [^`]+)`")


def commands(text):
    """The Ansible command lines of a Markdown text: fenced blocks (continuations joined, comments and
    ``$`` prompts dropped) and inline code spans."""
    found = []
    for block in FENCE.findall(text):
        for raw in block.replace("\\\n", " ").splitlines():
            line = raw.strip()
            line = line[2:] if line.startswith("$ ") else line
            if line.split(" ", 1)[0] in CLIS:
                found.append(line)
    found.extend(INLINE.findall(text))
    return found


def argv_of(line):
    """The command's own words: up to the first pipe, ``&&`` or ``;`` (the rest is another command)."""
    argv = []
    for word in shlex.split(line, comments=True):
        if word in ("|", "&&", ";", "||"):
            break
        argv.append(word)
    return argv


ALL = [(str(doc.relative_to(REPO)), line) for doc in DOCS for line in commands(doc.read_text())]


def parse(argv):
    """ansible-core's own parser for argv; returns the parsed options, or raises ValueError with argparse's message."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            cli = CLIS[argv[0]](argv)
            cli.init_parser()  # the parser CLI.parse uses (without its global, set-once context)
            return vars(cli.parser.parse_args(argv[1:]))
    except SystemExit as exc:
        raise ValueError(err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else f"exit {exc.code}") from None


def test_the_docs_give_commands():
    docs = {doc for doc, _line in ALL}
    assert set(INSTALLED_GUIDES) <= docs and "README.md" in docs


@pytest.mark.parametrize("doc, line", ALL, ids=[f"{doc}:{line[:60]}" for doc, line in ALL])
def test_every_ansible_command_parses_and_names_a_playbook_that_exists(doc, line):
    args = parse(argv_of(line))
    if line.startswith("ansible-playbook "):
        for playbook in args.get("args") or []:
            if "<" in playbook:  # a placeholder the prose explains (`cps.gpu_cluster.<name>`)
                assert re.fullmatch(r"cps\.gpu_cluster\.<[a-z-]+>", playbook), (doc, playbook)
            elif playbook.startswith("cps.gpu_cluster."):
                assert (REPO / "playbooks" / (playbook.split(".", 2)[2] + ".yml")).is_file(), (doc, playbook)
            else:
                assert doc not in INSTALLED_GUIDES, f"{doc}: {playbook} names a checkout's playbook; use its FQCN"
                assert (REPO / playbook).is_file(), (doc, playbook)
    if doc in INSTALLED_GUIDES:
        for inventory in args.get("inventory") or []:
            assert inventory.startswith(("~/", "$HOME/")), f"{doc}: -i {inventory} is not in the user's own directory"


@pytest.mark.parametrize("line, refused", [
    ("ansible-playbook cps.gpu_cluster.preflight -i ~/homelab --ask-vault-passs", "unrecognized arguments: --ask-vault-passs"),
    ("ansible-playbook -i ~/homelab", "the following arguments are required: playbook"),
    ("ansible-vault crate ~/homelab/group_vars/all/vault.yml", "invalid choice: 'crate'"),
])
def test_the_parser_refuses_what_the_shell_would(line, refused):
    with pytest.raises(ValueError, match=re.escape(refused)):
        parse(argv_of(line))


def test_a_guide_naming_a_checkout_path_is_caught():
    line = "ansible-playbook playbooks/preflight.yml -i inventories/homelab"
    args = parse(argv_of(line))
    assert args["args"] == ["playbooks/preflight.yml"] and args["inventory"] == ["inventories/homelab"]
    assert not args["inventory"][0].startswith(("~/", "$HOME/"))
