"""Honest test doubles and kits for testing with this runtime.

Nothing here stands in for a model a user would evaluate: scripted models replay what a test
tells them (e.g. a task's reference actions) to prove the plumbing, not a model's ability.
"""
