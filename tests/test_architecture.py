"""The layout's rules, checked from the code itself: the import-linter layers, no reaching into
another module's private names, no module over 600 lines."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("evrcore", "envs", "planners", "critique", "leakbench", "runtime", "testkit")
MAX_LINES = 600


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    if not Path(exe).exists():
        pytest.skip("import-linter is not installed (it comes with the `test` extra)")
    return subprocess.run([exe, "--no-cache"], cwd=root, capture_output=True, text=True,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}, timeout=300)


def _modules() -> list[Path]:
    return [p for pkg in PACKAGES for p in sorted((REPO / pkg).rglob("*.py"))]


def test_layers_hold():
    result = _lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "KEPT" in result.stdout and "BROKEN" not in result.stdout


def test_an_upward_import_breaks_the_contract(tmp_path):
    """The contract is not vacuous: a planner that imports the runtime must fail it."""
    for pkg in PACKAGES:
        shutil.copytree(REPO / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    base = tmp_path / "planners" / "base.py"
    base.write_text(base.read_text() + "\nimport runtime.compose.build  # deliberately upward\n")
    result = _lint_imports(tmp_path)
    assert result.returncode != 0
    assert "BROKEN" in result.stdout and "planners.base -> runtime.compose.build" in result.stdout


def test_no_module_imports_another_modules_private_names():
    offenders = []
    project = set(PACKAGES)
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in project:
                offenders += [f"{path.relative_to(REPO)}: from {node.module} import {a.name}"
                              for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                base = node.value
                if isinstance(base, ast.Name) and _names_project_module(tree, base.id, project):
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno}: {base.id}.{node.attr}")
    assert not offenders, "private names used across modules:\n" + "\n".join(offenders)


def _names_project_module(tree: ast.Module, name: str, project: set[str]) -> bool:
    """Whether ``name`` is bound by an import of one of the project's modules."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if (a.asname or a.name.split(".")[0]) == name and a.name.split(".")[0] in project:
                    return True
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in project:
            if any((a.asname or a.name) == name for a in node.names):
                return True
    return False


def test_no_module_over_the_size_limit():
    long = {str(p.relative_to(REPO)): n for p in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_every_package_says_what_lives_there_and_what_it_may_import():
    for pkg in PACKAGES:
        doc = ast.get_docstring(ast.parse((REPO / pkg / "__init__.py").read_text(encoding="utf-8")))
        assert doc and "import" in doc, f"{pkg}/__init__.py needs a docstring naming what it may import"


PRICE_MAP = "LITELLM_LOCAL_MODEL_COST_MAP"


def test_the_price_map_switch_is_set_in_one_place():
    setters = sorted(str(p.relative_to(REPO)) for p in _modules() if PRICE_MAP in p.read_text())
    assert setters == ["envs/__init__.py"]


@pytest.mark.parametrize("entry", ["testkit.scripted", "runtime.llm.layer", "envs.tau2"])
def test_litellm_is_imported_after_the_switch_is_set(entry):
    # litellm fetches its price map from the network at import unless the switch is already set
    probe = (
        "import os, sys\n"
        "class Watch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'litellm':\n"
        f"            print('switch at litellm import:', os.environ.get('{PRICE_MAP}'))\n"
        "            sys.meta_path.remove(self)\n"
        "sys.meta_path.insert(0, Watch())\n"
        f"import {entry}\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "switch at litellm import: True" in out.stdout


RUNTIME_TOP_LEVEL_LIMIT = 12


def test_the_runtime_top_level_holds_the_commands_only():
    top = sorted(p.stem for p in (REPO / "runtime").glob("*.py") if p.stem != "__init__")
    assert len(top) <= RUNTIME_TOP_LEVEL_LIMIT, f"runtime/ has {len(top)} top-level modules: {top}"
    for name in top:  # every one of them is a command: python -m runtime.<name>
        assert 'if __name__ == "__main__":' in (REPO / "runtime" / f"{name}.py").read_text(), name


def test_every_sub_package_says_what_it_holds():
    missing = [str(init.parent.relative_to(REPO)) for pkg in PACKAGES
               for init in sorted((REPO / pkg).rglob("__init__.py"))
               if len(ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or "") < 80]
    assert not missing, f"sub-packages without a paragraph saying what they hold: {missing}"


def test_the_episode_path_importing_the_measurement_kit_breaks_the_contract(tmp_path):
    for pkg in PACKAGES:
        shutil.copytree(REPO / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    guard = tmp_path / "critique" / "guard" / "leak_guard.py"
    guard.write_text(guard.read_text() + "\nimport leakbench.corpus  # deliberately: the kit at run time\n")
    result = _lint_imports(tmp_path)
    assert result.returncode != 0
    assert "critique.guard.leak_guard -> leakbench.corpus" in result.stdout


def test_a_module_outside_the_guards_users_importing_it_breaks_the_contract(tmp_path):
    """Who may use the guard is checked: the strategy table reaching for it must fail."""
    for pkg in PACKAGES:
        shutil.copytree(REPO / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    strategies = tmp_path / "critique" / "strategies.py"
    strategies.write_text(strategies.read_text() + "\nimport critique.guard.values  # deliberately\n")
    result = _lint_imports(tmp_path)
    assert result.returncode != 0
    assert "critique.strategies -> critique.guard.values" in result.stdout
