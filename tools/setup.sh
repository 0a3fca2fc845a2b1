#!/usr/bin/env bash
# Set up a fresh Debian machine for probegen: system packages (tests only),
# kernel headers where BCC looks for them, and a virtual environment with
# probegen installed editable. Safe to run again; it skips what is done.
#   tools/setup.sh           venv + probegen
#   tools/setup.sh --test    also the compilers and tracers the tests use
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--test" ]; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    packages=(gcc g++ make binutils systemtap-sdt-dev bpftrace python3-bpfcc bpfcc-tools
              linux-headers-amd64 dwarves gcc-aarch64-linux-gnu gcc-i686-linux-gnu valgrind
              gcc-arm-linux-gnueabihf gcc-s390x-linux-gnu gcc-powerpc64le-linux-gnu
              gcc-mips64el-linux-gnuabi64 gcc-riscv64-linux-gnu debootstrap
              autoconf automake libtool python3-venv python3-pyelftools openjdk-17-jre-headless python3.11-minimal)
    missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    # BCC compiles against the running kernel's headers; this VM's kernel has
    # none, Debian's linux-headers-amd64 work once linked where BCC looks.
    modules="/lib/modules/$(uname -r)"
    if [ ! -e "$modules/build/include" ]; then
        build=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1)
        common=$(ls -d /usr/src/linux-headers-*-common 2>/dev/null | sort -V | tail -n 1)
        if [ -n "$build" ] && [ -n "$common" ]; then
            $SUDO mkdir -p "$modules"
            $SUDO ln -sfn "$build" "$modules/build"
            $SUDO ln -sfn "$common" "$modules/source"
        fi
    fi
    # Debian 13's tracers (bpftrace 0.23, BCC 0.31) in a root of their own, for
    # the tests that run generated scripts on both tracer generations (about a
    # minute and 700 MB, once per machine; the tests bind /proc, /sys and /dev).
    trixie="$HOME/.cache/probegen-tests/debian13"
    if [ ! -x "$trixie/usr/bin/bpftrace" ]; then
        rm -rf --one-file-system "$trixie"
        $SUDO debootstrap --variant=minbase --include=bpftrace,python3-bpfcc,linux-headers-amd64 \
            trixie "$trixie" http://deb.debian.org/debian >/dev/null
    fi
    if [ ! -e "$trixie$modules/build" ]; then  # BCC inside it: as above, in its own /usr/src
        (cd "$trixie/usr/src" && $SUDO mkdir -p "$trixie$modules" &&
         $SUDO ln -sfn "/usr/src/$(ls -d linux-headers-*-amd64 | sort -V | tail -n 1)" "$trixie$modules/build" &&
         $SUDO ln -sfn "/usr/src/$(ls -d linux-headers-*-common | sort -V | tail -n 1)" "$trixie$modules/source")
    fi
    extras=".[test]"
else
    extras="."
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -c tools/constraints.txt -e "$extras"
if [ "${1:-}" = "--test" ]; then
    # What the tests read from the network (real Debian binaries with notes,
    # the SARIF schema), once per machine: the tests themselves never download.
    PYTHONPATH=tests .venv/bin/python -m helpers.fetch
fi
