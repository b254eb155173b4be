"""The free-text guard, as one room: the rules that read a critic's rationale for leaks (values
by allow-list, record references, order words, pointers, device states, quotations, relevance)
and the leak auditor that reads it for meaning.

It serves the paper's free-text protocol (``critique.critic``), where it redacts, and the sealed
arm (``critique.sealed``), where it only *measures*: after the seal nothing that sees the
supervision edits the text the reviser reads. Who may import it is an import-linter contract
(pyproject.toml); it imports nothing of ``critique`` outside this package.
"""
