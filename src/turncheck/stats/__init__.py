"""Pure statistics for turncheck verdicts: no I/O, no report models.

- `rates`: Wilson intervals, pass^n / pass@n, a side's summary.
- `tests`: exact one-sided tests (Fisher's exact on pass counts, an exact
  permutation rank test on turn-of-pass), a clustered permutation test for scores.
- `multiplicity`: Holm's step-down adjustment, Tarone's screen and the discrete
  step-down min-p procedure `decide` uses.
- `power`: the exact power of an eval's verdict and the samples it needs.
- `verdicts`: the verdict tiers and the rule that picks one per case.
- `adaptive`: the stopping rule of `repeat: auto` (both sides together); `looks`: the test
  that stays exact after it (stratified by look).
- `agreement`: Cohen's κ (plain and quadratically weighted), bootstrap interval,
  within-one agreement, confusion matrix, TPR/TNR.

numpy and scipy are imported inside the functions that use them: every `turncheck action`
job imports this package through the comparison, and a shard job never compares.

See docs/statistics.md for the method in plain words.
"""
