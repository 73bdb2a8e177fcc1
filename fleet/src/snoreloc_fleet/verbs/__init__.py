"""The fleet owner's verbs, one module each (`HELP`, `add_arguments(parser)`, `run(args) -> int`), listed in
`snoreloc_fleet.cli.SUBCOMMANDS`. A verb parses its arguments, calls the layers below and says what happened: the
logic lives in `controller`, `render`, `checks`, `state`, `hub` and `resource`; what two verbs share is `common`."""
