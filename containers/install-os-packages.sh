#!/bin/sh
# The OS packages of the agent image, for either base the Containerfile is built on: UBI 9 (dnf, what ships) or
# Debian (apt-get, the local base `make image-test` builds on, since no registry image can be pulled there).
# Either way it leaves a Python 3.11 virtual environment at /opt/app-root, where the Containerfile installs the
# agent: the UBI Python image has one (sclorg/s2i-python-container, 3.11/Dockerfile.rhel9: `python3.11 -m venv
# ${APP_ROOT}`); on Debian this script makes it.
set -eu

# util-linux gives nsenter, mount and blkid; iputils gives ping (the gateway probe); iproute gives ip.
if command -v dnf >/dev/null 2>&1; then
  # libnmstate (the Python binding) is the preferred network backend; nmstatectl is the fallback.
  dnf install -y nmstate python3-libnmstate util-linux iputils iproute
  dnf clean all
  # python3-libnmstate is installed for the distribution's python3 (3.9). It is pure Python over the C library
  # (ctypes), so link just that package into the agent's Python 3.11 rather than the whole 3.9 site-packages.
  ln -s /usr/lib/python3.9/site-packages/libnmstate \
    "$(/opt/app-root/bin/python3.11 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/libnmstate"
elif command -v apt-get >/dev/null 2>&1; then
  # Debian packages neither nmstate nor libnmstate: this image has no network backend, which is enough for the
  # commands the image test runs (--version, validate) and not for a run on a node.
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends python3.11 python3.11-venv util-linux iputils-ping iproute2
  rm -rf /var/lib/apt/lists/*
  python3.11 -m venv /opt/app-root
else
  echo "install-os-packages.sh: neither dnf nor apt-get in the base image" >&2
  exit 1
fi
