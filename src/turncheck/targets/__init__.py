"""The app as the other side of a conversation (docs/targets.md): `http`, `python` and
`command` targets, starting and stopping the app, and the recording proxy its own model
calls go through."""
