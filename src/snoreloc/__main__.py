"""Allow `python -m snoreloc`, which is how the container image and tests invoke the agent."""

from snoreloc.cli import main

raise SystemExit(main.main())
