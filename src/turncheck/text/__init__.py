"""Text utilities every layer may use: Markdown escaping, money formatting and the
sandboxed Jinja environment for user-supplied templates. They import nothing else
from turncheck."""
