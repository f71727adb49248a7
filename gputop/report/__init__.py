"""Reports over what gputop recorded: per job and per user, from an agent recording or Prometheus."""
