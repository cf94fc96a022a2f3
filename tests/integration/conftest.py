"""The integration tier runs the playbooks as a user's control node has them: with the helm CLI on PATH
(docs/getting-started.md, section 1), which preflight asks for whenever a run installs charts directly
(plugins/plugin_utils/run_needs.py). Here it is a stand-in that answers only `helm version --short` and
refuses everything else (tests/fixtures/tools/helm-cli/helm); a test about a control node without helm
builds its own PATH (tests/integration/test_preflight.py)."""

from __future__ import annotations

import os
from pathlib import Path

HELM_CLI = Path(__file__).resolve().parents[1] / "fixtures" / "tools" / "helm-cli"

if str(HELM_CLI) not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = os.pathsep.join([str(HELM_CLI), os.environ.get("PATH", "")])
