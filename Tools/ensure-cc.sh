# Sourced by Tools/test: installs a C compiler (Debian's gcc) when there is none; the power-loss
# tests build the write recorder (Tools/write-recorder) with it.
if ! command -v cc >/dev/null 2>&1; then
    echo "Installing gcc (the power-loss tests build a small C library) …" >&2
    sudo_cmd=""
    if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq gcc libc6-dev >/dev/null
fi
