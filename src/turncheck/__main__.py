from turncheck.cli.main import main

raise SystemExit(main())
