# -*- coding: utf-8 -*-
# Copyright: (c) 2026, cps.gpu_cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the k3s_server_probe module looks at on a server, in one module run: whether paths exist (as
ansible.builtin.stat without follow: the path itself, a dangling link included), the text of small
files (as ansible.builtin.slurp, decoded), and whether an HTTP(S) endpoint answers at all (as
ansible.builtin.uri with validate_certs false, any status: an answer is an answer)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import socket
import ssl

try:
    from urllib.error import HTTPError, URLError
    from urllib.request import HTTPSHandler, ProxyHandler, build_opener
except ImportError:  # pragma: no cover - Python 2 has no k3s server to probe
    HTTPError = URLError = None

NO_ANSWER = -1
# markers and token files are a line each; a larger file is not what these paths name
READ_LIMIT = 65536


def exists(path):
    """Whether the path itself exists (a dangling symlink does, as stat without follow says)."""
    return os.path.lexists(path)


def read_text(path, limit=READ_LIMIT):
    """The file's text ('' when it is absent, not a regular file, unreadable or larger than limit)."""
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > limit:
            return ""
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except (OSError, IOError):
        return ""


def api_status(url, timeout):
    """The HTTP status the endpoint answers with (any status, its certificate not checked), else NO_ANSWER.
    No proxy: the URL is the server's own (127.0.0.1), which a node's proxy settings must not take."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    opener = build_opener(ProxyHandler({}), HTTPSHandler(context=context))
    try:
        with opener.open(url, timeout=timeout) as answer:
            return int(answer.status)
    except HTTPError as error:
        return int(error.code)
    except (URLError, socket.timeout, OSError, ValueError, ssl.SSLError):
        return NO_ANSWER


def probe(paths=None, files=None, api_url=None, timeout=5):
    """{'exists': {name: bool}, 'content': {name: text}[, 'api_status': int]} for the named paths and files."""
    result = {
        "exists": dict((name, exists(path)) for name, path in sorted((paths or {}).items())),
        "content": dict((name, read_text(path)) for name, path in sorted((files or {}).items())),
    }
    if api_url:
        result["api_status"] = api_status(api_url, timeout)
    return result
