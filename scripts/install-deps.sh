#!/bin/sh
# install-deps.sh - installs what building and testing stacksnap needs on
# Debian 12, when something is missing. Called by the Makefile.
set -e
need=""
pkgconf_ok() { pkg-config --exists "$@" 2>/dev/null; }
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
pkgconf_ok libelf || need="$need libelf-dev"
pkgconf_ok libdw || need="$need libdw-dev"
pkgconf_ok liblzma || need="$need liblzma-dev"
pkgconf_ok libbpf || need="$need libbpf-dev"
command -v bpftool >/dev/null 2>&1 || [ -x /usr/sbin/bpftool ] || need="$need bpftool"
pkgconf_ok libdebuginfod || need="$need libdebuginfod-dev"
command -v debuginfod >/dev/null 2>&1 || need="$need debuginfod"
pkgconf_ok libunwind-ptrace libunwind-generic || need="$need libunwind-dev"
command -v gcc >/dev/null 2>&1 || need="$need gcc"
command -v g++ >/dev/null 2>&1 || need="$need g++"
command -v clang >/dev/null 2>&1 || need="$need clang"
command -v gdb >/dev/null 2>&1 || need="$need gdb"
command -v eu-stack >/dev/null 2>&1 || need="$need elfutils"
command -v python3 >/dev/null 2>&1 || need="$need python3"
command -v xz >/dev/null 2>&1 || need="$need xz-utils"
command -v objcopy >/dev/null 2>&1 || need="$need binutils"
command -v strace >/dev/null 2>&1 || need="$need strace"
perf version >/dev/null 2>&1 || need="$need linux-perf"
command -v setpriv >/dev/null 2>&1 || need="$need util-linux"
command -v bpftrace >/dev/null 2>&1 || need="$need bpftrace"
[ -x /usr/bin/time ] || need="$need time"
[ -d /usr/lib/debug/.build-id ] && dpkg -s libc6-dbg >/dev/null 2>&1 || need="$need libc6-dbg"
dpkg -s libclang-rt-14-dev >/dev/null 2>&1 || need="$need libclang-rt-14-dev"
[ -f /usr/lib/x86_64-linux-gnu/libc.a ] || need="$need libc6-dev"
pkgconf_ok lttng-ust || need="$need liblttng-ust-dev"
command -v lttng >/dev/null 2>&1 || need="$need lttng-tools"
command -v babeltrace2 >/dev/null 2>&1 || need="$need babeltrace2"
pkgconf_ok libprotobuf-c || need="$need libprotobuf-c-dev"
command -v protoc-c >/dev/null 2>&1 || need="$need protobuf-c-compiler"
pkgconf_ok zlib || need="$need zlib1g-dev"
pkgconf_ok libzstd || need="$need libzstd-dev"
pkgconf_ok capstone || need="$need libcapstone-dev"
pkgconf_ok libdeflate || need="$need libdeflate-dev"
command -v zstd >/dev/null 2>&1 || need="$need zstd"
command -v go >/dev/null 2>&1 || need="$need golang-go"
command -v chromium >/dev/null 2>&1 || need="$need chromium"
command -v chromedriver >/dev/null 2>&1 || need="$need chromium-driver"
command -v node >/dev/null 2>&1 || need="$need nodejs"
command -v ruby >/dev/null 2>&1 || need="$need ruby"
command -v php8.2 >/dev/null 2>&1 || need="$need php8.2-cli"
command -v php-fpm8.2 >/dev/null 2>&1 || [ -x /usr/sbin/php-fpm8.2 ] || need="$need php8.2-fpm"
command -v cgi-fcgi >/dev/null 2>&1 || need="$need libfcgi-bin"
command -v jcmd >/dev/null 2>&1 || need="$need openjdk-17-jdk-headless"
python3 -c 'import jsonschema' 2>/dev/null || need="$need python3-jsonschema"
[ -x /usr/bin/python3.11d ] || need="$need python3.11-dbg"
[ -f /usr/include/libiberty/demangle.h ] || need="$need libiberty-dev"
[ -x "$HOME/.cargo/bin/rustc" ] || command -v rustc >/dev/null 2>&1 || need="$need rustc"
[ -z "$need" ] && exit 0
echo "install-deps: installing:$need"
if [ "$(id -u)" != 0 ]; then
	echo "install-deps: not root; run: sudo apt-get install$need" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends $need >/dev/null 2>&1 || {
	apt-get -o DPkg::Lock::Timeout=600 update >/dev/null && apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends $need
}
