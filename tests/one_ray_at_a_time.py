"""Under pytest-xdist, every test that starts Ray runs on one worker, in file order.

Two Ray instances or clusters at once on a 2-core machine only slow each other (a local
instance's workers take tens of seconds to start when the other core runs a second one), and
the slow suite's "no Ray process left" checks look at the whole machine, so they must never see
another test's Ray. A test says it starts Ray with ``@pytest.mark.ray`` (or a module's
``pytestmark``); this scheduler puts all such tests in one work unit, handed to one worker, and
spreads every other test one by one over the workers, as ``--dist load`` does.

pytest-xdist's own ``--dist loadgroup`` would do this, but with pytest 9.2 and xdist 3.8 the
group never reaches the controller (xdist appends it to an attribute pytest no longer reads), so
the groups were silently ignored. The controller sees only node ids, so the marks are read from
the test files' syntax trees, once per file.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

RAY_UNIT = "tests that start Ray"
EVERY_TEST = "*"


def _is_ray_mark(node: ast.expr) -> bool:
    """``pytest.mark.ray``, called or not."""
    if isinstance(node, ast.Call):
        node = node.func
    return (isinstance(node, ast.Attribute) and node.attr == "ray"
            and isinstance(node.value, ast.Attribute) and node.value.attr == "mark")


def _marks_in(value: ast.expr) -> list[ast.expr]:
    return list(value.elts) if isinstance(value, (ast.List, ast.Tuple)) else [value]


@functools.cache
def ray_tests(path: str) -> frozenset[str]:
    """The names of the test functions (and classes) in ``path`` marked ``ray``, or
    ``{EVERY_TEST}`` when the module's ``pytestmark`` holds the mark."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return frozenset()
    names: set[str] = set()
    for node in tree.body:
        if (isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
                and any(_is_ray_mark(m) for m in _marks_in(node.value))):
            return frozenset({EVERY_TEST})
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and any(_is_ray_mark(d) for d in node.decorator_list)):
            names.add(node.name)
    return frozenset(names)


def starts_ray(nodeid: str, rootdir: Path) -> bool:
    path, _, rest = nodeid.partition("::")
    marked = ray_tests(str(rootdir / path))
    return EVERY_TEST in marked or rest.split("::")[0].split("[")[0] in marked


def make_scheduler(config, log):
    """A LoadScopeScheduling whose scopes are: one unit for the Ray tests, one per other test.
    xdist hands the biggest unit out first, so the Ray unit starts at once on one worker."""
    from xdist.scheduler import LoadScopeScheduling

    rootdir = Path(config.rootpath)

    class OneRayAtATime(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return RAY_UNIT if starts_ray(nodeid, rootdir) else nodeid

    return OneRayAtATime(config, log)
