# Sourced, after Tools/apt-install.sh, by Tools/test: installs nats-py (PyPI), the NATS client that is not Feedstore's, with
# which the interoperability test reads what Feedstore writes to JetStream, when it is missing.
if ! python3 -c "import nats" >/dev/null 2>&1; then
    if ! python3 -m pip --version >/dev/null 2>&1; then apt_install "pip, for nats-py" python3-pip; fi
    echo "Installing nats-py (the interoperability test's NATS client) …" >&2
    python3 -m pip install -q nats-py >/dev/null 2>&1 || python3 -m pip install -q --break-system-packages nats-py >/dev/null
fi
