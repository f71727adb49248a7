"""Pure analysis over the sampler's history: hints, saturation verdicts, the advisor's curve."""
