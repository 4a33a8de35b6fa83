"""Lambda code of the BedrockModel custom resource: `index` (entry points), `decisions`
(pure logic) and `manifest` (finding a job's checkpoint in S3, shared with `novapod
launch`).

Deployed as an asset whose root holds this folder, like the TrainingPlan handler, so
the handler strings are `handler.index.on_event` and `handler.index.is_complete`;
imports stay relative and need only the Lambda runtime's boto3.
"""
