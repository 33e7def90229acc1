"""Running a program: the launcher loop, node supervision, stop requests,
hosts and network isolation, run directories, resume checks, baselines and
summary.json."""
