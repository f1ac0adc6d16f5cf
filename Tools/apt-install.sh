# Sourced by the scripts that install what they need: `apt_install WHY PACKAGE…` installs Debian
# packages, through sudo when not root, saying why on stderr.
apt_install() {
    why="$1"
    shift
    echo "Installing $* ($why) …" >&2
    sudo_cmd=""
    if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "$@" >/dev/null
}
