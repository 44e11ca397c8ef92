"""Converging clusters and their jobs on a planned change: provision, mark ready, run the job,
tear down. The one path every verb (apply, launch, exec) and the managed-job controller take."""
