package remoting

// ACL 2.0 administration request headers (codes 3001-3010, 5.3.3
// remoting/protocol/header/*UserRequestHeader, *AclRequestHeader; auth/
// serves them). Every field is optional on the wire: the processors answer
// a blank one as the stock AdminBrokerProcessor does.

// UserRequestHeader is the header of CREATE_USER, UPDATE_USER, DELETE_USER
// and GET_USER: the username.
type UserRequestHeader struct{ Username string }

func (r *UserRequestHeader) decodeHeader(h *Header) { r.Username = h.Str("username", false) }

// ListUsersRequestHeader is LIST_USER's.
type ListUsersRequestHeader struct{ Filter string }

func (r *ListUsersRequestHeader) decodeHeader(h *Header) { r.Filter = h.Str("filter", false) }

// AclRequestHeader is the header of CREATE_ACL, UPDATE_ACL and GET_ACL: the
// subject ("User:name").
type AclRequestHeader struct{ Subject string }

func (r *AclRequestHeader) decodeHeader(h *Header) { r.Subject = h.Str("subject", false) }

// DeleteAclRequestHeader is DELETE_ACL's.
type DeleteAclRequestHeader struct{ Subject, PolicyType, Resource string }

func (r *DeleteAclRequestHeader) decodeHeader(h *Header) {
	r.Subject = h.Str("subject", false)
	r.PolicyType = h.Str("policyType", false)
	r.Resource = h.Str("resource", false)
}

// ListAclsRequestHeader is LIST_ACL's.
type ListAclsRequestHeader struct{ SubjectFilter, ResourceFilter string }

func (r *ListAclsRequestHeader) decodeHeader(h *Header) {
	r.SubjectFilter = h.Str("subjectFilter", false)
	r.ResourceFilter = h.Str("resourceFilter", false)
}
