#!/bin/bash
# Written by snoreloc (factory MachineConfig). Keeps the node's fixed internal address(es) on @INTERFACE@, so that
# kubelet and CRI-O, pinned to them by their 30-nodenet.conf drop-ins, keep their node IP whatever address the
# site network gives the node. NetworkManager runs it as: 30-snoreloc-internal-ip <interface> <action>.
# It acts only on the pre-up of its interface, and only adds what is missing, so running it twice changes nothing.
# The device comes first and a failure on one address does not stop the others: kubelet needs the address on the
# device; the profile is a second line of defence, and NetworkManager may refuse it (e.g. ipv6.method=disabled).
set -uo pipefail

INTERFACE="@INTERFACE@"
ADDRESSES=(@ADDRESSES@)

if [[ "${1:-}" != "$INTERFACE" || "${2:-}" != "pre-up" ]]; then
    exit 0
fi

family_of() {
    if [[ "$1" == *:* ]]; then echo ipv6; else echo ipv4; fi
}

# True when the comma-separated list (as nmcli prints it) holds the address.
in_list() {
    local list=",${1// /},"
    [[ "$list" == *",$2,"* ]]
}

warn() {
    echo "30-snoreloc-internal-ip: $*" >&2
}

add_to_connection() {
    local address="$1" family current
    family="$(family_of "$address")"
    # -e no: otherwise nmcli escapes the colons of IPv6 addresses (fd00\:127\:\:10/64) and nothing ever matches.
    current="$(nmcli -e no --get-values "${family}.addresses" connection show "$CONNECTION_UUID")" || current=""
    if ! in_list "$current" "$address"; then
        nmcli connection modify "$CONNECTION_UUID" "+${family}.addresses" "$address" ||
            warn "could not add $address to profile $CONNECTION_UUID (it is on the device only)"
    fi
}

add_to_device() {
    local address="$1" current
    # Not a pipe into grep -q: under pipefail, grep quitting early can fail the pipe and add a duplicate.
    current="$(ip -o addr show dev "$INTERFACE")" || current=""
    if grep -qF -- " $address " <<<"$current"; then
        return 0
    fi
    if [[ "$(family_of "$address")" == ipv6 ]]; then
        ip addr add "$address" dev "$INTERFACE" nodad
    else
        ip addr add "$address" dev "$INTERFACE"
    fi
}

status=0
for address in "${ADDRESSES[@]}"; do
    if ! add_to_device "$address"; then
        warn "could not add $address to $INTERFACE"
        status=1
    fi
    if [[ -n "${CONNECTION_UUID:-}" ]]; then
        add_to_connection "$address"
    fi
done
exit "$status"
