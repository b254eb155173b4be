"""The leak guard's measurement kit: labelled corpora of critiques (leaky and clean, written by
generators built by class), the scorers, and ``python -m leakbench.evaluate`` that reports the
guard's catch and false-alarm rates per class.

It measures the guard and never runs in an episode: nothing on the episode path (``runtime``
apart from its ``leak_eval`` command, ``critique``, ``planners``, ``evrcore``, ``envs``) may
import it; an import-linter contract says so. May import ``critique``, ``evrcore`` and ``envs``.
"""
