"""What turncheck's check runs and commit statuses are called on GitHub."""

CHECK_NAME = "turncheck"
STATUS_CONTEXT = "turncheck"
VERDICT_EXTERNAL_ID = "turncheck-verdict"
"""Marks check runs turncheck created from a trusted run's own results. A fork's job
may be *named* `turncheck` too, but a fork's read-only token cannot create check runs."""
