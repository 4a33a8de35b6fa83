"""The environment's monitor: `construct` (the scheduled check of the training plans and
instance groups into CloudWatch metrics, and its alerts; the handler lives in
`handler/`), `alerts` (the SNS topic and the EventBridge rules for HyperPod's events) and
`dashboard` (the CloudWatch dashboard)."""
