"""One module per event flow of `turncheck action` (dispatched by `github.action`)."""
