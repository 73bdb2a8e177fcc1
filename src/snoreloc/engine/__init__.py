"""Ordering, the journal (status.json), fingerprints, resume, deadlines, plans and rollback."""
