"""Compliance with the cdk-nag packs: what novapod acknowledges and the table of it.

- `rules`: acknowledgements that follow from a rule about every resource of a kind (an
  inline policy written for exactly one role), applied at synth by `environment`;
- `report`: the Compliance section of docs/security.md, generated from the acknowledgements
  the synthesized assemblies record (`novapod compliance-report`; loads the CDK).
"""
