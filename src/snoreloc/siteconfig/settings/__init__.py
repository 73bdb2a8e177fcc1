"""The site settings, one module each: schema fragment, typed model, checks, secrets, step and cost together.

`snoreloc.siteconfig.registry` lists them and assembles the schema, the loader, the checks and the run order.
"""
