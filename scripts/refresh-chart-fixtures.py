#!/usr/bin/env python3
"""Refresh the chart fixtures the render tier validates our values against, after a chart pin of
versions.yml changed (a Renovate PR that bumps a chart runs this, and `make render` then shows
whether our values still fit the new chart).

For every Helm chart of versions.yml (datasource=helm) the fixture directory is
tests/fixtures/charts/<chart>-<version>/ with the chart's Chart.yaml, values.yaml,
values.schema.json (when it ships one) and crds/*.yaml. A missing one is pulled with
`helm pull <chart> --repo <registryUrl> --version <version>`, the directories of older versions
of that chart are removed, and tests/fixtures/SOURCES.md gets a line saying where the files came from.

  scripts/refresh-chart-fixtures.py           pull what is missing (needs helm and the network)
  scripts/refresh-chart-fixtures.py --check   exit 1 naming each chart whose fixture is missing (no network)
"""

import argparse
import datetime
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KEPT = ("Chart.yaml", "values.yaml", "values.schema.json")


def _versions_module():
    # versions.py imports cps.gpu_cluster: from a checkout through its collections/ link, from an
    # installed collection through the collections root three levels up.
    for root in (REPO / "collections", *REPO.parents[2:3]):
        if (root / "ansible_collections" / "cps" / "gpu_cluster").is_dir() and str(root) not in sys.path:
            sys.path.insert(0, str(root))
    spec = importlib.util.spec_from_file_location("gpu_cluster_versions", REPO / "plugins" / "plugin_utils" / "versions.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def charts(versions_file):
    """[(chart, version, registryUrl)] of the Helm entries of a versions file."""
    entries = _versions_module().parse_versions(Path(versions_file).read_text())
    return [(e["depName"], e["value"], e["registryUrl"]) for _, e in sorted(entries.items()) if e["datasource"] == "helm"]


# Charts whose fixture directory carries the upstream source's name rather than the chart's.
DIR_NAMES = {"jupyterhub": "zero-to-jupyterhub"}
# Charts the render tier reads as single files in tests/fixtures/management/ (values and schema;
# tests/render/test_render_management.py): <chart>-v<version>-values.yaml is the fixture's marker.
FLAT = ("cert-manager", "rancher", "fleet")


def fixture_dir(charts_dir, chart, version):
    """The fixture of one chart version: a directory, or for FLAT charts its values file."""
    if chart in FLAT:
        tag = version if version.startswith("v") else "v" + version
        return Path(charts_dir).parent / "management" / f"{chart}-{tag}-values.yaml"
    return Path(charts_dir) / (f"{DIR_NAMES.get(chart, chart)}-{version}")


def old_fixtures(charts_dir, chart, target):
    """Fixtures of other versions of the chart (removed once the new one is pulled)."""
    if chart in FLAT:
        keep = target.name[:-len("-values.yaml")]
        return [p for p in sorted(target.parent.glob(f"{chart}-v*")) if not p.name.startswith(keep + "-")]
    name = DIR_NAMES.get(chart, chart)
    return [p for p in sorted(Path(charts_dir).glob(f"{name}-*"))
            if p != target and p.is_dir() and p.name[len(name) + 1:][:1] in "v0123456789"]


def pull(helm, chart, version, repo_url, target):
    """helm pull into a temporary directory; copy the files the render tier reads into target."""
    with tempfile.TemporaryDirectory() as tmp:
        argv = [helm, "pull", chart, "--repo", repo_url, "--version", version, "--untar", "--untardir", tmp]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError("{} failed: {}".format(" ".join(argv), (done.stderr or done.stdout).strip()))
        source = Path(tmp) / chart
        if not (source / "values.yaml").is_file():
            raise RuntimeError(f"helm pull {chart} {version} gave no {chart}/values.yaml")
        if target.name.endswith("-values.yaml"):  # FLAT: values and schema beside the other files
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / "values.yaml", target)
            if (source / "values.schema.json").is_file():
                shutil.copy2(source / "values.schema.json", target.with_name(target.name[:-len(".yaml")] + ".schema.json"))
            return
        target.mkdir(parents=True)
        for name in KEPT:
            if (source / name).is_file():
                shutil.copy2(source / name, target / name)
        for crd in sorted((source / "crds").glob("*.yaml")) if (source / "crds").is_dir() else []:
            shutil.copy2(crd, target / crd.name)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report missing fixtures (exit 1 when one is)")
    parser.add_argument("--versions", default=str(REPO / "versions.yml"))
    parser.add_argument("--charts-dir", default=str(REPO / "tests" / "fixtures" / "charts"))
    parser.add_argument("--sources", default=str(REPO / "tests" / "fixtures" / "SOURCES.md"))
    parser.add_argument("--helm", default="helm")
    args = parser.parse_args(argv)

    missing = [(c, v, r) for c, v, r in charts(args.versions) if not fixture_dir(args.charts_dir, c, v).exists()]
    if args.check:
        for chart, version, repo_url in missing:
            print(f"missing chart fixture {fixture_dir(args.charts_dir, chart, version)}: run scripts/refresh-chart-fixtures.py "
                  f"(helm pull {chart} --repo {repo_url} --version {version})")
        return 1 if missing else 0
    if missing and shutil.which(args.helm) is None:
        print(f"refresh-chart-fixtures: no helm binary ({args.helm}) on PATH; install helm (bindep.txt, profile cli)", file=sys.stderr)
        return 2
    for chart, version, repo_url in missing:
        target = fixture_dir(args.charts_dir, chart, version)
        try:
            pull(args.helm, chart, version, repo_url, target)
        except RuntimeError as exc:
            print(f"refresh-chart-fixtures: {exc}", file=sys.stderr)
            return 1
        for old in old_fixtures(args.charts_dir, chart, target):
            shutil.rmtree(old) if old.is_dir() else old.unlink()
            print(f"removed {old}")
        with open(args.sources, "a") as sources:
            sources.write(f"| {target.parent.name}/{target.name} | | helm pull {chart} --repo {repo_url} --version {version} "
                          f"(scripts/refresh-chart-fixtures.py, {datetime.date.today().isoformat()}) |\n")
        print(f"pulled {target}; now run: make render")
    if not missing:
        print(f"every chart of {args.versions} has its fixture")
    return 0


if __name__ == "__main__":
    sys.exit(main())
