#!/bin/sh
# Recompile requirements.lock (hashed, wheels only, Python 3.11) from requirements.in + overrides.txt.
#
# pip-compile cannot do this: it has no way to override mitmproxy's pin of pyperclip==1.9.0, which
# exists only as a source archive, and images install wheels only. uv's --override can, so the lock
# is compiled with uv (any recent uv: `python3 -m venv /tmp/uvenv && /tmp/uvenv/bin/pip install uv`).
# Because the lock then breaks mitmproxy's declared pin, the Dockerfile installs it with --no-deps;
# the lock is the complete dependency closure, so nothing is missing.
#
# The sed keeps ruamel.yaml's dotted name: its 0.18.6 wheel is named `ruamel.yaml-0.18.6-...whl`,
# and the build's wheel copier (omnidr/images/_build.py) matches lock names to wheel file names.
set -eu
cd "$(dirname "$0")"
UV="${UV:-uv}"
SSL_CERT_FILE="${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}" "$UV" pip compile --native-tls --quiet \
    --python-version 3.11 --only-binary :all: --generate-hashes --override overrides.txt \
    --custom-compile-command "images/egress/lock.sh" -o requirements.lock requirements.in
sed -i 's/^ruamel-yaml==/ruamel.yaml==/' requirements.lock
# Check that every locked file is a wheel that pip can fetch with its hash, as the image build will.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"${PIP:-pip}" download --quiet --disable-pip-version-check --require-hashes --no-deps --only-binary=:all: \
    -r requirements.lock -d "$tmp"
echo "requirements.lock: $(grep -c '^[a-z].*==' requirements.lock) packages, all wheels"
