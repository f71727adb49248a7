from gputop.commands.main import main

raise SystemExit(main())
