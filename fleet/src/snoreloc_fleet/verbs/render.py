"""`snoreloc fleet render`: one template plus an inventory -> one site directory per site, or nothing at all.

Every row is rendered in memory first; any problem (an unknown column, a secret in a cell, a file found nowhere)
is printed with its inventory line and column and nothing is written (exit 65). Then each site directory is
written whole, and `inventory-trace.json` beside them lets `snoreloc fleet validate DIR` point back at the cells.
With `--sites DIR` the same rows become the hub's objects instead (`ops.sites`): `sites.yaml` and `secrets.yaml`.
With `--git DIR` they become a tree to commit for Argo CD (`render.gitops`): a kustomization per site and at the root,
the Secrets sealed with age for `--age-recipient` (`render.sealing`) or, with `--secret-store`, ExternalSecrets.
Exit codes: 0 written; 64 usage; 65 a row, a file or a recipient refused; 69 `age` missing; 77 a path refused.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from snoreloc.siblings import errors
from snoreloc_fleet.render import inventory, template, tree

HELP = "render one site-config per inventory row from a template (CSV or YAML inventory)"
OUTPUTS = ("out", "sites", "git")  # argument names of the directories this verb writes into (tests/reliability)
INPUTS = ("template", "inventory")  # argument names of the files it reads, which no output may be


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--template", required=True, type=pathlib.Path, help="the site-config with ${column} values")
    parser.add_argument(
        "--inventory", required=True, type=pathlib.Path, help="sites.csv or sites.yaml, one row per site"
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--out", type=pathlib.Path, help="the directory to write <site>/ into")
    target.add_argument(
        "--sites", type=pathlib.Path, metavar="DIR", help="write the hub's Site objects (sites.yaml, secrets.yaml)"
    )
    target.add_argument(
        "--git",
        type=pathlib.Path,
        metavar="DIR",
        help="write a tree to commit for Argo CD (kustomizations, sealed secrets)",
    )
    parser.add_argument("-n", "--namespace", default="default", help="with --sites or --git: the Sites' namespace")
    parser.add_argument(
        "--age-recipient",
        action="append",
        default=[],
        metavar="AGE1...",
        help="with --git: seal the secrets for this age recipient, the hub's (repeatable)",
    )
    parser.add_argument(
        "--secret-store",
        metavar="NAME",
        help="with --git: no sealed secrets; ExternalSecrets naming this ClusterSecretStore instead",
    )
    parser.add_argument(
        "--shared-secret",
        default="fleet-shared-files",
        help="with --sites or --git: the Secret of the files next to the template",
    )


def refuse(sites: list[template.Rendered]) -> None:
    """Raise ConfigError listing every site's problems when any site could not be rendered."""
    problems = [p for s in sites for p in s.problems]
    if problems:
        failed = sum(1 for s in sites if s.problems)
        raise errors.ConfigError(
            f"{failed} of {len(sites)} sites cannot be rendered; nothing was written",
            problems=problems,
            hint="Each line names the inventory cell and the template line; fix them and render again.",
        )


def run(args: argparse.Namespace) -> int:
    if args.git is not None and args.secret_store is None:
        from snoreloc_fleet.render import sealing  # noqa: PLC0415 (only with --git)

        sealing.check_recipients(args.age_recipient, "--age-recipient")
    tpl = template.load(args.template)
    rows = inventory.load(args.inventory)
    sites = template.render_all(tpl, rows, args.inventory.parent)
    refuse(sites)
    if args.sites is not None:
        return _write_sites(args, sites)
    if args.git is not None:
        return _write_git(args, sites)
    tree.prepare_out(args.out, (args.template, args.inventory))
    tree.check_targets(args.out, [s.row.name for s in sites])
    for site in sites:
        tree.write_site(args.out, site, tpl)
    tree.write_trace(args.out, tpl, sites)
    sys.stdout.write(
        f"rendered {len(sites)} site-configs into {args.out}; check them: snoreloc fleet validate {args.out}\n"
    )
    return int(errors.ExitCode.OK)


def _write_sites(args: argparse.Namespace, sites: list[template.Rendered]) -> int:
    import yaml  # noqa: PLC0415

    from snoreloc.siblings import safefile  # noqa: PLC0415
    from snoreloc_fleet.render import sites as hub_objects  # noqa: PLC0415 (only with --sites)

    site_objects, secrets = hub_objects.objects(sites, args.namespace, args.shared_secret)
    inputs = (args.template, args.inventory)
    tree.prepare_out(args.sites, inputs)
    for name in ("secrets.yaml", "sites.yaml"):  # both refused before either is written
        safefile.check(args.sites / name, inputs=inputs, shared_dir=safefile.NAMED_OUTPUT)
    tree.write_private(args.sites / "secrets.yaml", yaml.safe_dump_all(secrets, sort_keys=False))
    sites_text = yaml.safe_dump_all(site_objects, sort_keys=False)
    safefile.write(args.sites / "sites.yaml", sites_text, mode=0o644, inputs=inputs, shared_dir=safefile.NAMED_OUTPUT)
    sys.stdout.write(
        f"wrote {len(site_objects)} Sites to {args.sites / 'sites.yaml'} and {len(secrets)} Secrets to "
        f"{args.sites / 'secrets.yaml'} (0600); apply both: kubectl apply -f {args.sites}\n"
    )
    return int(errors.ExitCode.OK)


def _write_git(args: argparse.Namespace, sites: list[template.Rendered]) -> int:
    from snoreloc_fleet.render import gitops, sealing  # noqa: PLC0415 (only with --git)

    inputs = (args.template, args.inventory)
    gitops.prepare(args.git, [s.row.name for s in sites], inputs)  # before any secret is sealed
    recipients = list(args.age_recipient)
    if args.secret_store is not None:
        built = gitops.build(sites, args.namespace, args.shared_secret, store=args.secret_store)
    else:
        names = [s.row.name for s in sites]
        earlier = gitops.earlier_sealed(args.git, names)
        how_to_seal = gitops.Sealing(lambda t: sealing.seal(t, recipients), tuple(recipients), earlier)
        built = gitops.build(sites, args.namespace, args.shared_secret, sealing=how_to_seal)
    gone = gitops.write(args.git, built, inputs)
    how = f"ExternalSecrets of {args.secret_store}" if args.secret_store else "secrets sealed with age"
    removed = f"; removed {len(gone)} gone: {', '.join(gone[:5])}{' ...' if len(gone) > 5 else ''}" if gone else ""
    sys.stdout.write(
        f"wrote {len(sites)} sites to {args.git} ({how}){removed}; review and commit it: git -C {args.git} add -A .\n"
    )
    return int(errors.ExitCode.OK)
