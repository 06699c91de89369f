// Package auth is ACL 2.0 of RocketMQ 5.3.3 (the auth/ module): users
// (username, password, type, status) and ACLs (a subject's policies of
// resource, actions, source IPs and decision), authentication of remoting
// requests and gRPC calls, authorization of what they touch, the admin
// codes 3001-3010 that manage both, and the migration from a 4.x
// plain_acl.yml.
//
// Where the Java keeps users and ACLs in RocksDB (config/users,
// config/acls), rmq keeps both in one JSON file, <storePathRootDir>/config/
// auth.json, rewritten whole and atomically (store.WriteFileAtomic) on every
// change: a change that touches both (deleteUser drops the user's ACL) is
// one write, and a kill at any point leaves the old or the new state.
// A Java store is not read in place; copyUser/copyAcl move it.
//
// The plain ACL of 4.9.8 (package acl) is independent and keeps working
// where aclEnable is set; 5.3.3 has no such key.
package auth
