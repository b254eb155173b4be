"""The guard measured from the outside: the committed corpus (made by
``critique.leak_corpus``), catch and false-alarm rates per kind, and the command that prints
them. The default suite measures a seeded sample; the full corpus runs under ``slow``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from critique import leak_eval
from critique.leak_corpus import CORPUS, load
from critique.leak_guard import LeakGuard

REPO = Path(__file__).resolve().parent.parent
SAMPLE = 240


@pytest.fixture(scope="module")
def corpus():
    if not CORPUS.exists():
        pytest.skip(f"no corpus at {CORPUS}; build it with python -m critique.leak_corpus")
    return load()


def test_corpus_covers_the_environments_and_kinds(corpus):
    assert len(corpus) >= 600
    assert {c["domain"] for c in corpus} >= {"airline", "retail", "telecom", "toolsandbox-shaped"}
    kinds = {c["kind"] for c in corpus}
    for prefix in ("id_", "amount_", "date_", "seq_", "hidden_", "clean_p0", "clean_offered",
                   "clean_policy", "clean_view"):
        assert any(k.startswith(prefix) for k in kinds), prefix
    leaky = sum(c["leak"] for c in corpus)
    assert 0.3 < leaky / len(corpus) < 0.7


def test_rules_meet_the_targets_on_a_sample(corpus):
    m = leak_eval.measure(leak_eval.sample(corpus, SAMPLE, seed=0))
    print(leak_eval.render(m))
    assert m.leak.n > 60 and m.clean.n > 60
    assert m.catch >= leak_eval.CATCH_TARGET, leak_eval.render(m)
    assert m.false_alarms <= leak_eval.FALSE_ALARM_TARGET, leak_eval.render(m)


def test_the_measurement_fails_a_guard_without_canonical_forms(corpus, monkeypatch):
    """Not vacuous: a guard that only knows exact spellings misses the targets."""
    monkeypatch.setattr(LeakGuard, "_sequence", lambda self, text: None)
    monkeypatch.setattr(LeakGuard, "_partial_spans", lambda self, g, text: [])
    m = leak_eval.measure(leak_eval.sample(corpus, SAMPLE, seed=0))
    assert m.catch < leak_eval.CATCH_TARGET
    assert not m.meets_targets()


def test_the_measurement_counts_false_alarms(corpus, monkeypatch):
    """A guard that treats p0 as secret (the old behaviour) fires on restated plans."""
    original = LeakGuard.__init__

    def without_p0(self, view, supervision, plan=None, min_sequence=2):
        original(self, view, supervision, None, min_sequence)

    monkeypatch.setattr(LeakGuard, "__init__", without_p0)
    restated = [c for c in corpus if c["kind"] == "clean_p0_restated"][:60]
    m = leak_eval.measure(restated)
    assert m.false_alarms > leak_eval.FALSE_ALARM_TARGET


@pytest.mark.slow
def test_rules_meet_the_targets_on_the_whole_corpus(corpus):
    m = leak_eval.measure(corpus)
    print(leak_eval.render(m))
    assert m.meets_targets(), leak_eval.render(m)


@pytest.mark.slow
def test_the_committed_corpus_is_what_the_generator_makes(corpus):
    from critique.leak_corpus import build

    assert build() == corpus


def _command(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "critique.leak_eval", *args], cwd=REPO, text=True,
                          capture_output=True, timeout=600,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "LITELLM_LOCAL_MODEL_COST_MAP": "True"})


def test_command_prints_rates_per_kind_with_the_scripted_auditor(corpus):
    result = _command("--sample", "40", "--seed", "3")
    assert result.returncode in (0, 1), result.stderr[-2000:]
    out = result.stdout
    assert "+ auditor" in out and "catch rate (leaky)" in out and "false alarms (clean)" in out
    assert "seq_" in out or "id_" in out


def test_command_rejects_a_bad_sample_in_one_line():
    result = _command("--sample", "0", "--no-auditor")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "--sample" in result.stderr
    assert "Traceback" not in result.stderr
