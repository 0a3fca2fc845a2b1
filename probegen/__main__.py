from probegen.cli import main

raise SystemExit(main())
