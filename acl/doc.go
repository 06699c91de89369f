// Package acl is the broker's plain ACL, as rocketmq-acl 4.9.8 has it
// (PlainAccessValidator, PlainPermissionManager): accounts with an
// AccessKey and a SecretKey read from plain_acl.yml, the stock signature
// check (HmacSHA1 over the request's sorted ext field values and body,
// AclClientRPCHook), per-topic and per-group permissions, admin-only request
// codes, and white-listed remote addresses. The broker runs Check before it
// dispatches a request when aclEnable is true; the name server has no ACL,
// as in 4.9.8.
//
// The signing half (Content, Sign, SignRequest) is also what `rmq admin`
// uses to talk to an ACL-enabled broker.
//
// One file is managed: the stock default file (`$ROCKETMQ_HOME/conf/plain_acl.yml`,
// here the broker's aclFile). As the 4.9.8 broker, the .yml/.yaml files under
// `acl/` beside it (`$ROCKETMQ_HOME/conf/acl/`) are read too and merged: an
// AccessKey counts from the first file that has it (those files before the
// default one), every file's global white addresses apply. The admin
// requests change only the managed file.
package acl
