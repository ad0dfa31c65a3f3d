"""turncheck: multi-turn LLM evals on every pull request."""

__version__ = "0.1.0"
