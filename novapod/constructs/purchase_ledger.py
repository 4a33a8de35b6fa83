"""The purchase ledger: the DynamoDB table where every purchase is claimed before its call.

Stateful like the buckets and the key (storage stack): retained, deletion-protected,
point-in-time recovery, encrypted with the environment's key, its logical ID pinned.
On demand: a few writes per deploy. The handlers' protocol is in
`novapod/constructs/handler_core/ledger.py`; `grant_purchases` is the only write
permission on the table anywhere in the app, and it is limited to the environment's own
items by `dynamodb:LeadingKeys` (the partition key; docs.aws.amazon.com/amazondynamodb/
latest/developerguide/specifying-conditions.html).
"""

from __future__ import annotations

from aws_cdk import Aws, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from novapod.constructs.acknowledge import acknowledge
from novapod.constructs.handler_core.ledger import PARTITION_KEY, SORT_KEY

# What a handler does with the table: strongly consistent reads, conditional puts, and
# the query of its environment's items (novapod purchases, adoption).
HANDLER_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query")
READ_ACTIONS = ("dynamodb:GetItem", "dynamodb:Query")
# A DynamoDB table under a customer managed key: the caller's requests use the key
# through DynamoDB ("How Amazon DynamoDB uses AWS KMS", docs.aws.amazon.com/amazondynamodb/
# latest/developerguide/encryption.howitworks.html; CDK's grantReadWriteData grants the
# same actions), so the grant is limited to calls DynamoDB makes (kms:ViaService).
KEY_ACTIONS = ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey")


class PurchaseLedger(Construct):
    """The table (`table`) and the grants its users need."""

    def __init__(self, scope: Construct, id_: str, *, key: kms.IKey, logical_id: str) -> None:
        super().__init__(scope, id_)
        self.key = key
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(
                name=PARTITION_KEY, type=dynamodb.AttributeType.STRING
            ),
            sort_key=dynamodb.Attribute(name=SORT_KEY, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED,
            encryption_key=key,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            deletion_protection=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        resource = self.table.node.default_child
        assert isinstance(resource, dynamodb.CfnTable)
        resource.override_logical_id(logical_id)
        acknowledge(
            self.table,
            "DynamoDBInBackupPlan",
            "Point-in-time recovery keeps continuous backups of the ledger for 35 days and "
            "deletion protection with Retain keeps the table itself; an AWS Backup plan "
            "(its vault, retention and copies) is the account's backup policy to choose, "
            "which this package does not impose.",
        )

    @property
    def table_name(self) -> str:
        return self.table.table_name

    def grant_purchases(self, principal: iam.IGrantable, environment: str) -> None:
        """Read and claim the purchases of `environment`, nothing else."""
        self._grant(principal, environment, HANDLER_ACTIONS, "PurchaseLedger")

    def grant_read(self, principal: iam.IGrantable, environment: str) -> None:
        self._grant(principal, environment, READ_ACTIONS, "ReadPurchaseLedger")

    def _grant(
        self, principal: iam.IGrantable, environment: str, actions: tuple[str, ...], sid: str
    ) -> None:
        grant_environment_items(
            principal,
            table=self.table,
            key=self.key,
            environment=environment,
            actions=actions,
            sid=sid,
        )


def grant_environment_items(
    principal: iam.IGrantable,
    *,
    table: dynamodb.ITable,
    key: kms.IKey,
    environment: str,
    actions: tuple[str, ...],
    sid: str,
) -> None:
    """`actions` on the items of a table keyed by environment, this environment's only,
    and the use of the key that encrypts the table, through DynamoDB only."""
    principal.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(
            sid=sid,
            actions=list(actions),
            resources=[table.table_arn],
            # ForAllValues holds for a request without the key too; Null makes sure
            # the request names a partition (GetItem, PutItem and Query always do).
            conditions={
                "ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [environment]},
                "Null": {"dynamodb:LeadingKeys": "false"},
            },
        )
    )
    principal.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(
            sid=f"{sid}Key",
            actions=list(KEY_ACTIONS),
            resources=[key.key_arn],
            conditions={"StringEquals": {"kms:ViaService": f"dynamodb.{Aws.REGION}.amazonaws.com"}},
        )
    )
