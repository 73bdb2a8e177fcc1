"""The site-config contract: its JSON Schema, loading with line numbers, and semantic checks."""
