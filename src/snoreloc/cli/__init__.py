"""The `snoreloc` command: argument parsing, rendering for people and for JSON, and exit codes. No logic."""
