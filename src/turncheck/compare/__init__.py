"""Compare a head run report with its base: transitions, verdicts, deltas and the cost
alert. The comparison's models are the documents of `turncheck.report`."""
