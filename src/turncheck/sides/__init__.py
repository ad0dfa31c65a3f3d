"""A change's two sides: which suites a change touches (`changes`, `dependencies`,
`checkout`), what the user asked of the run (`options`), and the two-commit runner that
runs them at head and in a work tree of the base commit (`runner`)."""
