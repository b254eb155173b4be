"""A held-out labelled corpus for the leak guard, written independently of the guard and its
own corpora: task facts (:mod:`critique.holdout.facts`), ways to write a value
(:mod:`critique.holdout.forms`), leaky and clean rationale writers
(:mod:`critique.holdout.leaky`, :mod:`critique.holdout.clean`).

May import: ``envs`` (task views, supervision, the τ² loader) and the standard library; never
the leak guard or its value readers, never ``runtime``.
"""
