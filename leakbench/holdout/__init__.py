"""A held-out labelled corpus for the leak guard, written independently of the guard and its
own corpora: task facts (:mod:`leakbench.holdout.facts`), ways to write a value
(:mod:`leakbench.holdout.forms`), leaky and clean rationale writers
(:mod:`leakbench.holdout.leaky`, :mod:`leakbench.holdout.clean`).

May import: ``envs`` (task views, supervision, the τ² loader) and the standard library; never
the leak guard or its value readers, never ``runtime``.
"""
