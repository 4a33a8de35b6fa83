"""The environment's monitor: a scheduled check of the training plans and instance groups
into CloudWatch metrics (the handler lives in `handler/`)."""
