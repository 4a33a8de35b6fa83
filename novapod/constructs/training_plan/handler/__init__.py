"""Lambda code of the TrainingPlan custom resource: `index` (entry points), `decisions`
(pure logic) and `offerings` (read-only search, shared with the CLI).

Deployed as an asset whose root holds this folder, so the handler strings are
`handler.index.on_event` and `handler.index.is_complete`; imports stay relative and
need only the Lambda runtime's boto3.
"""
