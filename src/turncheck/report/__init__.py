"""The documents every view reads: the run report (evals, protocol cases, graded
sample files), the comparison and the action's bundle.

Engine writes them, compare/render/github read them; nothing here imports a layer
above `stats/` and `text/`.
"""
