"""Managed jobs (`skyform jobs ...`): launch, the per-job controller process, its attempts,
plan revisions, log copies and cancelling. Recovery decisions come from skyform/recovery/."""
