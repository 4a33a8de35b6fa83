"""Lambda code of the TrainingPlan custom resource: `index` (entry points), `decisions`
(pure logic), `extension` (pure logic of an extension), `claims` (pure decisions over
the purchase ledger's items), `marker` (tags of earlier versions) and `offerings`
(read-only search, shared with the CLI).

Deployed with the handler core (`provider.handler_code`), so the handler strings are
`novapod_lambda.training_plan.handler.index.on_event` and `...is_complete`; imports stay
relative (`from ...handler_core import ledger`) and need only the Lambda runtime's
boto3.
"""
