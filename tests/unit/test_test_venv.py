"""What the test venv costs each module run that imports the kubernetes client (Makefile: .no-rfc3987-syntax).

The kubernetes client imports kubernetes_validate when it is installed (kubernetes/dynamic/client.py), and so
jsonschema; jsonschema imports rfc3987_syntax when it is installed (jsonschema/_format.py, the "iri" formats),
which builds some 40 Earley parsers at import (1.5 CPU-seconds, py -X importtime). The test venv has
kubernetes_validate (the render tier) and jupyterhub, whose jupyter_events asks for
jsonschema[format-nongpl]: every kubernetes.core module run of the integration tier paid those parsers."""

import subprocess
import sys


def test_importing_the_kubernetes_client_builds_no_rfc3987_parsers():
    """In a fresh interpreter of this venv, as a kubernetes.core module run on the control node starts."""
    probe = "import sys, kubernetes; print(sorted(m for m in sys.modules if m.split('.')[0] in ('rfc3987_syntax', 'lark')))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]", "make dev-deps removes rfc3987-syntax from the test venv: " + proc.stdout
