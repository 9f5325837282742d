"""What a bench gets: the measuring fixture, trace counters, GPU facts, machine facts."""
