"""Compare a head run report with its base: transitions, verdicts, deltas and the cost
alert. The comparison's models are the documents of `turncheck.report`."""

from turncheck.compare.comparison import compare_reports

__all__ = ["compare_reports"]
