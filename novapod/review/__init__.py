"""`novapod review`: what a change to the synthesized stacks does, for a pull request.

Compares two cloud assemblies (`cdk.out` of the base branch and of the head) stack by
stack with CDK's own diff engine (`engine.py`, `diff.js`), then adds what only novapod
knows (`semantics.py`): purchases, stateful replacements, security groups and
endpoints; what IAM grants (`iam.py`: broadenings, a new stack's or role's grants per
role, a plan's ARN that follows its purchase); what an in-place HyperPod update does to
each instance group (`groups.py`); and the training-plan schedules each assembly
records (`schedules.py`, drawn by `mermaid.py`). `report.build` gives the JSON document
(the contract); `markdown.render` renders it for a PR comment. No AWS credentials are
needed.
"""

from __future__ import annotations

from novapod.review.errors import ReviewError
from novapod.review.markdown import COMMENT_LIMIT, render
from novapod.review.report import FORMAT, GATES, build, tripped

__all__ = [
    "COMMENT_LIMIT",
    "FORMAT",
    "GATES",
    "ReviewError",
    "build",
    "render",
    "tripped",
]
