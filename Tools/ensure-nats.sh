# Sourced by Tools/demo and Tools/test: installs the NATS C client (Debian's libnats-dev, for the
# JetStream module) and nats-server (started by the tests on loopback) when they are missing.
if ! pkg-config --exists libnats 2>/dev/null || ! command -v nats-server >/dev/null 2>&1; then
    echo "Installing libnats-dev and nats-server (NATS JetStream) …" >&2
    sudo_cmd=""
    if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq libnats-dev nats-server pkg-config >/dev/null
fi
