#!/usr/bin/env node
// What CDK's own diff engine (@aws-cdk/cloudformation-diff, the library behind
// `cdk diff`) says about pairs of CloudFormation templates, as JSON for novapod review.
//
// Usage: node diff.js < request.json
//   request: {"pairs": [{"base": PATH | null, "head": PATH | null}, ...]}
//   (null: the stack does not exist on that side; it is compared with an empty template)
// Prints {"engine": VERSION, "diffs": [...]}, one entry per pair, in request order.
//
// One process for every pair: loading the engine's AWS service spec (which property
// change replaces a resource) takes most of the run time.
// The engine's API: aws/aws-cdk-cli packages/@aws-cdk/cloudformation-diff (fullDiff,
// ResourceDifference.changeImpact, TemplateDiff.iamChanges / securityGroupChanges).
'use strict';

const fs = require('fs');
const cfnDiff = require('@aws-cdk/cloudformation-diff');

function readTemplate(file) {
  return file ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
}

function sorted(values) {
  return [...values].sort();
}

function resourceChanges(diff) {
  const out = [];
  diff.resources.forEachDifference((logicalId, change) => {
    if (!change.isDifferent) {
      return;
    }
    const properties = {};
    for (const [name, property] of Object.entries(change.propertyUpdates)) {
      // The engine's impact of this property's change: WILL_REPLACE when the service spec
      // says the property causes replacement ("yes"), MAY_REPLACE ("maybe", or a
      // replacement propagated through Ref/GetAtt), WILL_UPDATE, or NO_CHANGE for types
      // the spec does not know (custom resources).
      properties[name] = property.changeImpact || 'NO_CHANGE';
    }
    out.push({
      logical_id: logicalId,
      old_type: change.oldResourceType || null,
      new_type: change.newResourceType || null,
      impact: change.changeImpact,
      properties,
      other: sorted(Object.keys(change.otherChanges)),
    });
  });
  return out.sort((a, b) => (a.logical_id < b.logical_id ? -1 : a.logical_id > b.logical_id ? 1 : 0));
}

function targets(target) {
  return { not: target.not, values: sorted(target.values) };
}

function statementJson(statement) {
  return {
    sid: statement.sid || null,
    effect: statement.effect,
    actions: targets(statement.actions),
    resources: targets(statement.resources),
    principals: targets(statement.principals),
    condition: statement.condition === undefined ? null : statement.condition,
  };
}

function managedPolicyJson(attachment) {
  return { identity: attachment.identityArn, policy: attachment.managedPolicyArn };
}

function iamChanges(diff) {
  const iam = diff.iamChanges;
  return {
    broadened: iam.permissionsBroadened,
    statement_additions: iam.statements.additions.map(statementJson),
    statement_removals: iam.statements.removals.map(statementJson),
    managed_policy_additions: iam.managedPolicies.additions.map(managedPolicyJson),
    managed_policy_removals: iam.managedPolicies.removals.map(managedPolicyJson),
  };
}

function securityGroupChanges(diff) {
  const groups = diff.securityGroupChanges;
  const rules = (list) => list.map((rule) => rule.toJson());
  return {
    ingress_additions: rules(groups.ingress.additions),
    ingress_removals: rules(groups.ingress.removals),
    egress_additions: rules(groups.egress.additions),
    egress_removals: rules(groups.egress.removals),
  };
}

function keyedChanges(collection) {
  return collection ? sorted(collection.logicalIds) : [];
}

function diffPair(pair) {
  const diff = cfnDiff.fullDiff(readTemplate(pair.base), readTemplate(pair.head));
  return {
    resources: resourceChanges(diff),
    iam: iamChanges(diff),
    security_groups: securityGroupChanges(diff),
    outputs: keyedChanges(diff.outputs),
    parameters: keyedChanges(diff.parameters),
    other: sorted(
      ['awsTemplateFormatVersion', 'description', 'transform'].filter((k) => diff[k] && diff[k].isDifferent)
        .concat(keyedChanges(diff.conditions).map((id) => `Conditions.${id}`))
        .concat(keyedChanges(diff.mappings).map((id) => `Mappings.${id}`))
        .concat(keyedChanges(diff.metadata).map((id) => `Metadata.${id}`))
        .concat(keyedChanges(diff.unknown)),
    ),
  };
}

function engineVersion() {
  const manifest = require.resolve('@aws-cdk/cloudformation-diff/package.json');
  return JSON.parse(fs.readFileSync(manifest, 'utf8')).version;
}

function main() {
  const request = JSON.parse(fs.readFileSync(0, 'utf8'));
  const diffs = request.pairs.map(diffPair);
  process.stdout.write(JSON.stringify({ engine: engineVersion(), diffs }));
}

if (require.main === module) {
  main();
}
