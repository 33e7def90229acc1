"""Running a program: the launcher loop, node supervision, stop requests,
placement (this machine or a Ray cluster) and network isolation, run directories, resume checks, baselines and
summary.json."""
