"""A bundle's verdict: its two reports compared and judged by the job's conditions (the
action's `fail-on`, cost and calibration thresholds) through the one verdict view."""

from __future__ import annotations

from turncheck.compare.verdict import VerdictView, verdict_view
from turncheck.github.job import Job
from turncheck.github.trust import VERIFIED, Provenance
from turncheck.report.bundle import ReportBundle


def bundle_verdict(job: Job, bundle: ReportBundle, provenance: Provenance = VERIFIED
                   ) -> VerdictView:
    """The bundle's verdict; against a pooled base when our own job pooled it (a fork's
    claim of a pool is not believed: its base is compared as one run)."""
    pool = bundle.baseline.pool if bundle.baseline is not None and provenance.verified \
        else None
    return verdict_view(bundle.base, bundle.head, job.judgement(), renames=bundle.renames,
                        removed=bundle.removed, base_pool=pool)
