#!/bin/bash
# Written by snoreloc (factory MachineConfig). Keeps the node's fixed internal address(es) on @INTERFACE@, so that
# kubelet and CRI-O, pinned to them by their 30-nodenet.conf drop-ins, keep their node IP whatever address the
# site network gives the node. NetworkManager runs it as: 30-snoreloc-internal-ip <interface> <action>.
# It acts only on the pre-up of its interface, and only adds what is missing, so running it twice changes nothing.
set -euo pipefail

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

add_to_connection() {
    local address="$1" family current
    family="$(family_of "$address")"
    current="$(nmcli --get-values "${family}.addresses" connection show "$CONNECTION_UUID")"
    if ! in_list "$current" "$address"; then
        nmcli connection modify "$CONNECTION_UUID" "+${family}.addresses" "$address"
    fi
}

add_to_device() {
    local address="$1" current
    # Not a pipe into grep -q: under pipefail, grep quitting early can fail the pipe and add a duplicate.
    current="$(ip -o addr show dev "$INTERFACE")"
    if ! grep -qF -- " $address " <<<"$current"; then
        if [[ "$(family_of "$address")" == ipv6 ]]; then
            ip addr add "$address" dev "$INTERFACE" nodad
        else
            ip addr add "$address" dev "$INTERFACE"
        fi
    fi
}

for address in "${ADDRESSES[@]}"; do
    if [[ -n "${CONNECTION_UUID:-}" ]]; then
        add_to_connection "$address"
    fi
    add_to_device "$address"
done
