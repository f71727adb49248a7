from gputop.commands.main import run_main

run_main()
