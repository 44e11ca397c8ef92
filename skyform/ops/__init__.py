"""Use cases, one module per verb family: plan, apply/launch, exec, cluster jobs, stop/start,
down, check, storage; managed/ holds the managed-job controller and its verbs. The CLI calls
these; they compose lifecycle/, recovery/, stacks/, exec/ and state/."""
