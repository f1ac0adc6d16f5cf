# Sourced, after Tools/apt-install.sh, by Tools/demo and Tools/test: installs the NATS C client (Debian's libnats-dev, for the
# JetStream module), OpenSSL's libcrypto (libssl-dev, for the snapshots' SHA-256) and nats-server (started by the tests on
# loopback) when they are missing.
if ! pkg-config --exists libnats libcrypto 2>/dev/null || ! command -v nats-server >/dev/null 2>&1; then
    apt_install "NATS JetStream" libnats-dev libssl-dev nats-server pkg-config
fi
