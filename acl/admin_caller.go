package acl

import "github.com/rmqio/rmq/remoting"

// AdminCaller reports whether req, from remote ("ip:port"), proves an admin
// account, as aclConfigRequiresAdmin's gate asks (a signature, or the
// account's own white address), and the AccessKey it names: for the
// broker's rmq-only requests that only an admin may make (clock control).
func (m *Manager) AdminCaller(remote string, req *remoting.Command) (string, bool) {
	return m.adminCaller(remote, req)
}
