# Sourced, after Tools/apt-install.sh, by Tools/test: installs a C compiler (Debian's gcc) when there is none; the power-loss
# tests build the write recorder (Tools/write-recorder) with it.
if ! command -v cc >/dev/null 2>&1; then
    apt_install "the power-loss tests build a small C library" gcc libc6-dev
fi
