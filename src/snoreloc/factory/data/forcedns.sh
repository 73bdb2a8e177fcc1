#!/usr/bin/env bash
# Written by snoreloc (render-machineconfig --node-dns): with NetworkManager's rc-manager=unmanaged, this
# dispatcher script writes /etc/resolv.conf from NetworkManager's own, with the node's dnsmasq as the first
# nameserver and the cluster domain first in the search list (the values the overrides file sets, if any).
overrides=/etc/default/sno_dnsmasq_configuration_overrides
if [ -f "$overrides" ]; then
    # shellcheck disable=SC1090
    . "$overrides"
fi
ip="${SNO_DNSMASQ_IP_OVERRIDE:-@HOST_IP@}"
domain="${SNO_CLUSTER_NAME_OVERRIDE:-@CLUSTER_NAME@}.${SNO_BASE_DOMAIN_OVERRIDE:-@BASE_DOMAIN@}"
case "${2:-}" in
    up|dhcp4-change|dhcp6-change|connectivity-change) ;;
    *) exit 0 ;;
esac
base=/run/NetworkManager/resolv.conf
[ -f "$base" ] || exit 0
tmp=$(mktemp /etc/.snoreloc-resolv.XXXXXX)
{
    printf 'search %s' "$domain"
    awk '$1 == "search" { for (i = 2; i <= NF; i++) printf " %s", $i }' "$base"
    printf '\nnameserver %s\n' "$ip"
    grep -v -e '^search' "$base" || true
} > "$tmp"
chmod 0644 "$tmp"
mv "$tmp" /etc/resolv.conf
