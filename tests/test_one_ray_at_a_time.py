"""The xdist scheduler of tests/one_ray_at_a_time.py, run for real: pytest on 2 workers over a
small project whose tests write down which worker ran them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.one_ray_at_a_time import EVERY_TEST, ray_tests

pytest.importorskip("xdist", reason="the scheduler is pytest-xdist's")
ROOT = Path(__file__).resolve().parents[1]

WHO = textwrap.dedent("""
    import os, pathlib, time
    import pytest

    def ran(name):
        time.sleep(0.3)  # long enough that both workers take tests
        with open(os.environ["WHO_RAN"], "a") as f:
            f.write(f"{name} {os.environ['PYTEST_XDIST_WORKER']}\\n")
""")


def test_the_marks_are_read_from_the_syntax_tree(tmp_path):
    one = tmp_path / "test_one.py"
    one.write_text("import pytest\n\n@pytest.mark.ray\n@pytest.mark.slow\ndef test_a(): pass\n\n"
                   "def test_b(): pass\n\n@pytest.mark.ray()\nclass TestC:\n    def test_d(self): pass\n")
    whole = tmp_path / "test_whole.py"
    whole.write_text("import pytest\npytestmark = [pytest.mark.slow, pytest.mark.ray]\ndef test_a(): pass\n")
    broken = tmp_path / "test_broken.py"
    broken.write_text("def test_a(:\n")
    assert ray_tests(str(one)) == {"test_a", "TestC"}
    assert ray_tests(str(whole)) == {EVERY_TEST}
    assert ray_tests(str(broken)) == frozenset()


def test_every_ray_test_runs_on_one_worker_and_the_rest_on_both(tmp_path):
    (tmp_path / "conftest.py").write_text(textwrap.dedent("""
        import pytest

        @pytest.hookimpl(optionalhook=True)
        def pytest_xdist_make_scheduler(config, log):
            from tests.one_ray_at_a_time import make_scheduler
            return make_scheduler(config, log)
    """))
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    ray: starts Ray\n")
    (tmp_path / "test_cluster.py").write_text(WHO + "pytestmark = pytest.mark.ray\n" + "".join(
        f"def test_c{i}(): ran('ray c{i}')\n" for i in range(4)))
    (tmp_path / "test_mixed.py").write_text(WHO + "".join(
        f"@pytest.mark.ray\ndef test_r{i}(): ran('ray r{i}')\n" if i % 3 == 0 else
        f"def test_p{i}(): ran('plain p{i}')\n" for i in range(12)))
    who_ran = tmp_path / "who_ran.txt"
    env = {**os.environ, "WHO_RAN": str(who_ran), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                           "-o", "addopts=", str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split() for line in who_ran.read_text().splitlines()]
    assert len(rows) == 16
    ray_workers = {worker for kind, _, worker in rows if kind == "ray"}
    plain_workers = {worker for kind, _, worker in rows if kind == "plain"}
    assert len([r for r in rows if r[0] == "ray"]) == 8
    assert len(ray_workers) == 1, rows
    assert plain_workers - ray_workers, f"the other worker ran none of the rest: {rows}"
