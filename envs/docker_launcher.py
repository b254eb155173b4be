"""The former name of :mod:`envs.docker`, kept so scripts and habits keep working.

``from envs.docker_launcher import X`` gets the same object as ``from envs.docker import X``, and
``python -m envs.docker_launcher build|tag|status|clean`` runs ``python -m envs.docker``. New code
imports :mod:`envs.docker`.
"""

import sys

from envs.docker import *  # noqa: F401,F403 - the alias re-exports the package's public names
from envs.docker import __all__  # noqa: F401

if __name__ == "__main__":
    from envs.docker.cli import main

    sys.exit(main(prog="python -m envs.docker_launcher"))
