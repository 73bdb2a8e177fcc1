"""Every command line in the README and docs/ works as written: each one is run here, or named with the test that
runs it, or listed as an exception with the reason. A command added to the docs without a line here fails
`test_every_documented_command_is_accounted_for`, so the docs cannot drift from what the CLI accepts.

Every `snoreloc ...` line is also parsed by the real command-line parser (placeholders such as FILE filled in), so a
documented flag that does not exist, or a documented line that lacks a required one (the factory line once lacked
`--image`: exit 64), fails here whatever else covers it.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from snoreloc import errors
from snoreloc.cli import main
from snoreloc_sim.openshift import simulator

ROOT = Path(__file__).resolve().parents[1]
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
_ENV = r"(?:[A-Z_]+=(?:<[^>]*>\S*|\S+)\s+)*"
_PROGRAM = r"(?:snoreloc|make|\.venv/bin/[\w.-]+|kubectl|oc)"
COMMAND = re.compile(rf"^{_ENV}{_PROGRAM}\s+\S")


def _spans(text: str) -> list[str]:
    """Inline code spans of the prose (a span may wrap to the next line) and the lines of fenced blocks (with `\\`
    continuations joined and trailing `  # comments` dropped)."""
    found: list[str] = []
    prose: list[str] = []
    fenced = False
    lines = iter(text.splitlines())
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            prose.append(line)
            continue
        whole = line
        while whole.endswith("\\"):
            whole = whole[:-1].rstrip() + " " + next(lines, "").strip()
        found.append(whole.split("  #")[0].strip())
    found += [span.strip() for span in re.findall(r"`([^`]+)`", " ".join(prose))]
    return found


def documented() -> dict[str, str]:
    """Each command line in the docs, with the first file that shows it."""
    found: dict[str, str] = {}
    for doc in DOCS:
        for span in _spans(doc.read_text(encoding="utf-8")):
            if COMMAND.match(span):
                found.setdefault(span, doc.name)
    return found


@dataclass(frozen=True)
class Elsewhere:
    """Run by another test (checked to exist), or not runnable here (`test` empty) for `reason`."""

    reason: str
    test: str = ""  # "path::function"


RUN_HERE_OFFLINE = {  # run below, in-process, against files in a temporary directory: the exit code expected
    "snoreloc --help": 0,
    "snoreloc --version": 0,
    "snoreloc schema": 0,
    "snoreloc schema > docs/site-config.schema.json": 0,
    "snoreloc status --output json > store-0412.json": 1,  # the report a site carries back by hand (nothing ran)
    "snoreloc validate examples/site-config.yaml": 0,
    ".venv/bin/snoreloc validate examples/site-config.yaml": 0,
    ".venv/bin/snoreloc --help": 0,
    "snoreloc validate site-config.yaml": 0,
    "snoreloc validate --annotate FILE": 0,
    "snoreloc validate FILE [--annotate] [--output json]": 0,
    "snoreloc render-machineconfig --internal-ip 192.168.127.10/24 --image REGISTRY/snoreloc:TAG > mc.yaml": 0,
    "snoreloc render-machineconfig --internal-ip CIDR --image REF": 0,
    "snoreloc status": 1,  # nothing has run yet
    "snoreloc status --long": 1,
    "snoreloc status --output json": 1,
}
RUN_HERE_ON_THE_SIMULATOR = (  # run below, in this order, against one simulated cluster
    "snoreloc run --cluster-only",
    "snoreloc status --long",
    "snoreloc status",
    "snoreloc analyze",
    "snoreloc analyze --svg FILE",
    "snoreloc rollback",
)
_REAL_CLUSTER_FLAGS = ".venv/bin/python -m pytest -p no:xdist -m realcluster tests/cluster tests/sim"
_REAL_CLUSTER_LINES = (
    f"SNORELOC_TEST_KUBECONFIG=/path/to/kubeconfig SNORELOC_TEST_INGRESS=<router host>:443 {_REAL_CLUSTER_FLAGS}",
    f"SNORELOC_TEST_KUBECONFIG=/path/to/cluster-admin.kubeconfig SNORELOC_TEST_INGRESS=<router host>:443 "
    f"{_REAL_CLUSTER_FLAGS}",
    f"SNORELOC_TEST_KUBECONFIG=k.yaml {_REAL_CLUSTER_FLAGS}",
)
_REAL_HUB_FLAGS = ".venv/bin/python -m pytest -p no:xdist -m realhub tests/hub tests/fleetops"
_REAL_HUB_LINES = (
    f"SNORELOC_TEST_HUB_KUBECONFIG=/path/to/hub-admin.kubeconfig {_REAL_HUB_FLAGS}",
    f"SNORELOC_TEST_HUB_KUBECONFIG=hub.yaml {_REAL_HUB_FLAGS}",
)
_HUB = "tests/hubsim/test_hub_crds.py::test_snoreloc_sim_serve_hub_serves_until_sigterm"
_HUB_KUBECTL = "tests/hubsim/test_hub_kubectl.py::"
_FLEET = "tests/hub/"
_OPS = "tests/fleetops/"
_SUITE = "the test suite itself (CI's `.ci/run` runs it); running it from inside the suite would recurse"
_NODE = "tests/node/test_node_flow.py::test_node_flow_relocates_and_disarms"
_KUBECONFIG = (
    "tests/cluster/test_kubeconfig.py::test_the_kubeconfig_names_the_new_api_and_trusts_the_signer_of_its_certificate"
)
_OWNER = "tests/reliability/test_owner_secrets.py::test_the_owners_keys_and_the_hash_stay_where_they_belong"
ELSEWHERE: dict[str, Elsewhere] = {
    "snoreloc admin-access init --dir ~/store-042-admin --name store-042": Elsewhere(
        "the owner's credentials, then the run and the secret scans", _OWNER
    ),
    "snoreloc admin-access kubeconfig --dir ~/store-042-admin --server https://api.store-042.example.com:6443 "
    "--api-ca api-ca.crt --output store-042.kubeconfig": Elsewhere("after a run against the simulator", _OWNER),
    "snoreloc admin-access init --dir DIR": Elsewhere("the owner's credentials", _OWNER),
    "snoreloc admin-access kubeconfig --dir DIR --server URL --api-ca FILE --output FILE": Elsewhere(
        "after a run against the simulator", _OWNER
    ),
    "oc config new-admin-kubeconfig": Elsewhere("OpenShift's own command, named for what it does, not run here"),
    "make demo": Elsewhere(
        "`snoreloc demo` in a fresh .venv", "tests/node/test_node_flow.py::test_demo_command_runs_end_to_end"
    ),
    "snoreloc demo": Elsewhere(
        "the demo end to end", "tests/node/test_node_flow.py::test_demo_command_runs_end_to_end"
    ),
    "make test": Elsewhere(_SUITE),
    "make realhost": Elsewhere(_SUITE + "; needs root and the real host components"),
    "make image-test": Elsewhere("root, podman and debootstrap; `.ci/run` runs it after `make test`"),
    "make bench": Elsewhere(
        "minutes of benchmarks; the harness is run quick", "tests/bench/test_bench_smoke.py::test_relocation_benchmark"
    ),
    ".venv/bin/python bench/run_all.py --quick": Elsewhere(
        "the harness, quick", "tests/bench/test_bench_smoke.py::test_startup_benchmark"
    ),
    ".venv/bin/python bench/<name>.py --help": Elsewhere(
        "each benchmark's options", "tests/bench/test_bench_smoke.py::test_certificates_benchmark"
    ),
    ".venv/bin/python bench/relocation.py --speeds 5": Elsewhere(
        "a benchmark run (minutes)", "tests/bench/test_bench_smoke.py::test_relocation_benchmark"
    ),
    ".venv/bin/python bench/routes_scale.py": Elsewhere("a benchmark run (minutes at 20,000 routes)"),
    ".venv/bin/python bench/api_economy.py": Elsewhere(
        "a benchmark run (two relocations); its counting is tested",
        "tests/bench/test_bench_smoke.py::test_a_write_that_changes_nothing_is_not_a_needed_change",
    ),
    ".venv/bin/python bench/startup.py --relocation-routes -1": Elsewhere(
        "a benchmark run", "tests/bench/test_bench_smoke.py::test_startup_benchmark"
    ),
    ".venv/bin/python bench/baselines.py --speed 5": Elsewhere("a benchmark run (minutes: the re-enacted baselines)"),
    ".venv/bin/python bench/baselines.py --speed 5 --flows cro,ztpfw --oauth-publish 100": Elsewhere(
        "a benchmark run (minutes)"
    ),
    ".venv/bin/python -m pytest": Elsewhere(_SUITE),
    ".venv/bin/python -m pytest tests/reliability -n 2": Elsewhere(_SUITE),
    ".venv/bin/python -m pytest -q -n 0 tests/sim/test_seeds.py": Elsewhere(_SUITE),
    ".venv/bin/python -m pytest -q -n 2 tests/sim tests/hubsim": Elsewhere(_SUITE),
    ".venv/bin/python -m pytest -q -n 2 tests/siteconfig tests/engine/test_rollback_record.py "
    "tests/cluster/test_node_labels.py tests/reliability/test_manifest_claims.py": Elsewhere(_SUITE),
    ".venv/bin/python -m pytest -q -n 0 tests/hub/test_site_input_rules.py tests/hub/test_site_names.py "
    "tests/hub/test_site_wedge.py tests/hub/test_report_bounds.py tests/hub/test_site_credentials_quoted.py "
    "tests/hub/test_status_generated.py": Elsewhere(_SUITE),
    ".venv/bin/python -m pytest -q tests/hub/test_make_media.py -k exits_69": Elsewhere(_SUITE),
    '.venv/bin/python -m pytest -m "not realhost"': Elsewhere(_SUITE),
    **{
        line: Elsewhere(
            "a disposable real cluster; the same switch against a served simulator: `make test` runs "
            "tools/test_against_served_cluster.py"
        )
        for line in _REAL_CLUSTER_LINES
    },
    **{
        line: Elsewhere(
            "a disposable real hub; the same switch against a served hub simulator: `make test` runs "
            "tools/test_against_served_hub.py"
        )
        for line in _REAL_HUB_LINES
    },
    "snoreloc sim serve --hub": Elsewhere("serves until stopped", _HUB),
    "snoreloc sim serve --hub --token-cache-seconds 10": Elsewhere(
        "serves until stopped; `make test` runs it (tools/test_against_served_hub.py)", _HUB
    ),
    "snoreloc sim serve --hub --kubeconfig-out hub.yaml": Elsewhere("serves until stopped", _HUB),
    "snoreloc sim serve --speed X": Elsewhere(
        "serves until stopped", "tests/sim/test_protocol.py::test_kubeconfig_is_private_and_names_the_sim_context"
    ),
    "make kubectl-debian": Elsewhere(
        "unpacks Debian's kubectl 1.20 under .cache", _HUB_KUBECTL + "test_kubectl_is_debians_1_20"
    ),
    "kubectl --kubeconfig hub.yaml get ns": Elsewhere(
        "Debian's kubectl against the hub", _HUB_KUBECTL + "test_apply_get_and_server_side_apply"
    ),
    "kubectl --as": Elsewhere(
        "Debian's kubectl as a ServiceAccount", _HUB_KUBECTL + "test_kubectl_as_a_service_account_shows_its_scope"
    ),
    "kubectl get -w": Elsewhere(
        "Debian's kubectl watching", _HUB_KUBECTL + "test_get_watch_prints_later_objects_under_the_same_columns"
    ),
    "kubectl apply -k": Elsewhere(
        "Debian's kubectl with kustomize", _HUB_KUBECTL + "test_apply_k_of_a_controllers_manifests_and_a_reapply"
    ),
    ".venv/bin/python tools/gen_schema_check.py": Elsewhere(
        "the generator",
        "tests/siteconfig/test_compiled_schema.py::test_the_committed_modules_are_what_the_generator_writes",
    ),
    "snoreloc run": Elsewhere("the node flow (stick, network, kubelet) on fakes and the simulator", _NODE),
    "snoreloc validate": Elsewhere(
        "the verb named in prose; its documented forms with a file are run here",
        "tests/test_doc_commands.py::test_documented_offline_commands_run",
    ),
    "snoreloc plan": Elsewhere(
        "the node's plan", "tests/node/test_node_flow.py::test_plan_shows_the_node_before_the_cluster"
    ),
    "snoreloc seal": Elsewhere(
        "the node's seal, on fakes",
        "tests/host/test_seal.py::test_seal_writes_the_marker_disables_kubelet_and_clears_pods",
    ),
    "snoreloc collect-logs": Elsewhere(
        "reads the host's journal (journalctl)",
        "tests/host/test_collect_logs.py::test_tarball_holds_everything_useful_and_no_secret",
    ),
    "snoreloc make-media": Elsewhere(
        "writes the stick images", "tests/host/test_media.py::test_the_medium_carries_the_extra_manifests"
    ),
    "snoreloc make-media FILE --iso X.iso --fat X.img": Elsewhere(
        "xorriso and mtools", "tests/host/test_media.py::test_the_medium_carries_the_extra_manifests"
    ),
    "snoreloc make-media site-config.yaml --iso relocation-config.iso --fat relocation-config.img": Elsewhere(
        "xorriso and mtools", "tests/host/test_media.py::test_the_medium_carries_the_extra_manifests"
    ),
    "snoreloc kubeconfig": Elsewhere("needs the relocated API's name", _KUBECONFIG),
    "snoreloc kubeconfig --output FILE": Elsewhere("needs the relocated API's name", _KUBECONFIG),
    "snoreloc kubeconfig --output admin.kubeconfig": Elsewhere("needs the relocated API's name", _KUBECONFIG),
    "snoreloc kubeconfig --from ~/factory-admin.kubeconfig -o site.kubeconfig": Elsewhere("as above", _KUBECONFIG),
    "snoreloc kubeconfig --address 192.0.2.10:6443 -o site.kubeconfig": Elsewhere("as above", _KUBECONFIG),
    "snoreloc kubeconfig --from OLD --output NEW": Elsewhere(
        "as above",
        "tests/cluster/test_kubeconfig.py::test_a_kubeconfig_on_the_factory_name_gets_the_new_name_and_keeps_its_credentials",
    ),
    "snoreloc sim": Elsewhere("the simulator's verbs", "tests/sim/test_protocol.py::test_cel_report_prints_the_counts"),
    "snoreloc sim ...": Elsewhere(
        "the simulator's verbs", "tests/sim/test_protocol.py::test_cel_report_prints_the_counts"
    ),
    "snoreloc sim cel-report": Elsewhere(
        "the CEL coverage", "tests/sim/test_protocol.py::test_cel_report_prints_the_counts"
    ),
    "snoreloc sim serve --kubeconfig-out k.yaml": Elsewhere(
        "serves until stopped; `make test` serves it so in tools/test_against_served_cluster.py",
        "tests/sim/test_protocol.py::test_kubeconfig_is_private_and_names_the_sim_context",
    ),
    "kubectl --kubeconfig k.yaml get clusteroperators": Elsewhere(
        "Debian's kubectl against the simulator", "tests/sim/test_protocol.py::test_kubectl_works_unmodified"
    ),
    "snoreloc fleet install --kubeconfig hub.kubeconfig --hub-url https://api.hub.example.com:6443 [--hub-ca ca.pem] "
    "[--image IMAGE]": Elsewhere(
        "sets up a hub", _FLEET + "test_install.py::test_install_sets_up_the_hub_once_and_its_rbac_suffices"
    ),
    "kubectl apply -k fleet/src/snoreloc_fleet/deploy/": Elsewhere(
        "Debian's kubectl sets up a hub", _FLEET + "test_kubectl_sites.py::test_kubectl_apply_k_sets_up_the_hub"
    ),
    "kubectl apply -k deploy_bmc": Elsewhere(
        "Debian's kubectl builds the hub with its image server",
        _FLEET
        + "test_kubectl_sites.py::test_kubectl_kustomize_of_deploy_bmc_adds_the_image_server_to_what_install_applies",
    ),
    "kubectl get sites -n fleet-emea": Elsewhere(
        "Debian's kubectl on the hub",
        _FLEET + "test_kubectl_sites.py::test_kubectl_applies_sites_and_prints_their_columns",
    ),
    "kubectl get sites -l fleet.snoreloc.io/phase=Failed": Elsewhere(
        "Debian's kubectl on the hub", _FLEET + "test_kubectl_sites.py::test_kubectl_shows_an_invalid_sites_findings"
    ),
    "snoreloc fleet make-media store-0412 -n fleet-emea --fat store-0412.img [--iso store-0412.iso] "
    "[--out-dir DIR] [--timeout SECONDS]": Elsewhere(
        "a hub's Site",
        _FLEET + "test_make_media.py::test_the_fat_image_carries_the_site_config_and_the_reporting_kubeconfig",
    ),
    "snoreloc fleet import-report store-0412.json [more.json ...]": Elsewhere(
        "a hub", _FLEET + "test_import_report.py::test_a_carried_report_is_applied_and_an_older_one_skipped"
    ),
    "snoreloc fleet controller": Elsewhere(
        "runs until stopped", _FLEET + "test_controller_command.py::test_the_mounted_config_names_the_hub"
    ),
    "snoreloc fleet controller --image-server-address 0.0.0.0:8443 --image-url-base https://images.hub.example:8443 "
    "--image-server-cert tls.crt --image-server-key tls.key": Elsewhere(
        "runs until stopped; the controller with its image server drives a BMC end to end",
        _FLEET + "test_bmc_cycle.py::test_a_bmc_site_is_inserted_read_ejected_and_relocated_with_no_stick",
    ),
    "snoreloc fleet controller --kubeconfig K": Elsewhere(
        "runs until stopped", _FLEET + "test_controller_command.py::test_flags_win_and_the_own_ca_fills_in"
    ),
    "make demo-fleet": Elsewhere(
        "`snoreloc demo --fleet` in a fresh .venv",
        _FLEET + "test_fleet_demo.py::test_the_fleet_demo_validates_relocates_and_reports",
    ),
    "snoreloc demo --fleet": Elsewhere(
        "the fleet demo", _FLEET + "test_fleet_demo.py::test_the_fleet_demo_validates_relocates_and_reports"
    ),
    "snoreloc demo --fleet [N] [--nodes K]": Elsewhere(
        "the fleet demo", _FLEET + "test_fleet_demo.py::test_the_fleet_demo_validates_relocates_and_reports"
    ),
    "snoreloc demo --fleet [N] [--nodes K] [--bmc-sites B]": Elsewhere(
        "the fleet demo's BMC sites",
        _FLEET
        + "test_fleet_demo.py::test_the_fleet_demos_bmc_sites_are_inserted_read_ejected_and_relocated_with_no_stick",
    ),
    **{
        line: Elsewhere(
            "bulk validation",
            _OPS + "test_fleet_validate.py::test_a_valid_fleet_passes_and_junit_has_one_case_per_site",
        )
        for line in (
            "snoreloc fleet validate",
            "snoreloc fleet validate DIR",
            "snoreloc fleet validate sites.csv --template base.yaml",
            "snoreloc fleet validate DIR|INVENTORY [--template FILE]",
            "snoreloc fleet validate sites.csv --template base.yaml --unique-addresses "
            "--ship-by \"$(date -d '+60 days' +%F)\" --junit report.xml",
        )
    },
    **{
        line: Elsewhere(
            "bulk rendering", _OPS + "test_fleet_render.py::test_each_row_becomes_a_site_directory_the_agent_accepts"
        )
        for line in ("snoreloc fleet render", "snoreloc fleet render --template FILE --inventory FILE --out DIR")
    },
    **{
        line: Elsewhere("a hub's Sites", _OPS + "test_fleet_hub.py::test_status_selects_a_phase_on_the_hub")
        for line in (
            "snoreloc fleet status",
            "snoreloc fleet status -n NS --phase Failed",
            "snoreloc fleet status -n NS --phase Invalid",
            "snoreloc fleet status --silent-for 15m",
            "snoreloc fleet status -o json",
        )
    },
    "snoreloc fleet why SITE": Elsewhere("a hub's Site", _OPS + "test_fleet_hub.py::test_why_reads_one_site"),
    **{
        line: Elsewhere(
            "a relocated hub Site's handover",
            "tests/hub/test_admin_access.py::"
            "test_admin_kubeconfig_handed_over_once_relocated_0600_signed_by_the_medium_ca_and_no_key_anywhere",
        )
        for line in (
            "snoreloc fleet admin-kubeconfig store-042 -n fleet --output ./store-042.kubeconfig",
            "snoreloc fleet admin-kubeconfig store-042 -n fleet --print",
            "snoreloc fleet admin-kubeconfig store-042 -n fleet -o ./kc --kubeadmin-password ./pw",
        )
    },
    "snoreloc fleet report --html FILE": Elsewhere(
        "a hub's Sites", _OPS + "test_fleet_hub.py::test_report_writes_the_page_from_the_hub"
    ),
    "snoreloc fleet controller --metrics-port 8080": Elsewhere(
        "runs until stopped",
        _OPS + "test_fleet_hub.py::test_the_controller_serves_its_sites_by_phase_and_the_invalid_alert_fires",
    ),
    "snoreloc fleet import-report": Elsewhere(
        "the verb named in prose",
        _FLEET + "test_import_report.py::test_a_carried_report_is_applied_and_an_older_one_skipped",
    ),
    "snoreloc make-media DIR/<site>/site-config.yaml": Elsewhere(
        "xorriso and mtools", "tests/host/test_media.py::test_the_medium_carries_the_extra_manifests"
    ),
    "snoreloc validate FILE": Elsewhere(
        "the verb named in prose; its forms with a file are run here",
        "tests/test_doc_commands.py::test_documented_offline_commands_run",
    ),
    "snoreloc analyze --svg": Elsewhere(
        "the option named in prose; `analyze --svg FILE` is run here on the simulator",
        "tests/test_doc_commands.py::test_documented_cluster_commands_run_on_the_simulator",
    ),
    "kubectl apply -f DIR": Elsewhere(
        "Debian's kubectl applying rendered Sites to a hub",
        _FLEET + "test_kubectl_sites.py::test_kubectl_applies_sites_and_prints_their_columns",
    ),
    "kubectl get sites -o json --chunk-size=500": Elsewhere(
        "the comparison in the fleet status benchmark",
        _OPS + "test_fleet_bench_smoke.py::test_fleet_status_benchmark_lists_sites_on_the_hub_simulator",
    ),
    "snoreloc render-machineconfig --node-dns <factory cluster domain>": Elsewhere(
        "the option on a node's MachineConfig",
        "tests/host/test_machineconfig.py::test_node_dns_adds_dnsmasq_its_script_and_the_resolv_conf_dispatcher",
    ),
    "snoreloc make-media FILE --hub-report KUBECONFIG": Elsewhere(
        "xorriso and mtools",
        "tests/host/test_media.py::test_the_fleet_hubs_reporting_kubeconfig_rides_along_outside_the_digest",
    ),
    "kubectl delete secret site-NAME-binding -n NS": Elsewhere(
        "revokes a Site's credential on a hub",
        _FLEET + "test_controller.py::test_a_revoked_token_is_refused_and_replaced_only_on_a_new_request",
    ),
    'kubectl annotate site NAME touched="$(date +%s)"': Elsewhere(
        "nudges the controller on a hub",
        _FLEET + "test_controller_resilience.py::test_a_restarted_controller_converges_and_then_writes_nothing",
    ),
    ".venv/bin/python bench/relocation.py --shelved-days 200 --speeds 20 --repeats 2": Elsewhere(
        "a benchmark run (four relocations, about a minute)"
    ),
    ".venv/bin/python bench/hub_sites.py": Elsewhere("a benchmark run (a hub with many Sites)"),
    ".venv/bin/python bench/fleet_waves.py": Elsewhere(
        "a benchmark run (500 nodes, under a minute a repetition); tests/fleetops smoke-tests it small"
    ),
    **{
        line: Elsewhere(
            "a Wave on the hub", _FLEET + "test_waves.py::test_a_batch_failing_past_its_threshold_halts_the_wave"
        )
        for line in ("snoreloc fleet status --wave spring -n fleet-emea", "kubectl get waves")
    },
    **{
        line: Elsewhere(
            "Sites with a must-boot-by date on the hub",
            _FLEET + "test_fleet_shelf.py::test_the_hub_shows_each_sites_must_boot_by_date_soonest_first",
        )
        for line in ("snoreloc fleet status --shelf", "snoreloc fleet status --shelf -n fleet-emea --wave spring")
    },
    'kubectl patch wave spring -n fleet-emea --type merge -p \'{"spec":{"approvedBatches":1}}\'': Elsewhere(
        "the owner's approval (the test sends the same merge patch with the official client)",
        _FLEET + "test_waves.py::test_a_canary_failing_with_one_cause_halts_the_wave_and_approval_opens_the_next_batch",
    ),
    **{
        line: Elsewhere(
            "a benchmark run (200 BMC Sites against sushy-tools: about a minute; cold starts: minutes a pair)",
            "tests/fleetops/test_fleet_bmc_bench_smoke.py::"
            "test_fleet_bmc_benchmark_delivers_a_few_sites_and_compares_cold_starts",
        )
        for line in (
            ".venv/bin/python bench/fleet_bmc.py --sites 200 --cold-sites 0",
            ".venv/bin/python bench/fleet_bmc.py --sites 200 --hold --cold-sites 0",
            ".venv/bin/python bench/fleet_bmc.py --sites 0 --cold-sites 10000 --cold-repetitions 1",
            ".venv/bin/python bench/fleet_bmc.py --sites 0 --cold-sites 2000 --cold-repetitions 3",
        )
    },
    ".venv/bin/python bench/fleet_controller.py --sites 10000 --steady-seconds 60": Elsewhere(
        "a benchmark run (about five minutes a repetition); tests/bench smoke-tests it small"
    ),
    ".venv/bin/python bench/fleet_reports.py --nodes 500 --seconds 120": Elsewhere(
        "a benchmark run (500 nodes for two minutes); tests/bench smoke-tests it small"
    ),
    ".venv/bin/python bench/fleet_reports.py --nodes 500 --seconds 120 --repetitions 3": Elsewhere(
        "a benchmark run (500 nodes for two minutes, three times); tests/bench smoke-tests it small"
    ),
    ".venv/bin/python bench/fleet_reports.py --nodes 100 --seconds 60": Elsewhere(
        "a benchmark run (100 nodes for a minute); tests/bench smoke-tests it small"
    ),
    ".venv/bin/python bench/fleet_status.py --sites 10000 --repetitions 3": Elsewhere(
        "a benchmark run (10,000 Sites); tests/bench smoke-tests it small"
    ),
    **{
        line: Elsewhere(
            "the fleet in Git",
            _OPS + "test_fleet_git.py::test_the_tree_has_a_kustomization_per_site_and_no_plain_text_secret",
        )
        for line in (
            "snoreloc fleet render --git DIR",
            "snoreloc fleet render --template base.yaml --inventory sites.csv --git sites/emea -n fleet-emea "
            "--age-recipient RECIPIENT",
        )
    },
    **{
        line: Elsewhere(
            "Argo CD's plugin: its generate command runs `kubectl kustomize .` in the tree",
            _OPS + "test_fleet_git.py::test_the_argocd_plugin_builds_exactly_what_render_sites_makes",
        )
        for line in ("kubectl kustomize .", "kubectl kustomize")
    },
    **{
        line: Elsewhere(
            "installing Argo CD's plugin on a hub that runs Argo CD; the plugin itself is run in",
            _OPS + "test_fleet_git.py::test_the_argocd_plugin_builds_exactly_what_render_sites_makes",
        )
        for line in (
            "kubectl -n argocd create secret generic snoreloc-fleet-age-key --from-file=hub.key",
            "kubectl -n argocd apply -f fleet/src/snoreloc_fleet/deploy/argocd/cmp-plugin.yaml",
        )
    },
    "snoreloc fleet diff BASE HEAD": Elsewhere(
        "two revisions of a repository the test makes",
        _OPS + "test_fleet_git.py::test_fleet_diff_names_the_sticks_to_remake_and_the_sites_added_and_removed",
    ),
    "snoreloc fleet diff origin/main HEAD --tree sites/emea --kubeconfig hub.kubeconfig": Elsewhere(
        "a pull request's revisions against a hub",
        "tests/hub/test_fleet_diff_hub.py::test_a_change_to_a_site_in_progress_exits_75_and_one_to_a_ready_site_passes",
    ),
    "oc login https://api.<domain>:6443": Elsewhere("OpenShift's client, against a real relocated cluster"),
    "oc patch proxy/cluster": Elsewhere("OpenShift's client, against a real cluster (quoted from OpenShift's docs)"),
    "oc annotate -n openshift-kube-apiserver-operator secret kube-apiserver-to-kubelet-signer "
    "auth.openshift.io/certificate-not-after-": Elsewhere(
        "OpenShift's documented renewal of the kubelet CA (docs 'node certificates'), against a real cluster"
    ),
    "snoreloc sim serve --shelved-days 200": Elsewhere(
        "serves until stopped; the same option through the sim fixture in tests/node/test_shelf_life.py"
    ),
}


def test_every_documented_command_is_accounted_for() -> None:
    known = {*RUN_HERE_OFFLINE, *RUN_HERE_ON_THE_SIMULATOR, *ELSEWHERE}
    missing = {cmd: where for cmd, where in documented().items() if cmd not in known}
    assert missing == {}, "commands in the docs that no test runs and no exception names: add them to this file"
    assert known - set(documented()) == set(), "lines here that the docs no longer show: remove them"


def test_the_tests_named_for_commands_exist() -> None:
    for command, elsewhere in ELSEWHERE.items():
        assert elsewhere.reason, command
        if elsewhere.test:
            path, function = elsewhere.test.split("::")
            assert f"def {function}(" in (ROOT / path).read_text(encoding="utf-8"), f"{command}: {elsewhere.test}"


# Verbs and options named in a sentence rather than shown as a command line: accounted for above, not parsed.
PROSE = {
    "snoreloc fleet validate",
    "snoreloc fleet render",
    "snoreloc fleet render --git DIR",
    "snoreloc fleet import-report",
    "snoreloc analyze --svg",
    "snoreloc render-machineconfig --node-dns <factory cluster domain>",
}

FILLED = {  # placeholders and example names in the docs, filled with files of a temporary directory
    "FILE": "{tmp}/site-config.yaml",
    "site-config.yaml": "{tmp}/site-config.yaml",
    "examples/site-config.yaml": "{tmp}/site-config.yaml",
    "CIDR": "192.168.127.10/24",
    "SECONDS": "60",
    "REF": "registry.example.com/snoreloc:0.2.0",
    "REGISTRY/snoreloc:TAG": "registry.example.com/snoreloc:0.2.0",
    "$(date -d '+60 days' +%F)": "2099-01-01",
}


def _argv(command: str, tmp: Path) -> tuple[list[str], str | None]:
    """The arguments after `snoreloc`, placeholders filled; and the file a `>` redirect names, if any."""
    command, _, target = command.partition(" > ")
    words = shlex.split(command.replace("[", "").replace("]", ""))
    assert words[0].endswith("snoreloc"), command
    filled = [FILLED.get(word, word).format(tmp=tmp) for word in words[1:]]
    return filled, target or None


@pytest.mark.parametrize("command", [c for c in documented() if re.match(rf"^{_ENV}(\.venv/bin/)?snoreloc ", c)])
def test_every_documented_snoreloc_line_parses(command: str, tmp_path: Path) -> None:
    argv, _ = _argv(command.replace(" ...", ""), tmp_path)
    if argv[0] in ("sim", "demo") or argv[0].startswith("--") or len(argv) == 1 or command in PROSE:
        return  # the simulator's own parser (tests/sim); --help/--version exit in the parser; a verb named in prose
    try:
        main.build_parser(argv).parse_args(argv)
    except errors.UsageError as exc:
        pytest.fail(f"{command!r} is refused as a command line: {exc.message}")


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    """The examples directory as `make` leaves it: the example pull secret 0600 (git keeps no such mode)."""
    shutil.copytree(ROOT / "examples", tmp_path, dirs_exist_ok=True)
    (tmp_path / "pull-secret.json").chmod(0o600)
    return tmp_path


@pytest.mark.allow_subprocess
def test_make_sets_the_example_pull_secret_to_0600() -> None:
    """The setup every `make` target runs first makes the example's pull secret 0600, so the example validates
    without the warning every real secret file left open gets (the recipe as make would run it, not run)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    recipe = subprocess.run(["make", "-n", "-B", "-C", str(ROOT), ".venv/.installed"], capture_output=True,
                            text=True, timeout=60, check=True).stdout  # fmt: skip
    assert "chmod 600 examples/pull-secret.json" in recipe


def test_the_example_validates_without_a_warning_and_warns_when_its_secret_is_open(
    examples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main.main(["validate", str(examples / "site-config.yaml")]) == 0
    assert capsys.readouterr().err == "", "the example as make leaves it warns of nothing"
    (examples / "pull-secret.json").chmod(0o644)
    assert main.main(["validate", str(examples / "site-config.yaml")]) == 0
    assert "make it 0600 (chmod 600 pull-secret.json)" in capsys.readouterr().err


@pytest.mark.parametrize("command", list(RUN_HERE_OFFLINE))
def test_documented_offline_commands_run(
    command: str, examples: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(examples)
    argv, redirect = _argv(command, examples)
    if argv[0] == "status":
        argv += ["--root", str(examples / "root")]
    try:
        code = main.main(argv)
    except SystemExit as exc:  # --help and --version end in argparse
        code = int(exc.code or 0)
    out = capsys.readouterr().out
    assert code == RUN_HERE_OFFLINE[command], command
    if redirect == "mc.yaml":
        assert yaml.safe_load(out)["kind"] == "MachineConfig"
    if redirect == "docs/site-config.schema.json":  # what the doc says regenerates the committed schema does
        assert json.loads(out) == json.loads((ROOT / redirect).read_text(encoding="utf-8"))


@pytest.mark.simonly
@pytest.mark.parametrize("sim", [{"speed": 60.0}], indirect=True)  # the example's 5,400 s budget: 90 s of wall time
def test_documented_cluster_commands_run_on_the_simulator(
    sim: simulator.Simulator, examples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The shipped example as it is (its node and mirror set are the simulator's), run, shown and rolled back."""
    site = examples / "site-config.yaml"
    state = ["--state-dir", str(examples / "state")]
    cluster = ["--kubeconfig", str(sim.kubeconfig_path), *state, "--time-scale", str(sim.speed)]
    host, port = sim.router_address
    extra = {
        "run": [*cluster, "--site-config", str(site), "--ingress-endpoint", f"{host}:{port}"],
        "rollback": [*cluster, "--site-config", str(site)],
        "status": state,
        "analyze": state,
    }
    warned = (0, 2)  # done, or done with warnings (the report names them): both are a finished run
    expected = {"snoreloc run --cluster-only": warned, "snoreloc status --long": warned, "snoreloc status": warned}
    for command in RUN_HERE_ON_THE_SIMULATOR:
        argv, _ = _argv(command.replace("FILE", str(examples / "timeline.svg")), examples)
        code = main.main(argv + extra[argv[0]])
        out = capsys.readouterr().out
        assert code in expected.get(command, (0,)), f"{command}: {out}"
    assert (examples / "timeline.svg").read_text().startswith("<svg")
    assert "rolled back" in out
