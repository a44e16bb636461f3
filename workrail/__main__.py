from workrail.cli import main

raise SystemExit(main())
