# Sourced, after Tools/apt-install.sh, by Tools/demo and Tools/test: installs LMDB's headers and library (Debian's
# liblmdb-dev) when pkg-config cannot find them.
if ! pkg-config --exists lmdb 2>/dev/null; then
    apt_install "LMDB" liblmdb-dev pkg-config
fi
