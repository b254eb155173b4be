"""``python -m envs.docker build|tag|status|clean`` (see :mod:`envs.docker.cli`)."""

import sys

from envs.docker.cli import main

sys.exit(main())
