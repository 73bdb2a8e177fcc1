#!/usr/bin/env bash
# Written by snoreloc (render-machineconfig --node-dns): the node answers for its own cluster names.
# Run as ExecStartPre= of dnsmasq.service. The install-time values below are the defaults; a relocation sets
# SNO_CLUSTER_NAME_OVERRIDE, SNO_BASE_DOMAIN_OVERRIDE and SNO_DNSMASQ_IP_OVERRIDE in the overrides file, the
# same file and names as the Assisted Installer's 50-master-dnsmasq-configuration.
set -eu
overrides=/etc/default/sno_dnsmasq_configuration_overrides
if [ -f "$overrides" ]; then
    # shellcheck disable=SC1090
    . "$overrides"
fi
ip="${SNO_DNSMASQ_IP_OVERRIDE:-@HOST_IP@}"
domain="${SNO_CLUSTER_NAME_OVERRIDE:-@CLUSTER_NAME@}.${SNO_BASE_DOMAIN_OVERRIDE:-@BASE_DOMAIN@}"
mkdir -p /etc/dnsmasq.d
{
    for name in apps api-int api; do
        printf 'address=/%s.%s/%s\n' "$name" "$domain" "$ip"
    done
} > /etc/dnsmasq.d/single-node.conf
