# Sourced by Tools/demo and Tools/test: installs LMDB's headers and library (Debian's
# liblmdb-dev) when pkg-config cannot find them.
if ! pkg-config --exists lmdb 2>/dev/null; then
    echo "Installing liblmdb-dev (LMDB) …" >&2
    sudo_cmd=""
    if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq liblmdb-dev pkg-config >/dev/null
fi
