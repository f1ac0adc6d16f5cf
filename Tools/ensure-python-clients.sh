# Sourced, after Tools/apt-install.sh, by Tools/test: installs the clients that are not Feedstore's, with which the
# interoperability tests check what Feedstore serves, when they are missing: nats-py (PyPI; reads what Feedstore writes
# to JetStream), websockets (PyPI; a live-query client), and a real browser for the demo page: Debian's chromium and
# chromium-driver, driven through WebDriver by selenium (PyPI); and Node, for the browser client module's own tests.
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    apt_install "a headless browser for the demo page's test" chromium chromium-driver
fi
missing=()
for module in nats:nats-py websockets:websockets selenium:selenium; do
    if ! python3 -c "import ${module%%:*}" >/dev/null 2>&1; then missing+=("${module#*:}"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
    if ! python3 -m pip --version >/dev/null 2>&1; then apt_install "pip, for ${missing[*]}" python3-pip; fi
    echo "Installing ${missing[*]} (the interoperability tests' clients) …" >&2
    python3 -m pip install -q "${missing[@]}" >/dev/null 2>&1 || python3 -m pip install -q --break-system-packages "${missing[@]}" >/dev/null
fi
# Node's test runner, for the browser client's module on its own.
if ! command -v node >/dev/null 2>&1; then
    apt_install "Node, whose test runner checks the browser client's module" nodejs
fi
