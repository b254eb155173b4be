"""The guide (docs/, built by MkDocs) and the README that points to it: the site builds in strict
mode (a link to a missing page or anchor fails), the README stays short and its links resolve,
and the architecture page names every layer of every import contract in pyproject.toml."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README_MAX_LINES = 250
ARCHITECTURE = REPO / "docs" / "architecture.md"


def _mkdocs_build(root: Path, site: Path) -> subprocess.CompletedProcess:
    for module in ("mkdocs", "material"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (MkDocs and its Material theme come with the "
                        "`test` extra: pip install -e '.[test]')")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=root, capture_output=True, text=True, env=env, timeout=300)


def test_the_guide_builds_in_strict_mode(tmp_path):
    result = _mkdocs_build(REPO, tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "architecture" / "index.html").is_file()


def test_a_broken_link_fails_the_build(tmp_path):
    """Strict mode is on: a link to a page that does not exist stops the build."""
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    page = tmp_path / "docs" / "budgets.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [nowhere](no-such-page.md).\n",
                    encoding="utf-8")
    result = _mkdocs_build(tmp_path, tmp_path / "site")
    assert result.returncode != 0
    assert "no-such-page.md" in result.stdout + result.stderr


def test_readme_is_short():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move the detail into a page of docs/")


def test_readme_links_resolve():
    """The README is no page of the site, so the build does not check it: its relative links must
    name files of the repository (the guide's pages, mostly)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    missing = [t for t in targets
               if not re.match(r"[a-z]+://|#|mailto:", t) and not (REPO / t.split("#")[0]).exists()]
    assert targets and not missing, missing


def _contract_modules(pyproject: dict) -> set[str]:
    """Every module or package an import-linter contract names: root packages, layers (siblings
    split on ``:`` and ``|``, optional ones unwrapped), source, forbidden and independent modules."""
    config = pyproject["tool"]["importlinter"]
    names = set(config.get("root_packages", [])) | ({config["root_package"]} if "root_package" in config else set())
    for contract in config.get("contracts", []):
        for layer in contract.get("layers", []):
            for name in re.split(r"[:|]", layer):
                name = name.strip().strip("()").strip()
                if not name:
                    continue
                containers = contract.get("containers", [])
                names |= {f"{c}.{name}" for c in containers} if containers else {name}
        for key in ("source_modules", "forbidden_modules", "modules", "containers"):
            names |= set(contract.get(key, []))
    return {re.sub(r"(\.\*\*?)+$", "", n) for n in names}


def _named(page: str, module: str) -> bool:
    """``module`` itself appears on the page (``runtime.cli.args`` does not count for ``runtime.cli``)."""
    return re.search(rf"(?<![\w.]){re.escape(module)}(?!\.?\w)", page) is not None


def test_the_architecture_page_names_every_contract_module():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    modules = _contract_modules(pyproject)
    assert {"runtime", "envs", "evrcore"} <= modules  # the contracts were read
    page = ARCHITECTURE.read_text(encoding="utf-8")
    missing = sorted(m for m in modules if not _named(page, m))
    assert not missing, f"docs/architecture.md does not name these modules of the import contracts: {missing}"


def test_the_check_sees_a_missing_module():
    page = ARCHITECTURE.read_text(encoding="utf-8")
    assert _named(page, "runtime.batch")
    assert not _named(page.replace("runtime.batch", "runtime.b_a_t_c_h"), "runtime.batch")
    assert not _named("only `runtime.cli.args` here", "runtime.cli")
    assert _contract_modules({"tool": {"importlinter": {"root_packages": ["a"], "contracts": [
        {"type": "layers", "layers": ["a.x", "a.y : a.z | (a.w)"]},
        {"type": "forbidden", "source_modules": ["a.x"], "forbidden_modules": ["b.**"]}]}}}) == \
        {"a", "a.x", "a.y", "a.z", "a.w", "b"}
