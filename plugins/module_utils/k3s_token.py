# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The k3s cluster token: its safe forms and the decision which token a cluster uses (run by the
k3s_token module on the token server; the filter k3s_token_problem checks k3s_token with it in preflight)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re
import secrets

# Characters that survive a systemd EnvironmentFile and the k3s short-token form:
# no '%' (systemd specifier), no quotes, spaces, '#', '$', '\\' or ':' (the full
# token form uses '::' as separator).
TOKEN_SAFE = re.compile(r"^[A-Za-z0-9._-]{16,256}\Z")
# The secure form k3s writes to /var/lib/rancher/k3s/server/token: K10<sha256 of the
# cluster CA>::<user>:<secret>. Joining nodes given it verify the CA they talk to.
TOKEN_FULL = re.compile(r"^K10([0-9a-f]{64})::([a-z]+):([A-Za-z0-9._-]{1,256})\Z")
TOKEN_BYTES = 32


def generate_token(nbytes=TOKEN_BYTES):
    """Return a new cryptographically random short token (hex, 2*nbytes characters)."""
    if nbytes < 16:
        raise ValueError("a k3s token needs at least 16 random bytes, got %d" % nbytes)
    return secrets.token_hex(nbytes)


def token_problem(token):
    """Return why a token is unsafe for a systemd env file, or '' when it is fine.

    Accepts the short form (16-256 characters of A-Za-z0-9._-) and the full form
    K10<ca-hash>::server:<secret>; surrounding whitespace is ignored.
    """
    if not isinstance(token, str) or not token.strip():
        return "the k3s token is empty"
    token = token.strip()
    if TOKEN_FULL.match(token):
        return ""
    if "%" in token:
        return "the k3s token contains '%', which systemd reads as a specifier in env files"
    if not TOKEN_SAFE.match(token):
        return ("the k3s token must be 16-256 characters of A-Z a-z 0-9 . _ - "
                "(the short-token form, safe in systemd env files) or the full form "
                "K10<ca-hash>::server:<secret> from /var/lib/rancher/k3s/server/token")
    return ""


def token_secret(token):
    """The secret part of a token: <secret> of K10<hash>::server:<secret>, or the short token."""
    token = (token or "").strip()
    match = TOKEN_FULL.match(token)
    return match.group(3) if match else token


def token_plan(stored, given=None, running=None, initialised=False, recorded=None, identity_recorded=False):  # noqa: PLR0917 - the module's options
    """Decide the cluster token: returns (token, generated); ValueError says what to change.

    stored: the collection's token file on the token server (None when absent);
    given: k3s_token (None when unset); running: /var/lib/rancher/k3s/server/token of an
    initialised server (None when absent); initialised: whether any server already runs a
    cluster; recorded: the token the control node keeps for this cluster (the state directory's
    server-token, else the newest reset or restore backup; None when none); identity_recorded:
    the state directory records this cluster's identity. Once a cluster exists its token never
    changes here: a k3s_token whose secret differs from the cluster's is refused and the stored
    token is kept. A cluster whose servers were all rebuilt starts again with its recorded token
    (its etcd snapshots are encrypted with it: k3s pkg/cluster/storage.go), and a cluster whose
    identity is recorded never gets a new random token. Surrounding whitespace never counts as a
    difference.
    """
    stored = (stored or "").strip() or None
    given = (given or "").strip() or None
    running = (running or "").strip() or None
    recorded = (recorded or "").strip() or None
    if given is not None:
        problem = token_problem(given)
        if problem:
            raise ValueError("%s: set k3s_token to a safe value or leave it unset" % problem)
    reference = running or stored
    if given is not None and reference is not None and token_secret(given) != token_secret(reference):
        raise ValueError(
            "k3s_token differs from the token this cluster was initialised with, and a cluster's token "
            "cannot be changed by editing k3s_token (every node would carry a token the cluster "
            "rejects); nothing was changed. Remove k3s_token or set it to the current token (sudo cat "
            "/var/lib/rancher/k3s/server/token on a server). To rotate it: run 'k3s token rotate "
            "--new-token <new>' on a server, then set k3s_token to the new token and re-run (docs/k3s.md, "
            "Token rotation).")
    if stored is not None:
        return stored, False
    if given is not None and reference is None and recorded is not None \
            and token_secret(given) != token_secret(recorded):
        raise ValueError(
            "k3s_token differs from the token recorded for this cluster on the control node (the state "
            "directory's server-token or its newest backup): its etcd snapshots only restore with the recorded "
            "one; nothing was changed. Remove k3s_token (the recorded token is used) or, for a new cluster, "
            "remove the state directory's cluster-id and server-token first.")
    if given is not None:
        return given, False
    if running is not None:
        return running, False
    if recorded is not None and not initialised:
        return token_secret(recorded), False
    if identity_recorded and not initialised:
        raise ValueError(
            "this inventory's cluster was created before (the state directory records its identity) but its "
            "server token is recorded nowhere on the control node: a new random token could never open the "
            "cluster's etcd snapshots. Set k3s_token to the cluster's token (a reset or restore backup keeps it: "
            "<backup dir>/<time>/<server>/cluster-token), or, to start a new cluster, remove the state "
            "directory's cluster-id first; nothing was changed.")
    if initialised:
        raise ValueError(
            "the cluster is already initialised but no server's token could be read: set k3s_token to "
            "the cluster's token (sudo cat /var/lib/rancher/k3s/server/token on a server) instead of "
            "generating a new one")
    return generate_token(), True
