try:
    from turncheck.cli.main import main
except KeyboardInterrupt:  # Ctrl-C before the command line is even read
    raise SystemExit(130) from None

raise SystemExit(main())
