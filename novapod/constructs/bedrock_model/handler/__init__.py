"""Lambda code of the BedrockModel custom resource: `index` (entry points), `decisions`
(pure logic), `claims` (pure decisions over the purchase ledger's items) and `manifest`
(finding a job's checkpoint in S3, shared with `novapod launch`).

Deployed with the handler core (`provider.handler_code`), so the handler strings are
`novapod_lambda.bedrock_model.handler.index.on_event` and `...is_complete`; imports
stay relative (`from ...handler_core import ledger`) and need only the Lambda runtime's
boto3.
"""
