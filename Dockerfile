# turncheck GitHub Action image. The runner builds this on every job, mounts the
# workspace over /github/workspace and runs the ENTRYPOINT as root.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# git reads base-commit versions of suites; the workspace belongs to the runner's
# user, so trust every directory system-wide (--global would land in $HOME).
RUN apt-get update \
    && apt-get install -y --no-install-recommends git=1:2.* \
    && rm -rf /var/lib/apt/lists/* \
    && git config --system --add safe.directory '*'

# Every dependency (and the build backend) at the version and hash the tests ran
# with: requirements.lock, refreshed by the command in docs/development.md.
COPY requirements.lock /opt/turncheck/
RUN pip install --require-hashes --only-binary=:all: -r /opt/turncheck/requirements.lock

COPY pyproject.toml README.md /opt/turncheck/
COPY src /opt/turncheck/src
RUN pip install --no-deps --no-build-isolation /opt/turncheck

ENTRYPOINT ["/usr/local/bin/turncheck", "action"]
