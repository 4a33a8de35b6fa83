"""Lambda code of the environment's scheduled check: `index` (the entry point, `check`,
which EventBridge Scheduler invokes) and `decisions` (pure logic).

Deployed with the handler core (`provider.handler_code`), so the handler string is
`novapod_lambda.monitor.handler.index.check`; imports stay relative (`from
...handler_core import aws`) and need only the Lambda runtime's boto3 and the standard
library.
"""
